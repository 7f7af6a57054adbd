//! The `address_guard` fuzz target; its body (what each input goes through) is
//! `mirobody_fuzz::address_guard::run` (`fuzz/src/address_guard.rs`), which the end-to-end test
//! `fuzz_corpus` also replays every committed seed through.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mirobody_fuzz::address_guard::run(data));
