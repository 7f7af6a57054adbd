//! The `oauth` Lambda function: the routes of `RouteGroup::Oauth` in the route table.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run(mirobody::RouteGroup::Oauth).await
}
