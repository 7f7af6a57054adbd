//! E-mail that proves an address: the one way the product sends mail, and the
//! only messages it sends (a sign-up's confirmation link, a password reset link, a share
//! invitation). Built once per cold start (`Services::open`).
//!
//! Owns the [`MailSender`] trait and its two implementations: Amazon SES deployed
//! (`ses.rs`, `MIROBODY_MAIL_FROM`), a directory locally (`directory.rs`: one file per
//! message, which the end-to-end tests read), and the words of each message
//! ([`Letter`]). Must not: see the store, the tools or any health data (a message carries
//! a link and an address, nothing else: `tests/e2e/architecture.rs` checks the imports), or
//! log a message's link or recipient.

mod directory;
#[cfg(feature = "mail")]
mod ses;

use std::future::Future;
use std::pin::Pin;

pub use directory::MailDirectory;
#[cfg(feature = "mail")]
pub use ses::SesSender;

/// One plain-text message to one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub to: String,
    pub subject: String,
    pub text: String,
}

/// Why a message was not sent (the words never carry the recipient or the link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailError(pub String);

impl std::fmt::Display for MailError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MailError {}

pub type MailFuture<'a> = Pin<Box<dyn Future<Output = Result<(), MailError>> + Send + 'a>>;

/// Sends messages. Implementations: [`SesSender`] (deployed), [`MailDirectory`] (local).
pub trait MailSender: Send + Sync {
    fn send<'a>(&'a self, message: &'a Message) -> MailFuture<'a>;

    /// Where messages go, for the start-up banner (never a secret).
    fn describe(&self) -> String;
}

/// The messages the product sends: each a link on this deployment's origin, never a
/// reading, a genotype or any other health data.
pub(crate) enum Letter<'a> {
    /// After sign-up (or asked again): the link that confirms the address.
    Confirm { link: &'a str, hours: u64 },
    /// "Forgot password": the link that sets a new one.
    Reset { link: &'a str, minutes: u64 },
    /// A share waiting for the address's owner to accept it.
    Invitation {
        owner_email: &'a str,
        owner_confirmed: bool,
        link: &'a str,
    },
}

impl Letter<'_> {
    pub(crate) fn to(&self, to: &str) -> Message {
        let (subject, text) = match self {
            Letter::Confirm { link, hours } => (
                "Confirm your e-mail address for Mirobody".to_string(),
                format!(
                    "Someone (we hope you) created a Mirobody account with this address.\n\n\
                     To confirm that this address is yours, open this link within {hours} hours:\n\n\
                     {link}\n\n\
                     If it was not you, ignore this message: without the confirmation the account \
                     cannot receive anyone's shared data.\n"
                ),
            ),
            Letter::Reset { link, minutes } => (
                "Reset your Mirobody password".to_string(),
                format!(
                    "Someone (we hope you) asked to reset the password of the Mirobody account \
                     with this address.\n\n\
                     To choose a new password, open this link within {minutes} minutes (it works \
                     once):\n\n\
                     {link}\n\n\
                     Setting a new password signs the account out everywhere. If you did not ask, \
                     ignore this message: your password stays as it is.\n"
                ),
            ),
            Letter::Invitation {
                owner_email,
                owner_confirmed,
                link,
            } => {
                let note = if *owner_confirmed {
                    ""
                } else {
                    " (an address its account has not confirmed)"
                };
                (
                    "Someone wants to share their health data with you on Mirobody".to_string(),
                    format!(
                        "The Mirobody account {owner_email}{note} invited this address to see its \
                         health data through Mirobody.\n\n\
                         Nothing is shared until you accept: sign in (or create an account) with \
                         this address, confirm it, and accept the invitation here:\n\n\
                         {link}\n\n\
                         If you do not know who this is, ignore this message.\n"
                    ),
                )
            }
        };
        Message {
            to: to.to_string(),
            subject,
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_carry_a_link_and_no_more() {
        let message = Letter::Reset {
            link: "https://mirobody.example/console/reset?token=abc",
            minutes: 30,
        }
        .to("a@example.com");
        assert_eq!(message.to, "a@example.com");
        assert!(message.text.contains("/console/reset?token=abc"));
        assert!(message.text.contains("30 minutes"));
        let invitation = Letter::Invitation {
            owner_email: "owner@example.com",
            owner_confirmed: false,
            link: "https://mirobody.example/console/access",
        }
        .to("dr@clinic.example");
        assert!(invitation.text.contains("has not confirmed"));
    }
}
