//! The deployed place uploaded files wait in: a private S3 bucket. A client
//! sends the file with one PUT to a presigned URL (no other credential); the `import`
//! function reads it back as a stream when S3 reports the object created.
//!
//! Owns the S3 client and the presigning of uploads. Never collects an object in memory
//! (`open` hands out the GetObject body as a stream), never logs a key or any content;
//! errors name the operation only.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_sdk_s3::Client;
use aws_sdk_s3::config::RequestChecksumCalculation;
use aws_sdk_s3::presigning::PresigningConfig;

use super::{PutTarget, StoreError, StoredObject, UploadObjects};
use crate::config::Config;

/// How long a presigned PUT is valid when the caller asks for no particular time: long
/// enough to send a few hundred MB on a slow line, short enough that a leaked URL lapses.
#[allow(dead_code)] // merge: the upload flow (POST /api/data/uploads) picks its expiry with it.
pub(crate) const DEFAULT_PUT_VALIDITY: Duration = Duration::from_secs(15 * 60);

/// The longest a SigV4 presigned URL may be valid (S3's own limit, 7 days).
const MAX_PUT_VALIDITY: Duration = Duration::from_secs(7 * 24 * 3600);

/// Uploaded files in one S3 bucket.
pub(crate) struct S3Objects {
    client: Client,
    bucket: String,
}

/// Opens the bucket named by `MIROBODY_UPLOAD_BUCKET`, with the S3 endpoint override
/// (`AWS_ENDPOINT_URL_S3`, a local emulator such as moto, addressed path-style) when set.
pub(crate) fn open_s3_objects(
    config: &Config,
    shared: &SdkConfig,
) -> Result<S3Objects, StoreError> {
    let bucket = config.upload_bucket.clone().ok_or_else(|| {
        StoreError::Unavailable("no upload bucket configured (MIROBODY_UPLOAD_BUCKET)".into())
    })?;
    let timeouts = aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(3))
        // Until the response headers: a GetObject body is read afterwards, as a stream,
        // at the pace of the import.
        .operation_attempt_timeout(Duration::from_secs(10))
        .operation_timeout(Duration::from_secs(25))
        .build();
    let mut s3 = aws_sdk_s3::config::Builder::from(shared).timeout_config(timeouts);
    if let Some(url) = &config.s3_endpoint {
        s3 = s3.endpoint_url(url);
    }
    let s3 = s3
        // An emulator on one host:port has no bucket subdomains.
        .force_path_style(config.s3_endpoint.is_some())
        // No checksum of an empty body signed into a presigned PUT: the client's bytes
        // are not known when the URL is made.
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        // Each call a span of the request it was made for.
        .interceptor(super::dynamo::CallSpans)
        .build();
    Ok(S3Objects {
        client: Client::from_conf(s3),
        bucket,
    })
}

fn unavailable(op: &str, error: impl std::error::Error) -> StoreError {
    // The SDK's error display names the service error code, never the key.
    StoreError::Unavailable(format!(
        "{op}: {}",
        aws_sdk_s3::error::DisplayErrorContext(error)
    ))
}

/// A presigned request's validity from now until `expires_at` (epoch seconds), within
/// S3's limits, and when it actually lapses.
fn presigning_until(expires_at: u64, op: &str) -> Result<(PresigningConfig, u64), StoreError> {
    let now = SystemTime::now();
    let now_secs = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let validity = Duration::from_secs(expires_at.saturating_sub(now_secs))
        .clamp(Duration::from_secs(1), MAX_PUT_VALIDITY);
    let presigning = PresigningConfig::builder()
        .start_time(now)
        .expires_in(validity)
        .build()
        .map_err(|e| unavailable(op, e))?;
    Ok((presigning, now_secs.saturating_add(validity.as_secs())))
}

#[async_trait]
impl UploadObjects for S3Objects {
    async fn put_target(
        &self,
        key: &str,
        expires_at: u64,
        size: Option<u64>,
    ) -> Result<PutTarget, StoreError> {
        let (presigning, expires_at) = presigning_until(expires_at, "presign upload")?;
        let mut put = self.client.put_object().bucket(&self.bucket).key(key);
        if let Some(size) = size {
            // Signed: S3 refuses a body of any other length, so
            // a leaked or replayed URL stores at most this many bytes.
            put = put.content_length(i64::try_from(size).unwrap_or(i64::MAX));
        }
        let request = put
            .presigned(presigning)
            .await
            .map_err(|e| unavailable("presign upload", e))?;
        // Whatever was signed besides the host must be sent as signed (today: none,
        // the bucket encrypts by default and no content type is signed). The signed
        // Content-Length is not handed out: every client sends it from the body, and
        // a browser may not set it.
        let headers = request
            .headers()
            .filter(|(name, _)| {
                !name.eq_ignore_ascii_case("host") && !name.eq_ignore_ascii_case("content-length")
            })
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        Ok(PutTarget {
            url: request.uri().to_string(),
            headers,
            expires_at,
        })
    }

    async fn put_download(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        filename: &str,
        expires_at: u64,
    ) -> Result<Option<String>, StoreError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/gzip")
            .body(bytes.into())
            .send()
            .await
            .map_err(|e| unavailable("store download", e))?;
        let (presigning, _) = presigning_until(expires_at, "presign download")?;
        let request = self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .response_content_type("application/gzip")
            .response_content_disposition(format!("attachment; filename=\"{filename}\""))
            .presigned(presigning)
            .await
            .map_err(|e| unavailable("presign download", e))?;
        Ok(Some(request.uri().to_string()))
    }

    async fn open(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        let output = match self
            .client
            .get_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(output) => output,
            Err(error) if error.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                return Ok(None);
            }
            Err(error) => return Err(unavailable("read upload", error)),
        };
        let size = output
            .content_length()
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or_default();
        Ok(Some(StoredObject {
            size,
            body: Box::pin(output.body.into_async_read()),
        }))
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        self.client
            .delete_object()
            .bucket(&self.bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| unavailable("remove upload", e))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Against moto's S3 on loopback (the contract suite's moto server): presign, PUT
    //! the bytes over HTTP as a client would, read them back as a stream, remove.

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::config::Runtime;

    /// A fresh bucket named after `case` (tests may share one moto server) and what keeps
    /// moto running.
    async fn bucket(case: &str) -> (Option<std::sync::Arc<crate::testing::Moto>>, S3Objects) {
        let (endpoint, moto) = crate::store::contract::moto_endpoint();
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!("{case}-{}-{nanos}", std::process::id());
        let config = Config::from_vars(
            Runtime::Local,
            [
                ("MIROBODY_UPLOAD_BUCKET", name.as_str()),
                ("AWS_ENDPOINT_URL_S3", endpoint.as_str()),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        )
        .unwrap();
        let aws = crate::aws::AwsConfig::new();
        let objects = open_s3_objects(&config, aws.shared().await).unwrap();
        objects
            .client
            .create_bucket()
            .bucket(&name)
            .send()
            .await
            .expect("bucket created in moto");
        (moto, objects)
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[tokio::test]
    async fn a_download_is_stored_and_fetched_with_one_presigned_get() {
        let (_moto, objects) = bucket("objects-download").await;
        let content =
            bytes::Bytes::from((0..100_000u32).map(|i| (i % 7) as u8).collect::<Vec<_>>());
        let url = objects
            .put_download(
                "exports/abc",
                content.clone(),
                "mirobody-export-2026-12-01.json.gz",
                now() + 600,
            )
            .await
            .unwrap()
            .expect("S3 hands out a URL");
        assert!(url.contains("X-Amz-Signature="), "presigned");
        let response = web().get(&url).send().await.expect("the GET reaches moto");
        assert!(response.status().is_success(), "{}", response.status());
        let disposition = response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            disposition.contains("mirobody-export-2026-12-01.json.gz"),
            "{disposition}"
        );
        assert_eq!(response.bytes().await.unwrap(), content);
        // (moto does not check signatures, so a forged URL is not tested here: S3 refuses it.)
    }

    #[tokio::test]
    async fn a_presigned_put_lands_and_streams_back_then_is_removed() {
        let (_moto, objects) = bucket("objects-roundtrip").await;
        let key = "uploads/0f3c a+b";
        let expires_at = now() + DEFAULT_PUT_VALIDITY.as_secs();
        let target = objects.put_target(key, expires_at, None).await.unwrap();
        assert!(target.url.contains("X-Amz-Signature="), "presigned");
        assert!(
            target.url.contains("X-Amz-Expires=900") || target.url.contains("X-Amz-Expires=899"),
            "{}",
            target.url
        );
        assert!(target.expires_at.abs_diff(expires_at) <= 1);
        assert!(target.headers.is_empty(), "{:?}", target.headers);
        assert!(
            !target.url.to_ascii_lowercase().contains("checksum"),
            "{}",
            target.url
        );

        // 300 KB, more than one read of the stream.
        let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let client = web();
        let mut put = client.put(&target.url).body(content.clone());
        for (name, value) in &target.headers {
            put = put.header(name, value);
        }
        let response = put.send().await.expect("the PUT reaches moto");
        assert!(response.status().is_success(), "{}", response.status());

        let mut object = objects.open(key).await.unwrap().expect("the object");
        assert_eq!(object.size, content.len() as u64);
        let mut back = Vec::new();
        object.body.read_to_end(&mut back).await.unwrap();
        assert!(back == content, "the same bytes come back");

        objects.remove(key).await.unwrap();
        assert!(objects.open(key).await.unwrap().is_none());
        // Removing what is not there is not an error.
        objects.remove(key).await.unwrap();
    }

    /// A stated size is signed into the presigned PUT as its
    /// Content-Length (S3 refuses a body of another length; moto does not check
    /// signatures, so that refusal is S3's and is not tested here), and the client is
    /// not asked to send a header it sends anyway.
    #[tokio::test]
    async fn a_stated_size_is_signed_into_the_put() {
        let (_moto, objects) = bucket("objects-sized").await;
        let target = objects
            .put_target("uploads/sized", now() + 600, Some(5))
            .await
            .unwrap();
        let signed = target
            .url
            .split(['?', '&'])
            .find_map(|part| part.strip_prefix("X-Amz-SignedHeaders="))
            .expect("signed headers")
            .to_ascii_lowercase();
        assert!(signed.contains("content-length"), "{signed}");
        assert!(target.headers.is_empty(), "{:?}", target.headers);
        let response = web()
            .put(&target.url)
            .body("12345")
            .send()
            .await
            .expect("the PUT reaches moto");
        assert!(response.status().is_success(), "{}", response.status());
        assert_eq!(
            objects.open("uploads/sized").await.unwrap().unwrap().size,
            5
        );
        // Without a size nothing but the host is signed.
        let unsized_target = objects
            .put_target("uploads/unsized", now() + 600, None)
            .await
            .unwrap();
        assert!(
            unsized_target.url.contains("X-Amz-SignedHeaders=host&")
                || unsized_target.url.ends_with("X-Amz-SignedHeaders=host"),
            "{}",
            unsized_target.url
        );
    }

    #[tokio::test]
    async fn an_absent_object_is_none_and_an_absent_bucket_an_error() {
        let (_moto, objects) = bucket("objects-absent").await;
        assert!(objects.open("uploads/nothing").await.unwrap().is_none());
        let missing = S3Objects {
            client: objects.client.clone(),
            bucket: "mirobody-no-such-bucket".into(),
        };
        let error = missing.open("uploads/x").await.unwrap_err();
        assert!(
            matches!(&error, StoreError::Unavailable(why) if why.starts_with("read upload")
                && !why.contains("uploads/x")),
            "{error}"
        );
    }

    /// A plain HTTP client: reqwest takes its TLS crypto from the process, ring here.
    fn web() -> reqwest::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::new()
    }

    #[tokio::test]
    async fn without_a_bucket_setting_there_is_no_s3_backend() {
        let config = Config::from_vars(Runtime::Local, Vec::new()).unwrap();
        let aws = crate::aws::AwsConfig::new();
        let error = open_s3_objects(&config, aws.shared().await).err().unwrap();
        assert!(error.to_string().contains("MIROBODY_UPLOAD_BUCKET"));
    }
}
