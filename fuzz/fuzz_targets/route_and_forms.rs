//! The `route_and_forms` fuzz target; its body (what each input goes through) is
//! `mirobody_fuzz::route_and_forms::run` (`fuzz/src/route_and_forms.rs`), which the end-to-end test
//! `fuzz_corpus` also replays every committed seed through.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mirobody_fuzz::route_and_forms::run(data));
