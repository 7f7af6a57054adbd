//! The upload parsers (E4): health readings as JSON and as CSV, and genotype raw files.
//! Every input goes through all three.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    mirobody::fuzzing::upload_health_json(data);
    mirobody::fuzzing::upload_health_csv(data);
    mirobody::fuzzing::upload_genotype(data);
});
