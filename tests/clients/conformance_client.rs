//! The product's MCP client as a command for the official conformance suite's client
//! scenarios: `conformance client --command <this> ...` appends the scenario server's URL
//! and names the revision in `MCP_CONFORMANCE_PROTOCOL_VERSION`. Prints each step; exits 1
//! when the script could not run (the suite's own checks decide pass or fail).

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client <server-url>");
        std::process::exit(2);
    };
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok();
    match mirobody::testing::conformance_client(&url, version.as_deref()).await {
        Ok(steps) => steps.iter().for_each(|step| println!("{step}")),
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    }
}
