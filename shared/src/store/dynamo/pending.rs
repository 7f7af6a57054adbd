//! Rebuilds owed: the months and catalogue entries that day
//! writes have yet to bring up to date, recorded so that a writer that fails or is
//! killed half-way leaves nothing inconsistent behind.
//!
//! A write puts day items and their day rollups in one transaction and rebuilds the
//! months and catalogue entries after it. Each day transaction also puts one marker per
//! (measure, month) it touches, `hc#~<key>#<month>#<token>` with a token of its own, so
//! two writers never contend on a marker. Once the months and entries are rebuilt the
//! writer deletes its markers ([`DynamoStore::settle`]). A marker left behind (the
//! writer failed, timed out or was killed) sits inside the catalogue's key range, so
//! the catalogue read every answer starts with sees it at no extra cost and repairs it
//! first ([`DynamoStore::repair`]): the month rebuilt from its days, the entry from its
//! months, each transaction checking that the marker is still there (a deletion that
//! removed it stops the repair, which then never writes for a deleted user), and the
//! markers deleted. A repair racing a live writer only does the writer's rebuild early.
//!
//! Owns the marker's life; must not decide what a rollup holds (`readings` does).

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};

use super::readings::{Refresh, WriteGuard};
use super::schema::{OWED_PREFIX, data_key};
use super::{DynamoStore, corrupt};
use crate::store::StoreError;

/// The most (measure, month) rebuilds one catalogue read repairs; any beyond wait for
/// the next read (a killed import leaves one or two).
const MAX_REPAIRS: usize = 64;

/// A token for one transaction's markers: 16 hex digits, random.
pub(super) fn token() -> String {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // Uniqueness within a user is all a token needs: the clock gives it too.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes = (nanos as u64).to_be_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The (key, month) a marker's sort key owes, `None` when it is not a marker.
pub(super) fn owed_of(sk: &str) -> Option<(&str, &str)> {
    let rest = sk.strip_prefix(OWED_PREFIX)?;
    let mut parts = rest.rsplitn(3, '#');
    let (_token, month, key) = (parts.next()?, parts.next()?, parts.next()?);
    Some((key, month))
}

impl DynamoStore {
    /// Deletes markers whose rebuilds are done.
    pub(super) async fn settle(
        &self,
        op: &'static str,
        user: &str,
        markers: Vec<String>,
    ) -> Result<(), StoreError> {
        let deletes = markers
            .into_iter()
            .map(|sk| {
                DeleteRequest::builder()
                    .set_key(Some(data_key(user, sk)))
                    .build()
                    .map(|delete| WriteRequest::builder().delete_request(delete).build())
                    .map_err(|_| corrupt(op))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.write_all(op, deletes).await
    }

    /// Does the rebuilds the `markers` (sort keys) owe, then deletes them. Answers how
    /// many (measure, month) rebuilds it did.
    pub(super) async fn repair(
        &self,
        user: &str,
        markers: Vec<String>,
    ) -> Result<usize, StoreError> {
        let op = "repair_rollups";
        let mut owed: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
        for sk in markers {
            if let Some((key, month)) = owed_of(&sk) {
                let at = (key.to_string(), month.to_string());
                owed.entry(at).or_default().push(sk);
            }
        }
        let mut repaired = 0;
        for ((key, month), markers) in owed.into_iter().take(MAX_REPAIRS) {
            let guard = WriteGuard::Owed {
                user: user.to_string(),
                sk: markers[0].clone(),
            };
            let month = self
                .refresh(user, vec![Refresh::month(&key, &month)], Some(&guard))
                .await;
            let entry = match month {
                Ok(()) => {
                    self.refresh(user, vec![Refresh::entry(&key)], Some(&guard))
                        .await
                }
                Err(error) => Err(error),
            };
            match entry {
                Ok(()) => repaired += 1,
                // The marker went (a deletion, or its writer settled it): nothing owed.
                Err(StoreError::ImportStopped) => continue,
                Err(error) => return Err(error),
            }
            self.settle(op, user, markers).await?;
        }
        if repaired > 0 {
            tracing::info!(
                repaired,
                "dynamodb store: rebuilt rollups a writer left owed"
            );
        }
        Ok(repaired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Reading, ReadingValue};
    use crate::store::contract::{fresh_tables, moto_client, moto_endpoint};
    use crate::store::dynamo::schema::owed_sk;
    use crate::store::{HealthStore, Period, ReadingQuery};

    #[test]
    fn a_marker_names_its_measure_and_month() {
        let sk = owed_sk("heart rate", "2025-03", &token());
        assert_eq!(owed_of(&sk), Some(("heart rate", "2025-03")));
        assert_eq!(owed_of("hc#heart rate"), None);
        assert_eq!(token().len(), 16);
        assert_ne!(token(), token());
    }

    /// `n` daily steps readings from `first` (a day of January to March 2025), 1,000 to
    /// 1,000 + n - 1 steps.
    fn steps(first: usize, n: usize) -> Vec<Reading> {
        (first..first + n)
            .map(|i| Reading {
                indicator: "Steps".into(),
                value: ReadingValue::Number(1000.0 + (i - first) as f64),
                unit: Some("count".into()),
                time: format!("2025-{:02}-{:02}T12:00:00", 1 + i / 28, 1 + i % 28),
                code_system: None,
                code: None,
                source: "Phone".into(),
                offset: None,
                original: None,
            })
            .collect()
    }

    /// A writer stopped after its day transactions (a failed or
    /// killed import) leaves months and the catalogue owing. The next catalogue read
    /// rebuilds them: 28 January days written whole, then 56 days of February and March
    /// whose writer stopped; the catalogue then counts 84 readings, the sum is
    /// 28 x 1,000 + (0 + ... + 27) = 28,378 for January plus 56 x 1,000 + (0 + ... + 55)
    /// = 57,540 for the rest, each month's rollup holds its 28 days, and no marker is
    /// left. Then a deletion removes a stopped writer's markers with the data, and the
    /// read after it rebuilds nothing.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_writer_leaves_nothing_inconsistent() {
        let (endpoint, _moto) = moto_endpoint();
        let client = moto_client(&endpoint);
        let tables = fresh_tables();
        DynamoStore::create_tables(&client, &tables).await.unwrap();
        let store = DynamoStore::new(client, tables);
        store.put_readings("ann", &steps(0, 28)).await.unwrap();
        store.write_days_only("ann", &steps(28, 56)).await.unwrap();

        let (_, owed) = store.catalogue_items("ann").await.unwrap();
        assert!(!owed.is_empty(), "the stopped writer left its markers");
        let catalogue = store.catalogue("ann").await.unwrap();
        assert_eq!(catalogue.len(), 1);
        assert_eq!(catalogue[0].summary.count, 84);
        assert_eq!(catalogue[0].summary.sum, 28_378.0 + 57_540.0);
        let stored = store.readings("ann", &ReadingQuery::default()).await;
        assert_eq!(stored.unwrap().len(), 84);
        let months = store
            .rollups("ann", "steps", Period::Month, "2025-01", "2025-03")
            .await
            .unwrap();
        let counts: Vec<(&str, u64)> = months
            .iter()
            .map(|m| (m.period.as_str(), m.count))
            .collect();
        assert_eq!(counts, [("2025-01", 28), ("2025-02", 28), ("2025-03", 28)]);
        let (_, owed) = store.catalogue_items("ann").await.unwrap();
        assert!(owed.is_empty(), "{owed:?}");

        store.write_days_only("ann", &steps(28, 28)).await.unwrap();
        store.delete_user_data("ann").await.unwrap();
        assert!(store.catalogue("ann").await.unwrap().is_empty());
        let months = store
            .rollups("ann", "steps", Period::Month, "2025-01", "2025-03")
            .await
            .unwrap();
        assert!(months.is_empty(), "no rollup written after the deletion");
    }
}
