//! Uploaded files waiting for their import: the one interface both places a
//! file can wait in implement. Deployed, a private S3 bucket (the client PUTs to a
//! presigned URL); locally, a directory under the data directory (the client PUTs to
//! the local server itself, with a signed, expiring URL). The same client code works
//! against both.
//!
//! Owns the [`UploadObjects`] trait and its types. Implementations stream: an object is
//! never held whole in memory. Never logs an object key's user part or any content.

use std::pin::Pin;

use super::StoreError;
use async_trait::async_trait;

/// Where and how a client sends a file: one `PUT` of the bytes to `url` with `headers`,
/// before `expires_at` (epoch seconds). No other credential is needed: the URL is the
/// capability, so it is shown only to the upload's owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PutTarget {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub expires_at: u64,
}

/// The bytes of a stored object, read as a stream.
pub type ObjectBody = Pin<Box<dyn tokio::io::AsyncRead + Send>>;

/// A stored object: its size in bytes and its content as a stream.
pub struct StoredObject {
    pub size: u64,
    pub body: ObjectBody,
}

impl std::fmt::Debug for StoredObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredObject")
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// Where uploaded files wait until they are imported. Keys are opaque to callers
/// (the upload flow chooses them, e.g. `uploads/<upload id>`).
#[async_trait]
pub trait UploadObjects: Send + Sync {
    /// Where a client sends the bytes of object `key` with one PUT, valid until
    /// `expires_at` (epoch seconds). With `size`, the URL admits a body of exactly that
    /// many bytes and no other (S3 checks the signed
    /// `Content-Length`, the local server the signed `size`); without, any size up to
    /// the backend's own cap.
    async fn put_target(
        &self,
        key: &str,
        expires_at: u64,
        size: Option<u64>,
    ) -> Result<PutTarget, StoreError>;

    /// The object's content as a stream; `None` when there is no such object.
    async fn open(&self, key: &str) -> Result<Option<StoredObject>, StoreError>;

    /// Deletes the object; an absent object is not an error.
    async fn remove(&self, key: &str) -> Result<(), StoreError>;

    /// Keeps `bytes` as object `key` and answers a URL that downloads it with one GET
    /// until `expires_at`, saved as `filename` (an export larger than a Lambda
    /// response may carry). `None` where the server can answer with the bytes itself
    /// (the local directory: no response limit there).
    async fn put_download(
        &self,
        key: &str,
        bytes: bytes::Bytes,
        filename: &str,
        expires_at: u64,
    ) -> Result<Option<String>, StoreError> {
        let _ = (key, bytes, filename, expires_at);
        Ok(None)
    }

    /// The local server's side of a PUT to a [`PutTarget`] URL: checks the URL's
    /// capability (its query string) at `now`, then stores the body (at most
    /// `max_bytes`, and exactly the size the URL states if it states one) as object
    /// `key`, unless the object is already there: a stored file is never replaced, so a
    /// replayed PUT cannot change the file an import is reading. Backends whose PUTs go
    /// elsewhere (S3) refuse.
    async fn receive(
        &self,
        key: &str,
        query: &str,
        now: u64,
        body: BodyChunks,
        max_bytes: u64,
    ) -> Result<Received, StoreError> {
        let _ = (key, query, now, body, max_bytes);
        Ok(Received::Refused)
    }
}

/// A request body as it arrives, chunk by chunk (bounded: the sender waits while the
/// receiver writes). An error ends the body unfinished (the client went away or idled).
pub type BodyChunks = tokio::sync::mpsc::Receiver<std::io::Result<bytes::Bytes>>;

/// What [`UploadObjects::receive`] did with a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// Stored whole: the object now holds `size` bytes.
    Stored { size: u64 },
    /// The URL is forged, altered or expired (or this backend takes no PUTs).
    Refused,
    /// The body passed `limit` bytes (`max_bytes`, or the size the URL states);
    /// nothing was kept.
    TooLarge { limit: u64 },
    /// The body ended early (an error, an idle client, or fewer bytes than the URL
    /// states); nothing was kept.
    Incomplete,
    /// The object is already stored (an earlier PUT to the same URL); nothing was kept.
    Exists,
}
