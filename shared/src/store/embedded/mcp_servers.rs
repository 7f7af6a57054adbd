//! [`McpServerStore`] on SQLite: the `mcp_servers` table, whose url is unique per
//! user, and the combined read of presence and servers on one connection. Every write
//! (a rename too) is one transaction.
//!
//! Keeps the credential only sealed, as given; never logs a record.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};

use super::health::presence_of;
use super::{EmbeddedStore, json_column, json_from_column, seconds_column, seconds_from_column};
use crate::domain::{DataPresence, MAX_MCP_SERVERS, McpServerRecord, McpServerWrite};
use crate::store::{McpServerBody, McpServerParts, McpServerStore, StoreError};

/// An `mcp_servers` row's columns after `user`: name, url, record, last_connected_at,
/// last_connect_error.
struct McpRow {
    name: String,
    url: String,
    record: String,
    last_connected_at: Option<i64>,
    last_connect_error: Option<String>,
}

impl McpRow {
    fn of(record: McpServerRecord) -> rusqlite::Result<McpRow> {
        let McpServerParts {
            name,
            url,
            body,
            last_connected_at,
            last_connect_error,
        } = McpServerParts::from(record);
        Ok(McpRow {
            name,
            url,
            record: json_column(&body)?,
            last_connected_at: last_connected_at.map(seconds_column).transpose()?,
            last_connect_error,
        })
    }

    /// Writes this row over the stored row named `stored_name` (the same name, or a
    /// rename's old one): every column, in the caller's transaction, after its checks.
    fn rewrite(&self, tx: &Transaction<'_>, user: &str, stored_name: &str) -> rusqlite::Result<()> {
        tx.prepare_cached(
            "UPDATE mcp_servers SET name = ?3, url = ?4, record = ?5, last_connected_at = ?6, \
               last_connect_error = ?7, refresh_claimed_until = NULL \
             WHERE user = ?1 AND name = ?2",
        )?
        .execute(params![
            user,
            stored_name,
            self.name,
            self.url,
            self.record,
            self.last_connected_at,
            self.last_connect_error
        ])?;
        Ok(())
    }
}

const MCP_COLUMNS: &str = "name, url, record, last_connected_at, last_connect_error";

fn mcp_servers_of(conn: &Connection, user: &str) -> rusqlite::Result<Vec<McpServerRecord>> {
    // BINARY collation: UTF-8 byte order, as DynamoDB orders sort keys.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {MCP_COLUMNS} FROM mcp_servers WHERE user = ?1 ORDER BY name"
    ))?;
    let rows = stmt.query_map([user], mcp_from_row)?;
    rows.collect()
}

fn mcp_from_row(row: &Row<'_>) -> rusqlite::Result<McpServerRecord> {
    let body: McpServerBody = json_from_column(row, 2)?;
    let last_connected_at = match row.get_ref(3)? {
        rusqlite::types::ValueRef::Null => None,
        _ => Some(seconds_from_column(row, 3)?),
    };
    Ok(McpServerRecord::from(McpServerParts {
        name: row.get(0)?,
        url: row.get(1)?,
        body,
        last_connected_at,
        last_connect_error: row.get(4)?,
    }))
}

#[async_trait]
impl McpServerStore for EmbeddedStore {
    async fn mcp_servers(&self, user: &str) -> Result<Vec<McpServerRecord>, StoreError> {
        let user = user.to_string();
        self.read("mcp_servers", move |conn| mcp_servers_of(conn, &user))
            .await
    }

    async fn presence_and_mcp_servers(
        &self,
        user: &str,
    ) -> Result<(DataPresence, Vec<McpServerRecord>), StoreError> {
        let user = user.to_string();
        self.read("presence_and_mcp_servers", move |conn| {
            Ok((presence_of(conn, &user)?, mcp_servers_of(conn, &user)?))
        })
        .await
    }

    async fn mcp_server(
        &self,
        user: &str,
        name: &str,
    ) -> Result<Option<McpServerRecord>, StoreError> {
        let op = "mcp_server";
        let user = user.to_string();
        let name = name.to_string();
        self.run(op, move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {MCP_COLUMNS} FROM mcp_servers WHERE user = ?1 AND name = ?2"
            ))
            .and_then(|mut stmt| stmt.query_row([&user, &name], mcp_from_row).optional())
        })
        .await
    }

    async fn create_mcp_server(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "create_mcp_server";
        let user = user.to_string();
        let record = record.clone();
        self.run(op, move |conn| {
            let row = McpRow::of(record)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            // Counted inside the immediate transaction: no other writer can add a
            // server between the count and the insert.
            let (name_taken, url_taken, count): (bool, bool, i64) = tx
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM mcp_servers WHERE user = ?1 AND name = ?2), \
                            EXISTS (SELECT 1 FROM mcp_servers WHERE user = ?1 AND url = ?3), \
                            (SELECT COUNT(*) FROM mcp_servers WHERE user = ?1)",
                )?
                .query_row(params![user, row.name, row.url], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
            // The limit first, then both taken (the same server again) reads as the
            // name, as in DynamoDB.
            if usize::try_from(count).unwrap_or(usize::MAX) >= MAX_MCP_SERVERS {
                return Ok(McpServerWrite::LimitReached);
            }
            if name_taken {
                return Ok(McpServerWrite::NameTaken);
            }
            if url_taken {
                return Ok(McpServerWrite::UrlTaken);
            }
            tx.prepare_cached(&format!(
                "INSERT INTO mcp_servers (user, {MCP_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            ))?
            .execute(params![
                user,
                row.name,
                row.url,
                row.record,
                row.last_connected_at,
                row.last_connect_error
            ])?;
            tx.commit()?;
            Ok(McpServerWrite::Written)
        })
        .await
    }

    async fn replace_mcp_server(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "replace_mcp_server";
        let user = user.to_string();
        let record = record.clone();
        self.run(op, move |conn| {
            let row = McpRow::of(record)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let stored: Option<String> = tx
                .prepare_cached("SELECT url FROM mcp_servers WHERE user = ?1 AND name = ?2")?
                .query_row([&user, &row.name], |r| r.get(0))
                .optional()?;
            match stored {
                None => return Ok(McpServerWrite::Missing),
                Some(url) if url != row.url => return Ok(McpServerWrite::UrlChanged),
                Some(_) => {}
            }
            row.rewrite(&tx, &user, &row.name)?;
            tx.commit()?;
            Ok(McpServerWrite::Written)
        })
        .await
    }

    async fn claim_mcp_refresh(
        &self,
        user: &str,
        name: &str,
        now: u64,
        until: u64,
    ) -> Result<bool, StoreError> {
        let op = "claim_mcp_refresh";
        let user = user.to_string();
        let name = name.to_string();
        self.run(op, move |conn| {
            // One conditional UPDATE: of two racing claims, one changes the row.
            let changed = conn
                .prepare_cached(
                    "UPDATE mcp_servers SET refresh_claimed_until = ?3 \
                     WHERE user = ?1 AND name = ?2 \
                       AND (refresh_claimed_until IS NULL OR refresh_claimed_until <= ?4)",
                )?
                .execute(params![
                    user,
                    name,
                    seconds_column(until)?,
                    seconds_column(now)?
                ])?;
            Ok(changed == 1)
        })
        .await
    }

    async fn record_mcp_connection(
        &self,
        user: &str,
        name: &str,
        at: u64,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let op = "record_mcp_connection";
        let user = user.to_string();
        let name = name.to_string();
        let error = error.map(str::to_string);
        self.run(op, move |conn| {
            // One UPDATE: it touches only these columns, and an absent row stays absent.
            match error {
                None => conn
                    .prepare_cached(
                        "UPDATE mcp_servers SET last_connected_at = ?3, \
                           last_connect_error = NULL WHERE user = ?1 AND name = ?2",
                    )?
                    .execute(params![user, name, seconds_column(at)?])?,
                Some(error) => conn
                    .prepare_cached(
                        "UPDATE mcp_servers SET last_connect_error = ?3 \
                         WHERE user = ?1 AND name = ?2",
                    )?
                    .execute(params![user, name, error])?,
            };
            Ok(())
        })
        .await
    }

    async fn delete_mcp_server(&self, user: &str, name: &str) -> Result<bool, StoreError> {
        let op = "delete_mcp_server";
        let user = user.to_string();
        let name = name.to_string();
        self.run(op, move |conn| {
            // The url's uniqueness is the row's own: deleting the row frees it.
            conn.prepare_cached("DELETE FROM mcp_servers WHERE user = ?1 AND name = ?2")
                .and_then(|mut stmt| stmt.execute([&user, &name]))
                .map(|deleted| deleted == 1)
        })
        .await
    }

    async fn rename_mcp_server(
        &self,
        user: &str,
        old: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "rename_mcp_server";
        let user = user.to_string();
        let old = old.to_string();
        let record = record.clone();
        self.run(op, move |conn| {
            let row = McpRow::of(record)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let (stored, taken): (Option<String>, bool) = tx
                .prepare_cached(
                    "SELECT (SELECT url FROM mcp_servers WHERE user = ?1 AND name = ?2), \
                            EXISTS (SELECT 1 FROM mcp_servers WHERE user = ?1 AND name = ?3)",
                )?
                .query_row(params![user, old, row.name], |r| Ok((r.get(0)?, r.get(1)?)))?;
            match stored {
                None => return Ok(McpServerWrite::Missing),
                Some(url) if url != row.url => return Ok(McpServerWrite::UrlChanged),
                Some(_) if taken => return Ok(McpServerWrite::NameTaken),
                Some(_) => {}
            }
            // One row: its url (and so its uniqueness) goes with it.
            row.rewrite(&tx, &user, &old)?;
            tx.commit()?;
            Ok(McpServerWrite::Written)
        })
        .await
    }

    async fn set_mcp_server_url(
        &self,
        user: &str,
        record: &McpServerRecord,
    ) -> Result<McpServerWrite, StoreError> {
        let op = "set_mcp_server_url";
        let user = user.to_string();
        let record = record.clone();
        self.run(op, move |conn| {
            let row = McpRow::of(record)?;
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let (stored, taken): (Option<String>, bool) = tx
                .prepare_cached(
                    "SELECT (SELECT url FROM mcp_servers WHERE user = ?1 AND name = ?2), \
                            EXISTS (SELECT 1 FROM mcp_servers WHERE user = ?1 AND url = ?3)",
                )?
                .query_row(params![user, row.name, row.url], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            match stored {
                None => return Ok(McpServerWrite::Missing),
                Some(url) if !url.is_empty() => return Ok(McpServerWrite::UrlChanged),
                Some(_) if taken => return Ok(McpServerWrite::UrlTaken),
                Some(_) => {}
            }
            row.rewrite(&tx, &user, &row.name)?;
            tx.commit()?;
            Ok(McpServerWrite::Written)
        })
        .await
    }
}
