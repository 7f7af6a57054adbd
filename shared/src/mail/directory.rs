//! Local mail: every message becomes one file in a directory (`<data
//! dir>/mail` unless `MIROBODY_MAIL_DIR` says otherwise), which `mirobody-local` prints
//! at start-up, so that the whole e-mail flow works offline; the end-to-end tests read it.
//!
//! A file is written under a temporary name and renamed, so a reader never sees half a
//! message. The format is a plain RFC 5322 message (headers, a blank line, the text).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{MailError, MailFuture, MailSender, Message};

/// Writes each message to a file of its own under `dir`.
pub struct MailDirectory {
    dir: PathBuf,
    from: String,
    sequence: AtomicU64,
}

impl MailDirectory {
    /// Creates the directory if needed.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, MailError> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir)
            .map_err(|e| MailError(format!("cannot create the mail directory: {e}")))?;
        Ok(MailDirectory {
            dir,
            from: "Mirobody <no-reply@mirobody.localhost>".to_string(),
            sequence: AtomicU64::new(0),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file_name(&self) -> String {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = self.sequence.fetch_add(1, Ordering::Relaxed);
        format!("{nanos:020}-{}-{n:04}.eml", std::process::id())
    }
}

/// A header value on one line (a recipient or subject with a line break would add
/// headers).
fn one_line(value: &str) -> String {
    value.chars().filter(|c| !c.is_control()).collect()
}

impl MailSender for MailDirectory {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a> {
        Box::pin(async move {
            let text = format!(
                "From: {}\r\nTo: {}\r\nSubject: {}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{}",
                self.from,
                one_line(&message.to),
                one_line(&message.subject),
                message.text
            );
            let name = self.file_name();
            let partial = self.dir.join(format!(".{name}.partial"));
            let done = self.dir.join(name);
            tokio::task::spawn_blocking(move || {
                std::fs::write(&partial, text)?;
                std::fs::rename(&partial, &done)
            })
            .await
            .map_err(|_| MailError("the mail writer stopped".into()))?
            .map_err(|e| MailError(format!("cannot write to the mail directory: {e}")))
        })
    }

    fn describe(&self) -> String {
        format!("directory {}", self.dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_message_is_a_file_of_its_own() {
        let dir = std::env::temp_dir().join(format!("mirobody-mail-{}", std::process::id()));
        let mail = MailDirectory::open(&dir).unwrap();
        for n in 0..2 {
            let message = Message {
                to: "a@example.com\r\nBcc: b@example.com".into(),
                subject: format!("hello {n}"),
                text: "text".into(),
            };
            mail.send(&message).await.unwrap();
        }
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(files.len(), 2);
        for file in files {
            let text = std::fs::read_to_string(file.path()).unwrap();
            assert!(
                text.contains("To: a@example.comBcc: b@example.com\r\n"),
                "{text}"
            );
            assert!(!text.contains("\r\nBcc:"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
