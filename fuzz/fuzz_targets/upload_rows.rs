//! The `upload_rows` fuzz target; its body (what each input goes through) is
//! `mirobody_fuzz::upload_rows::run` (`fuzz/src/upload_rows.rs`), which the end-to-end test
//! `fuzz_corpus` also replays every committed seed through.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mirobody_fuzz::upload_rows::run(data));
