//! The `import` Lambda function: S3 reports an uploaded file created in the upload
//! bucket (`uploads/` prefix), and the file is read as a stream and imported.

use std::sync::Arc;

use lambda_glue::ObjectCreated;
use mirobody::UploadProbe;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    lambda_glue::run_object_created(|config, _services| async move {
        // merge: `let importer = Arc::new(mirobody::Importer::new(&config, &_services)?);`
        // and the handler calls `importer.import_object(&object.key)` (a bad file is
        // recorded as a failed upload and answers Ok: no retry).
        let probe = Arc::new(UploadProbe::open(&config).await?);
        Ok(move |object: ObjectCreated| {
            let probe = probe.clone();
            async move {
                match probe.count_bytes(&object.key).await? {
                    Some(bytes) => tracing::info!(bytes, announced = object.size, "object read"),
                    // Already imported and removed (S3 may deliver an event twice).
                    None => tracing::warn!("the object is gone"),
                }
                Ok(())
            }
        })
    })
    .await
}
