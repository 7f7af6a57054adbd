//! The DynamoDB storage layout: key prefixes, attribute names, the key of each kind
//! of item, and the two tables' definitions (`infra/tables.json`) with their creation.
//!
//! Data table items (partition key `pk` = user id, sort key `sk`):
//! - `hd#<indicator key>#<YYYY-MM-DD>#<part>`: one indicator's readings of one day
//!   (`r`: JSON, the readings' shared fields once and each reading's time and value;
//!   a day past 300 KB takes several parts, `00`, `01`, …); part `00` holds `v`, the
//!   version every write of the day conditions on (`readings.rs`).
//! - `hy#<key>#<YYYY-MM-DD>`, `hm#<key>#<YYYY-MM>`: the day's and the month's rollup
//!   (`s`: JSON; the month's `v`), and `hc#<key>`: the indicator's catalogue entry (`s`,
//!   `v`): rebuilt from the level below on every write, so they stay exact.
//! - `h#<indicator key>#<time>#<source>`: one reading in the older per-reading layout
//!   (`indicator`, `time`, `source`, `value` as N or S, optional `unit`, `code_system`,
//!   `code`); no longer written, moved by `migrate_legacy_readings`.
//! - `g#<rsid>`: one genotype (`chromosome`, `genotype`, and `gpk` = `<user>#<chromosome>`,
//!   `gpos` = position: the keys of the `by_position` index, which projects `genotype`).
//!   The layout before genome versions; `migrate_legacy_genotypes` moves
//!   these items into a version and deletes them.
//! - `genome`: the active genome version's pointer (`version`, `variants`, `source`,
//!   `imported_at`, `buckets`, `blocks`); `gv#<version>#b#<block>.<part>`: one chromosome
//!   region's SNPs, and `gv#<version>#i#<bucket>`: the rsid index, both binary in `d`
//!   (encoding in `genome.rs`).
//! - `presence`: booleans `health` / `genotype`, set when data is written (a genome's
//!   at its switch) and cleared with it, so availability gating (A5) is one GetItem.
//! - `account`: `email`, `password_hash`, `created_at` (N).
//! - `share#<grantee>`: `permissions`, a list of strings (a string set is read too).
//! - `shared-by#<owner>`: in the grantee's partition, the share seen from the
//!   grantee's side (`permissions`), written and deleted in one transaction with the
//!   owner's `share#<grantee>`, so shares received are one Query.
//! - `temp-url#<secret hash>`: a live temporary URL of the user (`session_id`,
//!   `agent_name`, `expires_at`), written in one transaction with its `url#` grant, so
//!   the user's temporary URLs are one Query; entries a day past expiry are deleted as
//!   they are listed (the data table has no TTL).
//! - `mcp#<name>`: an external MCP server: `url`, `record` (the other fields as JSON,
//!   credential sealed), and the connection fields as attributes of their own so that
//!   recording a connection is one UpdateItem: optional `last_connected_at` (N) and
//!   `last_connect_error`.
//! - `mcpurl#<hex sha256 of the url>`: `name`, the server holding that url. Written and
//!   deleted with its `mcp#` item in one transaction, so a url is registered once per user.
//!
//! Only `h…#`, `g#`, `genome`, `gv#` and `presence` are user data (`delete_user_data`); every query reads
//! one prefix, so no kind ever shows up in another's results.
//!
//! Keys table items (partition key `key`; `expires_at`, epoch seconds, is the TTL
//! attribute, and every read checks it itself because DynamoDB deletes late):
//! - `email#<e-mail>`: `user_id` (no expiry).
//! - `url#<secret hash>`: `user_id`, optional `session_id` / `agent_name`, `expires_at`;
//!   a share's delegated URL also has `grantee` and `permission` (`user_id` is the owner).
//! - `user-url#<user>`: `sealed_secret`, `secret_hash`, `expires_at`.
//! - `share-url#<owner>#<grantee>`: the grantee's delegated URL on the owner's data (B2),
//!   as `user-url#`: `sealed_secret` (bound to owner and grantee), `secret_hash`,
//!   `expires_at`. Claimed in one transaction with its `url#` grant and a condition check
//!   of the data table's `<owner>/share#<grantee>` (it must hold the permission); deleted
//!   with both by `delete_share` (TransactWriteItems across the two tables).
//! - `state#<state>`: `status` (`pending` / `completed`), `sealed_token` once completed,
//!   `expires_at`.
//! - `client#<client id>`: `client_id`, optional `secret_hash` / `client_name`,
//!   `redirect_uris` and `grant_types` (lists of strings), `token_endpoint_auth_method`,
//!   `created_at` (N), `expires_at` (an unused registration lapses; each use moves it
//!   on; absent on clients registered before registrations lapsed, which never lapse).
//! - `code#<code hash>`: `client_id`, `user_id`, `scope`, `redirect_uri`,
//!   `code_challenge`, optional `resource`, `expires_at`; deleted by its single use.
//! - `refresh#<token hash>`: `user_id`, `client_id`, `scope`, optional `resource`,
//!   `family_id`, `used` (BOOL), `expires_at`.
//! - `family#<family id>`: `revoked` (BOOL), `expires_at`: the family's tokens read as
//!   reused until then.
//! - `limit#<key hash>#<window start>`: `count` (N, one UpdateItem `ADD` each),
//!   `expires_at` (the window's end): an abuse counter.
//!
//! Owns names, keys and table definitions; reading and writing items is the domain
//! files' work.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, IndexStatus, KeySchemaElement, KeyType,
    Projection, ProjectionType, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
    TimeToLiveStatus,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::codec::{Item, s};
use super::{DynamoStore, DynamoTables, sdk_error};
use crate::store::StoreError;

pub(super) const PK: &str = "pk";

pub(super) const SK: &str = "sk";

pub(super) const PRESENCE_SK: &str = "presence";

pub(super) const READING_PREFIX: &str = "h#";

pub(super) const GENOTYPE_PREFIX: &str = "g#";

/// A day's readings of one indicator: `hd#<indicator key>#<YYYY-MM-DD>#<part, 2 digits>`.
pub(super) const DAY_PREFIX: &str = "hd#";

/// One indicator's rollup of a day (`hy#<key>#<YYYY-MM-DD>`) or a month (`hm#<key>#<YYYY-MM>`).
pub(super) const DAY_ROLLUP_PREFIX: &str = "hy#";

pub(super) const MONTH_ROLLUP_PREFIX: &str = "hm#";

/// One indicator's catalogue entry: `hc#<key>`.
pub(super) const CATALOGUE_PREFIX: &str = "hc#";

/// A rebuild owed: `hc#~<key>#<month>#<token>`, written with day items whose
/// month and catalogue entry are still to be rebuilt. Inside the catalogue's range, so
/// the catalogue read sees any left behind; `~` never occurs in a key (alphanumerics
/// and spaces).
pub(super) const OWED_PREFIX: &str = "hc#~";

/// A day part's readings (JSON), a rollup (JSON), and the version writes condition on.
pub(super) const PARTS: &str = "r";

pub(super) const ROLLUP: &str = "s";

pub(super) const VERSION: &str = "v";

/// On part `00`: how many parts the day has.
pub(super) const PART_COUNT: &str = "n";

/// The `by_position` index of the layout before genome versions (still in
/// `infra/tables.json`; nothing queries it now).
#[cfg(test)]
pub(super) const POSITION_INDEX: &str = "by_position";

/// A user's genome: the pointer to the active version (see `genome.rs`).
pub(super) const GENOME_SK: &str = "genome";

/// A genome version's items: `gv#<version>#b#<block>.<part>` and `gv#<version>#i#<bucket>`.
pub(super) const GENOME_VERSION_PREFIX: &str = "gv#";

/// The sort key of one item of a genome version (`gv#<version>#<key>`).
pub(super) fn genome_item_sk(version: &str, key: &crate::store::genome_codec::ItemKey) -> String {
    format!("{GENOME_VERSION_PREFIX}{version}#{}", key.text())
}
#[cfg(test)]
pub(super) const GPK: &str = "gpk";

pub(super) const GPOS: &str = "gpos";

pub(super) const ACCOUNT_SK: &str = "account";

pub(super) const SHARE_PREFIX: &str = "share#";

pub(super) const SHARED_BY_PREFIX: &str = "shared-by#";

pub(super) const TEMP_URL_PREFIX: &str = "temp-url#";

/// An invitation the user sent: `<owner>/invite#<email>`; the address's
/// view of it is `invitee#<email>/invite#<owner>` (user ids never hold `#`, so that
/// partition is never a user's).
pub(super) const INVITE_PREFIX: &str = "invite#";

pub(super) const INVITEE_PREFIX: &str = "invitee#";

pub(super) const MCP_PREFIX: &str = "mcp#";

const MCP_URL_PREFIX: &str = "mcpurl#";

/// The per-user serial of server creations (`v`): every create bumps it on the
/// condition that it still holds the value read with the server count, so two racing
/// creates cannot both pass the limit. Sorts outside the `mcp#` to `presence` range.
pub(super) const MCP_SERIAL_SK: &str = "serial#mcp";

pub(super) const MCP_SERIAL: &str = "v";

pub(super) const MCP_URL: &str = "url";

pub(super) const MCP_RECORD: &str = "record";

pub(super) const LAST_CONNECTED_AT: &str = "last_connected_at";

pub(super) const LAST_CONNECT_ERROR: &str = "last_connect_error";

/// Until when one caller holds a server's OAuth refresh (epoch seconds); a replace,
/// which puts the whole item, ends it.
pub(super) const REFRESH_CLAIMED_UNTIL: &str = "refresh_claimed_until";

/// The keys table's partition key and TTL attribute.
pub(super) const KEY: &str = "key";

pub(super) const EXPIRES_AT: &str = "expires_at";

pub(super) const EMAIL_PREFIX: &str = "email#";

pub(super) use crate::store::keys::{
    CLIENT_PREFIX, CODE_PREFIX, FAMILY_PREFIX, MAIL_PREFIX, REFRESH_PREFIX, SHARE_URL_PREFIX,
    STATE_PREFIX, TOKENS_PREFIX, URL_PREFIX, USER_URL_PREFIX,
};

pub(super) const USED: &str = "used";

pub(super) const PENDING: &str = "pending";

pub(super) const COMPLETED: &str = "completed";

pub(super) const COLLECTED: &str = "collected";

pub(super) fn data_key(user: &str, sk: String) -> Item {
    HashMap::from([(PK.to_string(), s(user)), (SK.to_string(), s(sk))])
}

pub(super) fn keys_key(key: String) -> Item {
    HashMap::from([(KEY.to_string(), s(key))])
}

pub(super) fn day_part_sk(key: &str, day: &str, part: usize) -> String {
    format!("{DAY_PREFIX}{key}#{day}#{part:02}")
}

pub(super) fn rollup_sk(prefix: &str, key: &str, period: &str) -> String {
    format!("{prefix}{key}#{period}")
}

pub(super) fn owed_sk(key: &str, month: &str, token: &str) -> String {
    format!("{OWED_PREFIX}{key}#{month}#{token}")
}

pub(super) fn mcp_sk(name: &str) -> String {
    format!("{MCP_PREFIX}{name}")
}

/// The sort key of a url's claim: urls can be longer than a sort key may be.
pub(super) fn mcp_url_sk(url: &str) -> String {
    let hash: String = Sha256::digest(url.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{MCP_URL_PREFIX}{hash}")
}

// ---------------------------------------------------------------- table definitions

impl DynamoStore {
    /// Creates both tables from `infra/tables.json` under the given names, unless they
    /// exist, waits until they are active, and turns TTL on for the keys table. For
    /// tests and local development; deployed tables come from the SAM template.
    pub async fn create_tables(client: &Client, tables: &DynamoTables) -> Result<(), StoreError> {
        let op = "create_tables";
        let defs: TableFile = serde_json::from_str(TABLES_JSON).map_err(|_| bad_definition())?;
        for (def, name) in [
            (&defs.tables.keys, &tables.keys),
            (&defs.tables.data, &tables.data),
        ] {
            let request = client
                .create_table()
                .table_name(name)
                .set_attribute_definitions(Some(def.create_table.attribute_definitions()?))
                .set_key_schema(Some(key_schema(&def.create_table.key_schema)?))
                .set_global_secondary_indexes(def.create_table.global_secondary_indexes()?)
                .billing_mode(BillingMode::from(def.create_table.billing_mode.as_str()));
            match request.send().await {
                Ok(_) => {}
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|e| e.is_resource_in_use_exception()) => {}
                Err(e) => return Err(sdk_error(op, e)),
            }
        }
        for name in [&tables.keys, &tables.data] {
            wait_until_active(client, name).await?;
        }
        for (def, name) in [
            (&defs.tables.keys, &tables.keys),
            (&defs.tables.data, &tables.data),
        ] {
            let Some(ttl) = &def.time_to_live_specification else {
                continue;
            };
            let current = client
                .describe_time_to_live()
                .table_name(name)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
            let status = current
                .time_to_live_description()
                .and_then(|d| d.time_to_live_status());
            if matches!(
                status,
                Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling)
            ) {
                continue;
            }
            let spec = TimeToLiveSpecification::builder()
                .attribute_name(&ttl.attribute_name)
                .enabled(ttl.enabled)
                .build()
                .map_err(|_| bad_definition())?;
            client
                .update_time_to_live()
                .table_name(name)
                .time_to_live_specification(spec)
                .send()
                .await
                .map_err(|e| sdk_error(op, e))?;
        }
        Ok(())
    }
}

/// Polls until the table and its indexes are active (immediate on moto; seconds on AWS).
async fn wait_until_active(client: &Client, table: &str) -> Result<(), StoreError> {
    let op = "create_tables";
    for _ in 0..600 {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        if let Some(t) = out.table() {
            let table_active = t.table_status() == Some(&TableStatus::Active);
            let indexes_active = t
                .global_secondary_indexes()
                .iter()
                .all(|i| i.index_status() == Some(&IndexStatus::Active));
            if table_active && indexes_active {
                return Ok(());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(StoreError::Unavailable(format!("{op}: table not active")))
}

/// The table definitions shared with `infra/local-aws` (CreateTable request shapes).
const TABLES_JSON: &str = include_str!("../../../../infra/tables.json");

#[derive(Deserialize)]
struct TableFile {
    tables: TableSet,
}

#[derive(Deserialize)]
struct TableSet {
    keys: TableDef,
    data: TableDef,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TableDef {
    create_table: CreateTableDef,
    time_to_live_specification: Option<TtlDef>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct CreateTableDef {
    attribute_definitions: Vec<AttributeDef>,
    key_schema: Vec<KeyDef>,
    #[serde(default)]
    global_secondary_indexes: Vec<IndexDef>,
    billing_mode: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct AttributeDef {
    attribute_name: String,
    attribute_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct KeyDef {
    attribute_name: String,
    key_type: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct IndexDef {
    index_name: String,
    key_schema: Vec<KeyDef>,
    projection: ProjectionDef,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ProjectionDef {
    projection_type: String,
    #[serde(default)]
    non_key_attributes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TtlDef {
    attribute_name: String,
    enabled: bool,
}

fn bad_definition() -> StoreError {
    StoreError::Corrupt("create_tables: infra/tables.json".into())
}

fn key_schema(keys: &[KeyDef]) -> Result<Vec<KeySchemaElement>, StoreError> {
    keys.iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(&k.attribute_name)
                .key_type(KeyType::from(k.key_type.as_str()))
                .build()
                .map_err(|_| bad_definition())
        })
        .collect()
}

impl CreateTableDef {
    fn attribute_definitions(&self) -> Result<Vec<AttributeDefinition>, StoreError> {
        self.attribute_definitions
            .iter()
            .map(|a| {
                AttributeDefinition::builder()
                    .attribute_name(&a.attribute_name)
                    .attribute_type(ScalarAttributeType::from(a.attribute_type.as_str()))
                    .build()
                    .map_err(|_| bad_definition())
            })
            .collect()
    }

    fn global_secondary_indexes(&self) -> Result<Option<Vec<GlobalSecondaryIndex>>, StoreError> {
        if self.global_secondary_indexes.is_empty() {
            return Ok(None);
        }
        self.global_secondary_indexes
            .iter()
            .map(|index| {
                let projection = Projection::builder()
                    .projection_type(ProjectionType::from(
                        index.projection.projection_type.as_str(),
                    ))
                    .set_non_key_attributes(
                        (!index.projection.non_key_attributes.is_empty())
                            .then(|| index.projection.non_key_attributes.clone()),
                    )
                    .build();
                GlobalSecondaryIndex::builder()
                    .index_name(&index.index_name)
                    .set_key_schema(Some(key_schema(&index.key_schema)?))
                    .projection(projection)
                    .build()
                    .map_err(|_| bad_definition())
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_definitions_match_the_code() {
        let defs: TableFile = serde_json::from_str(TABLES_JSON).expect("infra/tables.json parses");
        let data = &defs.tables.data.create_table;
        let keys: Vec<(&str, &str)> = data
            .key_schema
            .iter()
            .map(|k| (k.attribute_name.as_str(), k.key_type.as_str()))
            .collect();
        assert_eq!(keys, [(PK, "HASH"), (SK, "RANGE")]);
        let index = &data.global_secondary_indexes[0];
        assert_eq!(index.index_name, POSITION_INDEX);
        let index_keys: Vec<&str> = index
            .key_schema
            .iter()
            .map(|k| k.attribute_name.as_str())
            .collect();
        assert_eq!(index_keys, [GPK, GPOS]);
        assert!(
            index
                .projection
                .non_key_attributes
                .iter()
                .any(|a| a == "genotype")
        );
        let ttl = defs
            .tables
            .keys
            .time_to_live_specification
            .as_ref()
            .expect("keys table has TTL");
        assert_eq!(
            (ttl.attribute_name.as_str(), ttl.enabled),
            ("expires_at", true)
        );
        // Upload records, in the data table, expire too.
        let ttl = defs
            .tables
            .data
            .time_to_live_specification
            .as_ref()
            .expect("data table has TTL");
        assert_eq!(
            (ttl.attribute_name.as_str(), ttl.enabled),
            (EXPIRES_AT, true)
        );
        assert!(data.attribute_definitions().is_ok() && data.global_secondary_indexes().is_ok());
    }
}
