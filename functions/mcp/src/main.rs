//! The `mcp` Lambda function: `POST/GET/OPTIONS /mcp` and `POST/OPTIONS /mcp/{secret}`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run(mirobody::RouteGroup::Mcp).await
}
