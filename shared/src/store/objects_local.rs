//! The local backend of [`UploadObjects`]: files in a directory under the data
//! directory, sent by the client with one PUT to the local server itself.
//!
//! The URL is the capability: `/api/data/objects/<key>?expires=<epoch s>[&size=<bytes>]
//! &signature=<hex HMAC-SHA256(key, expires[, size])>`, signed with a random key kept in
//! the directory (created the first time, readable by the owner only), so it survives a
//! restart and needs no stored secret per upload; a forged, altered or expired URL is
//! refused. A URL that states a size takes a body of exactly that size (as S3 checks a
//! signed `Content-Length`). A body is streamed to a temporary file
//! and linked into place only when it is complete and only if no file is there yet, so
//! an import never opens half a file and a replayed PUT never replaces the file an
//! import reads. File names are the SHA-256 of the key, so no key ever becomes a path.
//! Never logs a key or any content.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::StoreError;
use super::objects::{BodyChunks, PutTarget, Received, StoredObject, UploadObjects};
use crate::observe::hex;

/// The local PUT route's path before the key (the route table's
/// `PUT /api/data/objects/{key}` row).
pub const LOCAL_OBJECTS_PATH: &str = "/api/data/objects/";

/// The signing key's file inside the objects directory.
const KEY_FILE: &str = "signing.key";

/// The local directory backend. Cheap to share behind an `Arc`.
pub struct LocalObjects {
    dir: PathBuf,
    origin: String,
    key: [u8; 32],
}

impl std::fmt::Debug for LocalObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalObjects").finish_non_exhaustive()
    }
}

fn unavailable(op: &'static str) -> impl Fn(std::io::Error) -> StoreError {
    move |error| {
        tracing::warn!(operation = op, kind = %error.kind(), "local objects: I/O failure");
        StoreError::Unavailable(format!("{op}: I/O failure"))
    }
}

impl LocalObjects {
    /// Opens (creating if needed) the directory `dir` and its signing key; URLs start
    /// with `origin` (the server's public origin).
    pub fn open(dir: impl AsRef<Path>, origin: &str) -> Result<LocalObjects, StoreError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(unavailable("open objects"))?;
        let path = dir.join(KEY_FILE);
        let key = match std::fs::read(&path) {
            Ok(bytes) if bytes.len() == 32 => {
                let mut key = [0u8; 32];
                key.copy_from_slice(&bytes);
                key
            }
            _ => {
                let mut key = [0u8; 32];
                getrandom::fill(&mut key)
                    .map_err(|_| StoreError::Unavailable("open objects: no randomness".into()))?;
                write_private(&path, &key).map_err(unavailable("open objects"))?;
                key
            }
        };
        Ok(LocalObjects {
            dir,
            origin: origin.trim_end_matches('/').to_string(),
            key,
        })
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(hex(&Sha256::digest(key.as_bytes())))
    }

    /// The signature of a URL for `key` until `expires_at`, of exactly `size` bytes if
    /// it states one (a URL without a size signs what it always did).
    fn mac(&self, key: &str, expires_at: u64, size: Option<u64>) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key).expect("any key");
        match size {
            None => mac.update(format!("{key}\n{expires_at}").as_bytes()),
            Some(size) => mac.update(format!("{key}\n{expires_at}\nsize {size}").as_bytes()),
        }
        mac
    }

    /// Whether `query` carries this key's signature and has not expired at `now`
    /// (compared in constant time): `Some` with the size it states, if any.
    fn admits(&self, key: &str, query: &str, now: u64) -> Option<Option<u64>> {
        let mut expires = None;
        let mut signature = None;
        let mut size = None;
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            match name.as_ref() {
                "expires" => expires = value.parse::<u64>().ok(),
                "signature" => signature = decode_hex(&value),
                // Unparseable: signed as nothing, so the signature fails.
                "size" => size = Some(value.parse::<u64>().unwrap_or(u64::MAX)),
                _ => {}
            }
        }
        let (expires, signature) = (expires?, signature?);
        (expires > now
            && self
                .mac(key, expires, size)
                .verify_slice(&signature)
                .is_ok())
        .then_some(size)
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(path, bytes)
}

#[async_trait]
impl UploadObjects for LocalObjects {
    async fn put_target(
        &self,
        key: &str,
        expires_at: u64,
        size: Option<u64>,
    ) -> Result<PutTarget, StoreError> {
        let signature = hex(&self.mac(key, expires_at, size).finalize().into_bytes());
        let segment: String = form_urlencoded::byte_serialize(key.as_bytes()).collect();
        let size = size.map(|n| format!("&size={n}")).unwrap_or_default();
        Ok(PutTarget {
            url: format!(
                "{}{LOCAL_OBJECTS_PATH}{segment}?expires={expires_at}{size}&signature={signature}",
                self.origin
            ),
            headers: Vec::new(),
            expires_at,
        })
    }

    async fn open(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        match tokio::fs::File::open(self.path(key)).await {
            Ok(file) => {
                let size = file
                    .metadata()
                    .await
                    .map_err(unavailable("open object"))?
                    .len();
                Ok(Some(StoredObject {
                    size,
                    body: Box::pin(file),
                }))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(unavailable("open object")(e)),
        }
    }

    async fn remove(&self, key: &str) -> Result<(), StoreError> {
        match tokio::fs::remove_file(self.path(key)).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(unavailable("remove object")(e))
            }
            _ => Ok(()),
        }
    }

    async fn receive(
        &self,
        key: &str,
        query: &str,
        now: u64,
        mut body: BodyChunks,
        max_bytes: u64,
    ) -> Result<Received, StoreError> {
        let Some(stated) = self.admits(key, query, now) else {
            return Ok(Received::Refused);
        };
        let limit = stated.map_or(max_bytes, |size| size.min(max_bytes));
        let op = "receive object";
        let path = self.path(key);
        if tokio::fs::try_exists(&path).await.unwrap_or(false) {
            // Checked again when the file is linked into place; this only spares
            // reading a body that cannot be kept.
            return Ok(Received::Exists);
        }
        let partial = path.with_extension(format!("partial-{}", hex(&random8())));
        let mut file = tokio::fs::File::create(&partial)
            .await
            .map_err(unavailable(op))?;
        let mut size: u64 = 0;
        let outcome = loop {
            match body.recv().await {
                None => break None,
                Some(Err(_)) => break Some(Received::Incomplete),
                Some(Ok(chunk)) => {
                    size = size.saturating_add(chunk.len() as u64);
                    if size > limit {
                        break Some(Received::TooLarge { limit });
                    }
                    if let Err(e) = write_chunk(&mut file, chunk).await {
                        drop(file);
                        let _ = tokio::fs::remove_file(&partial).await;
                        return Err(unavailable(op)(e));
                    }
                }
            }
        };
        let finished = match outcome {
            Some(refused) => Err(refused),
            // Fewer bytes than the URL states: not the file it was made for.
            None if stated.is_some_and(|stated| stated != size) => Err(Received::Incomplete),
            None => file.sync_all().await.map_err(|_| Received::Incomplete),
        };
        drop(file);
        match finished {
            Ok(()) => {
                // A link fails if the name exists (a rename would replace it): of two
                // PUTs to one URL only the first file stays.
                let linked = tokio::fs::hard_link(&partial, &path).await;
                let _ = tokio::fs::remove_file(&partial).await;
                match linked {
                    Ok(()) => Ok(Received::Stored { size }),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Received::Exists),
                    Err(e) => Err(unavailable(op)(e)),
                }
            }
            Err(refused) => {
                let _ = tokio::fs::remove_file(&partial).await;
                Ok(refused)
            }
        }
    }
}

async fn write_chunk(file: &mut tokio::fs::File, chunk: Bytes) -> std::io::Result<()> {
    file.write_all(&chunk).await
}

fn random8() -> [u8; 8] {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    bytes
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn temp_dir() -> PathBuf {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        std::env::temp_dir().join(format!("mirobody-objects-{}-{nanos}", std::process::id()))
    }

    async fn send(
        objects: &LocalObjects,
        key: &str,
        query: &str,
        now: u64,
        parts: &[&str],
    ) -> Received {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        for part in parts {
            tx.send(Ok(Bytes::from(part.to_string()))).await.unwrap();
        }
        drop(tx);
        objects.receive(key, query, now, rx, 10).await.unwrap()
    }

    #[tokio::test]
    async fn a_signed_url_stores_the_body_and_nothing_else_does() {
        let dir = temp_dir();
        let objects = LocalObjects::open(&dir, "http://127.0.0.1:1/").unwrap();
        let target = objects.put_target("uploads/abc", 1000, None).await.unwrap();
        assert!(
            target
                .url
                .starts_with("http://127.0.0.1:1/api/data/objects/uploads%2Fabc?")
        );
        let query = target.url.split_once('?').unwrap().1.to_string();

        assert_eq!(
            send(&objects, "uploads/abc", &query, 999, &["hello ", "file"]).await,
            Received::Stored { size: 10 }
        );
        let mut stored = objects.open("uploads/abc").await.unwrap().unwrap();
        let mut text = String::new();
        stored.body.read_to_string(&mut text).await.unwrap();
        assert_eq!((stored.size, text.as_str()), (10, "hello file"));

        // Expired, another key, an altered expiry or signature: refused.
        assert_eq!(
            send(&objects, "uploads/abc", &query, 1000, &["x"]).await,
            Received::Refused
        );
        assert_eq!(
            send(&objects, "uploads/other", &query, 1, &["x"]).await,
            Received::Refused
        );
        let later = query.replace("expires=1000", "expires=2000");
        assert_eq!(
            send(&objects, "uploads/abc", &later, 1, &["x"]).await,
            Received::Refused
        );
        assert_eq!(
            send(&objects, "uploads/abc", "expires=1000", 1, &["x"]).await,
            Received::Refused
        );
        // A replayed PUT never replaces the stored file.
        assert_eq!(
            send(&objects, "uploads/abc", &query, 1, &["other file"]).await,
            Received::Exists
        );
        let mut stored = objects.open("uploads/abc").await.unwrap().unwrap();
        let mut text = String::new();
        stored.body.read_to_string(&mut text).await.unwrap();
        assert_eq!(text, "hello file");
        // Over the cap: refused and nothing kept.
        let big = objects.put_target("uploads/big", 1000, None).await.unwrap();
        let big = big.url.split_once('?').unwrap().1.to_string();
        assert_eq!(
            send(&objects, "uploads/big", &big, 1, &["0123456789", "x"]).await,
            Received::TooLarge { limit: 10 }
        );
        assert!(objects.open("uploads/big").await.unwrap().is_none());

        // The key survives a reopen; removing twice is fine.
        let again = LocalObjects::open(&dir, "http://127.0.0.1:1").unwrap();
        assert_eq!(
            again.put_target("uploads/abc", 1000, None).await.unwrap(),
            target
        );
        again.remove("uploads/abc").await.unwrap();
        again.remove("uploads/abc").await.unwrap();
        assert!(again.open("uploads/abc").await.unwrap().is_none());
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "only the key file is left");
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A URL that states a size takes exactly that many bytes (as
    /// S3 checks a signed Content-Length); its size cannot be altered.
    #[tokio::test]
    async fn a_sized_url_takes_exactly_its_size() {
        let dir = temp_dir();
        let objects = LocalObjects::open(&dir, "http://127.0.0.1:1/").unwrap();
        let target = objects
            .put_target("uploads/sized", 1000, Some(4))
            .await
            .unwrap();
        let query = target.url.split_once('?').unwrap().1.to_string();
        assert!(query.contains("&size=4&"), "{query}");
        assert_eq!(
            send(&objects, "uploads/sized", &query, 1, &["abc"]).await,
            Received::Incomplete
        );
        assert_eq!(
            send(&objects, "uploads/sized", &query, 1, &["abc", "de"]).await,
            Received::TooLarge { limit: 4 }
        );
        for altered in [
            query.replace("size=4", "size=5"),
            query.replace("&size=4", ""),
            query.replace("size=4", "size=x"),
        ] {
            assert_eq!(
                send(&objects, "uploads/sized", &altered, 1, &["abcde"]).await,
                Received::Refused,
                "{altered}"
            );
        }
        assert!(objects.open("uploads/sized").await.unwrap().is_none());
        assert_eq!(
            send(&objects, "uploads/sized", &query, 1, &["ab", "cd"]).await,
            Received::Stored { size: 4 }
        );
        let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(
            leftovers.len(),
            2,
            "the key file and the object, no partial file"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
