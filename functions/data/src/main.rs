//! The `data` Lambda function: the routes of `RouteGroup::Data` in the route table.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run(mirobody::RouteGroup::Data).await
}
