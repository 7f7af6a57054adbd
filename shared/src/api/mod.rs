//! The REST API's handlers and the typed cores behind them: accounts, sessions and
//! shares (`accounts.rs`), the OAuth clients a user authorised (`grants.rs`), the links that prove an address (`mailed_links.rs`), the data
//! API (`data.rs`), uploads of whole files (`uploads.rs`: the records and the local PUT;
//! the import runner is `imports/`), export and deletion of a whole account
//! (`whole_account.rs`).
//!
//! Owns what each JSON endpoint takes and answers. A handler returns
//! `Result<Success<…>, ApiError>` (`http::Success`: a status and the data, rendered once
//! in the REST envelope `{"code": 0, "msg": "ok", "data": …}`); one that must answer
//! something else (the export's file or its redirect) returns a `Response` and says so.
//! The typed cores beside the handlers are what the console calls. Must not: render
//! an envelope itself, or be imported by the parts it stands on (`imports`, `external`,
//! `identity`, `store`).

pub(crate) mod accounts;
pub(crate) mod data;
pub(crate) mod grants;
pub(crate) mod mailed_links;
pub(crate) mod registry;
pub(crate) mod uploads;
pub(crate) mod whole_account;
