//! The upload parsers (E4): health readings as JSON and as CSV, genotype raw files, and
//! Apple Health exports (XML and zip). Every input goes through all of them.

/// The body of the `upload_rows` fuzz target: one input.
pub fn run(data: &[u8]) {
    mirobody::fuzzing::upload_health_json(data);
    mirobody::fuzzing::upload_health_csv(data);
    mirobody::fuzzing::upload_genotype(data);
    mirobody::fuzzing::upload_apple_health(data);
}
