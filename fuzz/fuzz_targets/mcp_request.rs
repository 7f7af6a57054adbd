//! The `mcp_request` fuzz target; its body (what each input goes through) is
//! `mirobody_fuzz::mcp_request::run` (`fuzz/src/mcp_request.rs`), which the end-to-end test
//! `fuzz_corpus` also replays every committed seed through.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mirobody_fuzz::mcp_request::run(data));
