//! The product's vocabulary: what it keeps about a user (health readings, genotypes,
//! accounts and grants, OAuth clients and tokens, external MCP server records), as
//! plain data with the normalisations that define their identity.
//!
//! The ground floor: the store, the upload parsers and the tools all build on these
//! types. It imports nothing else from the crate, does no I/O and knows no storage
//! layout or wire format; how a record is kept is the store's business.

mod accounts;
mod genome;
mod health;
mod mcp_servers;
pub(crate) mod measures;
mod oauth;
mod uploads;

pub use accounts::{
    Account, ClientGrant, Delegation, Invitation, LoginState, LoginStatus, MailPurpose, MailToken,
    PersonalUrl, TokenState, UrlGrant,
};
pub use genome::{Genome, Variant};
#[allow(unused_imports)]
pub(crate) use genome::{
    MAX_CALL, chromosome_code, chromosome_name, pack_call, rsid_key, rsid_text, unpack_call,
};
pub use health::{DataPresence, Genotype, Original, Reading, ReadingValue};
pub(crate) use health::{FIRST_DAY, LAST_DAY, day_accepted};
pub use mcp_servers::{
    MAX_MCP_SERVERS, McpAuth, McpServerRecord, McpServerWrite, McpToolSnapshot, ToolControls,
};
pub use oauth::{AuthCode, OAuthClient, RefreshRecord, RefreshUse};
pub use uploads::{ReadingCounts, UploadFailure, UploadKind, UploadRecord, UploadStatus};
