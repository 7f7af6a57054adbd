//! The `import` Lambda function: S3 reports an uploaded file created in the upload
//! bucket (`uploads/` prefix), and `Importer::import_object` reads it as a stream and
//! imports it. A bad file is recorded as a failed upload and answers Ok (no retry);
//! only a store or S3 failure fails the invocation, so Lambda retries it (safe: an
//! upload is imported once, and rows never duplicate). Each import that ran prints its
//! metrics (EMF, through the glue).

use std::sync::Arc;

use lambda_glue::ObjectCreated;
use mirobody::ImportError;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run_object_created(|_config, services| async move {
        let importer = Arc::new(services.importer());
        Ok(move |object: ObjectCreated| {
            let importer = importer.clone();
            async move {
                match importer.import_object(&object.key).await {
                    Ok(summary) => Ok(summary),
                    // No live upload names this object (expired, deleted with its
                    // account, or never created): the importer deleted it.
                    // Nothing to retry.
                    Err(ImportError::UnknownObject) => {
                        tracing::warn!("an object no upload names");
                        Ok(None)
                    }
                    // Already imported and removed (S3 may deliver an event twice).
                    Err(ImportError::MissingObject) => {
                        tracing::warn!("the object is gone");
                        Ok(None)
                    }
                    Err(error @ ImportError::Store(_)) => Err(error.into()),
                }
            }
        })
    })
    .await
}
