//! The `jwt_verify` fuzz target; its body (what each input goes through) is
//! `mirobody_fuzz::jwt_verify::run` (`fuzz/src/jwt_verify.rs`), which the end-to-end test
//! `fuzz_corpus` also replays every committed seed through.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mirobody_fuzz::jwt_verify::run(data));
