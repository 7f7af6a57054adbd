//! The `personal` Lambda function: the routes of `RouteGroup::Personal` in the route table.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run(mirobody::RouteGroup::Personal).await
}
