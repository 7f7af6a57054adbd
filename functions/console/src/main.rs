//! The `console` Lambda function: the routes of `RouteGroup::Console` in the route table
//! (the web console's pages).

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run(mirobody::RouteGroup::Console).await
}
