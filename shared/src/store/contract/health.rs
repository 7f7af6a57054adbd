//! Contract cases for [`HealthStore`](crate::store::HealthStore): presence, readings,
//! genotype presence, and deleting a user's data (genome cases: `genome.rs`).
//!
//! Each case speaks only through the `Store` trait, never a backend's own API, so both
//! backends run it unchanged; its users are its own, so no case sees another's data.

use super::{all, genotype, put_genome, reading};
use crate::domain::{DataPresence, Genotype, Reading, ReadingValue};
use crate::store::{Period, ReadingQuery, Store};

fn keys(keys: &[&str]) -> ReadingQuery {
    ReadingQuery {
        indicator_keys: Some(keys.iter().map(|k| k.to_string()).collect()),
        ..ReadingQuery::default()
    }
}

fn window(from: Option<&str>, to: Option<&str>) -> ReadingQuery {
    ReadingQuery {
        indicator_keys: None,
        from: from.map(String::from),
        to: to.map(String::from),
    }
}

fn times(readings: &[Reading]) -> Vec<&str> {
    readings.iter().map(|r| r.time.as_str()).collect()
}

pub(super) async fn presence_follows_writes(store: &dyn Store, user: &str) {
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "empty user has nothing"
    );
    store.put_readings(user, &[]).await.unwrap();
    store
        .replace_genome(user, &crate::domain::Genome::default(), "empty", 1)
        .await
        .unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "empty writes change nothing"
    );

    store
        .put_readings(
            user,
            &[reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0)],
        )
        .await
        .unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: true,
            genotype: false
        }
    );

    put_genome(store, user, &[genotype("rs1", "1", 100, "AG")]).await;
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: true,
            genotype: true
        }
    );
}

pub(super) async fn readings_upsert_by_identity(store: &dyn Store, user: &str) {
    let first = reading("Hemoglobin A1c", "2024-02-01T09:00:00", "lab-a", 5.9);
    let report = store
        .put_readings(user, std::slice::from_ref(&first))
        .await
        .unwrap();
    assert_eq!(report.written, 1);

    // Same identity (indicator key, time, source), new value and spelling: replaced in place.
    let mut again = reading("hemoglobin  a1c ", "2024-02-01T09:00:00", "lab-a", 6.1);
    again.unit = Some("%".to_string());
    let report = store
        .put_readings(user, std::slice::from_ref(&again))
        .await
        .unwrap();
    assert_eq!(report.written, 1);
    assert_eq!(
        store.readings(user, &all()).await.unwrap(),
        vec![again.clone()],
        "re-upload replaces"
    );

    // Another source is another reading.
    let other_source = reading("Hemoglobin A1c", "2024-02-01T09:00:00", "lab-b", 6.0);
    store
        .put_readings(user, std::slice::from_ref(&other_source))
        .await
        .unwrap();
    let rows = store.readings(user, &all()).await.unwrap();
    assert_eq!(rows.len(), 2, "different source, two rows");

    // A batch naming one identity twice keeps one row: the last one.
    let dup_a = reading("LDL", "2024-02-02T09:00:00", "lab-a", 100.0);
    let dup_b = reading("ldl", "2024-02-02T09:00:00", "lab-a", 101.0);
    store
        .put_readings(user, &[dup_a, dup_b.clone()])
        .await
        .unwrap();
    assert_eq!(
        store.readings(user, &keys(&["ldl"])).await.unwrap(),
        vec![dup_b],
        "last of a repeated identity wins"
    );
}

pub(super) async fn readings_round_trip_every_field(store: &dyn Store, user: &str) {
    let text = Reading {
        indicator: "Urine Protein (dipstick)".to_string(),
        value: ReadingValue::Text("trace, see note: ±".to_string()),
        unit: None,
        time: "2024-03-01T10:00:00".to_string(),
        code_system: None,
        code: None,
        source: "report.pdf#page=2".to_string(),
        offset: None,
        original: None,
    };
    let tiny = reading(
        "Troponin",
        "2024-03-01T10:00:00",
        "lab",
        0.000_123_456_789_012_345_6,
    );
    let negative = reading("Base Excess", "2024-03-01T10:00:00", "lab", -2.5);
    let integer = reading("Platelets", "2024-03-01T10:00:00", "lab", 250_000.0);
    let written = vec![text, tiny, negative, integer];
    store.put_readings(user, &written).await.unwrap();
    let mut expected = written.clone();
    expected.sort_by_key(|r| Reading::indicator_key(&r.indicator));
    assert_eq!(
        store.readings(user, &all()).await.unwrap(),
        expected,
        "every field reads back exactly"
    );
}

pub(super) async fn readings_filter_by_indicator_and_time(store: &dyn Store, user: &str) {
    let data = [
        reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0),
        reading("Glucose", "2024-01-15T08:00:00", "lab", 95.0),
        reading("Glucose", "2024-01-31T23:00:00", "lab", 99.0),
        reading("Glucose", "2024-02-01T00:00:00", "lab", 101.0),
        reading("LDL", "2024-01-15T08:00:00", "lab", 120.0),
        reading("HDL", "2024-01-15T08:00:00", "lab", 50.0),
    ];
    store.put_readings(user, &data).await.unwrap();

    let picked = store
        .readings(user, &keys(&["glucose", "hdl"]))
        .await
        .unwrap();
    let names: Vec<&str> = picked.iter().map(|r| r.indicator.as_str()).collect();
    assert_eq!(
        names,
        ["Glucose", "Glucose", "Glucose", "Glucose", "HDL"],
        "only the asked indicators"
    );
    assert!(
        store.readings(user, &keys(&[])).await.unwrap().is_empty(),
        "no keys, no readings"
    );
    assert!(
        store
            .readings(user, &keys(&["unknown"]))
            .await
            .unwrap()
            .is_empty()
    );

    // Bounds are inclusive at both ends, compared as text.
    let exact = ReadingQuery {
        indicator_keys: Some(vec!["glucose".to_string()]),
        from: Some("2024-01-15T08:00:00".to_string()),
        to: Some("2024-01-31T23:00:00".to_string()),
    };
    assert_eq!(
        times(&store.readings(user, &exact).await.unwrap()),
        ["2024-01-15T08:00:00", "2024-01-31T23:00:00"]
    );

    // A date as `to` covers that whole day.
    let january = store
        .readings(user, &window(Some("2024-01-01"), Some("2024-01-31")))
        .await
        .unwrap();
    assert_eq!(january.len(), 5, "all of January, every indicator");
    assert!(january.iter().all(|r| r.time.starts_with("2024-01")));
    let glucose_january = ReadingQuery {
        to: Some("2024-01-31".to_string()),
        ..keys(&["glucose"])
    };
    assert_eq!(
        store.readings(user, &glucose_january).await.unwrap().len(),
        3
    );

    let from_feb = store
        .readings(user, &window(Some("2024-02-01"), None))
        .await
        .unwrap();
    assert_eq!(times(&from_feb), ["2024-02-01T00:00:00"]);
    assert!(
        store
            .readings(user, &window(Some("2024-03-01"), Some("2024-02-01")))
            .await
            .unwrap()
            .is_empty(),
        "empty window"
    );
    let swapped = ReadingQuery {
        from: Some("2024-03-01".to_string()),
        to: Some("2024-02-01".to_string()),
        ..keys(&["glucose"])
    };
    assert!(
        store.readings(user, &swapped).await.unwrap().is_empty(),
        "empty window by key"
    );
}

pub(super) async fn readings_ordered_by_indicator_then_time(store: &dyn Store, user: &str) {
    // Written out of order; "a b" and "a" are the pair a `#`-separated sort key orders wrongly.
    let data = [
        reading("Zinc", "2024-01-02T00:00:00", "lab", 1.0),
        reading("A", "2024-01-03T00:00:00", "lab", 2.0),
        reading("A B", "2024-01-01T00:00:00", "lab", 3.0),
        reading("A", "2024-01-01T00:00:00", "lab", 4.0),
        reading("Zinc", "2024-01-01T00:00:00", "lab", 5.0),
        reading("A", "2024-01-02", "lab", 6.0),
        reading("A", "2024-01-02T00:00:00", "lab", 7.0),
    ];
    store.put_readings(user, &data).await.unwrap();
    let expected = [
        ("a", "2024-01-01T00:00:00"),
        ("a", "2024-01-02"),
        ("a", "2024-01-02T00:00:00"),
        ("a", "2024-01-03T00:00:00"),
        ("a b", "2024-01-01T00:00:00"),
        ("zinc", "2024-01-01T00:00:00"),
        ("zinc", "2024-01-02T00:00:00"),
    ];
    for query in [all(), keys(&["zinc", "a b", "a"])] {
        let got = store.readings(user, &query).await.unwrap();
        let got: Vec<(String, &str)> = got
            .iter()
            .map(|r| (Reading::indicator_key(&r.indicator), r.time.as_str()))
            .collect();
        let want: Vec<(String, &str)> = expected.iter().map(|(k, t)| (k.to_string(), *t)).collect();
        assert_eq!(got, want, "ordered by indicator key, then time ({query:?})");
    }
}

pub(super) async fn users_are_isolated(store: &dyn Store, alice: &str, bob: &str) {
    let shared_reading = reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0);
    store
        .put_readings(alice, std::slice::from_ref(&shared_reading))
        .await
        .unwrap();
    put_genome(store, alice, &[genotype("rs1", "1", 1, "AA")]).await;

    assert_eq!(
        store.data_presence(bob).await.unwrap(),
        DataPresence::default()
    );
    assert!(store.readings(bob, &all()).await.unwrap().is_empty());
    assert!(
        store
            .genotypes_by_rsid(bob, &["rs1".to_string()])
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .genotypes_in_range(bob, "1", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // Bob writing the same identities does not touch Alice's rows.
    let mut bobs = shared_reading.clone();
    bobs.value = ReadingValue::Number(200.0);
    store.put_readings(bob, &[bobs]).await.unwrap();
    put_genome(store, bob, &[genotype("rs1", "1", 1, "TT")]).await;
    assert_eq!(
        store.readings(alice, &all()).await.unwrap(),
        vec![shared_reading]
    );
    assert_eq!(
        store
            .genotypes_by_rsid(alice, &["rs1".to_string()])
            .await
            .unwrap(),
        vec![genotype("rs1", "1", 1, "AA")]
    );
}

pub(super) async fn delete_removes_everything(store: &dyn Store, user: &str, bystander: &str) {
    let readings: Vec<Reading> = (0..30)
        .map(|i| {
            reading(
                &format!("Indicator {}", i % 3),
                &format!("2024-01-{:02}T00:00:00", i + 1),
                "lab",
                f64::from(i),
            )
        })
        .collect();
    let genotypes: Vec<Genotype> = (0..30)
        .map(|i| genotype(&format!("rs{i}"), "2", 1000 + i, "AG"))
        .collect();
    for who in [user, bystander] {
        store.put_readings(who, &readings).await.unwrap();
        put_genome(store, who, &genotypes).await;
    }

    store.delete_user_data(user).await.unwrap();
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default(),
        "presence off after delete"
    );
    assert!(store.readings(user, &all()).await.unwrap().is_empty());
    let rsids: Vec<String> = genotypes.iter().map(|g| g.rsid.clone()).collect();
    assert!(
        store
            .genotypes_by_rsid(user, &rsids)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .genotypes_in_range(user, "2", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // Others keep theirs; deleting again is harmless; the user can upload again.
    assert_eq!(store.readings(bystander, &all()).await.unwrap().len(), 30);
    assert_eq!(
        store.data_presence(bystander).await.unwrap(),
        DataPresence {
            health: true,
            genotype: true
        }
    );
    store.delete_user_data(user).await.unwrap();
    put_genome(store, user, &genotypes[..1]).await;
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence {
            health: false,
            genotype: true
        }
    );
}

pub(super) async fn large_batches_round_trip(store: &dyn Store, user: &str) {
    // 1,000 readings: 10 indicators x 100 days, written in one call in scrambled order.
    let mut readings: Vec<Reading> = (0..1000u32)
        .map(|i| {
            let day = i / 10;
            let time = format!("2023-{:02}-{:02}T07:30:00", day / 28 + 1, day % 28 + 1);
            reading(
                &format!("Marker {}", i % 10),
                &time,
                "wearable",
                f64::from(i) / 10.0,
            )
        })
        .collect();
    readings.reverse();
    readings.swap(0, 500);
    let report = store.put_readings(user, &readings).await.unwrap();
    assert_eq!(report.written, 1000);

    let back = store.readings(user, &all()).await.unwrap();
    assert_eq!(back.len(), 1000, "every reading reads back");
    let mut expected = readings.clone();
    expected.sort_by_cached_key(|r| (Reading::indicator_key(&r.indicator), r.time.clone()));
    assert_eq!(back, expected, "complete and ordered");
    let one = store
        .readings(user, &keys(&["marker 3", "marker 7"]))
        .await
        .unwrap();
    assert_eq!(one.len(), 200);

    // 1,000 genotypes: lookups span several BatchGetItem requests, ranges several pages.
    let genotypes: Vec<Genotype> = (0..1000u64)
        .map(|i| genotype(&format!("rs{}", 1_000_000 - i), "3", 10 * i + 1, "CT"))
        .collect();
    put_genome(store, user, &genotypes).await;
    let rsids: Vec<String> = genotypes
        .iter()
        .step_by(3)
        .map(|g| g.rsid.clone())
        .chain(["rs1".to_string()])
        .collect();
    let found = store.genotypes_by_rsid(user, &rsids).await.unwrap();
    assert_eq!(found.len(), 334, "every stored rsid asked for, none other");
    let range = store
        .genotypes_in_range(user, "3", 1, 10 * 999 + 1)
        .await
        .unwrap();
    assert_eq!(range.len(), 1000);
    assert!(
        range.windows(2).all(|w| w[0].position < w[1].position),
        "ordered by position"
    );

    store.delete_user_data(user).await.unwrap();
    assert!(
        store.readings(user, &all()).await.unwrap().is_empty(),
        "bulk delete pages through everything"
    );
    assert!(
        store
            .genotypes_in_range(user, "3", 0, u64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store.data_presence(user).await.unwrap(),
        DataPresence::default()
    );
}

fn text_reading(indicator: &str, time: &str, source: &str, text: &str) -> Reading {
    Reading {
        value: ReadingValue::Text(text.to_string()),
        ..reading(indicator, time, source, 0.0)
    }
}

/// The catalogue and the day and month rollups follow every write, exactly: a
/// re-upload replaces its reading in them too, and deleting the data removes them.
pub(super) async fn rollups_and_catalogue_follow_writes(store: &dyn Store, user: &str) {
    let mut meter = reading("Glucose", "2024-02-10T07:00:00", "meter", 100.0);
    meter.unit = Some("mmol/L".into());
    let mut hba1c = reading("HbA1c", "2024-01-05", "lab", 5.7);
    hba1c.code = Some("4548-4".into());
    store
        .put_readings(
            user,
            &[
                reading("Glucose", "2024-01-01T08:00:00", "lab", 90.0),
                reading("Glucose", "2024-01-01T20:00:00", "lab", 110.0),
                text_reading("Glucose", "2024-01-02T08:00:00", "lab", "high"),
                meter,
                hba1c,
            ],
        )
        .await
        .unwrap();
    // A re-upload of one reading with a new value: counts stay, sums follow.
    store
        .put_readings(
            user,
            &[reading("glucose", "2024-01-01T08:00:00", "lab", 95.0)],
        )
        .await
        .unwrap();

    let catalogue = store.catalogue(user).await.unwrap();
    let keys: Vec<&str> = catalogue.iter().map(|e| e.key.as_str()).collect();
    assert_eq!(keys, ["glucose", "hba1c"]);
    let glucose = &catalogue[0].summary;
    assert_eq!((glucose.count, glucose.numeric_count), (4, 3));
    assert_eq!(glucose.sum, 95.0 + 110.0 + 100.0);
    assert_eq!((glucose.min, glucose.max), (95.0, 110.0));
    assert_eq!(glucose.first.time, "2024-01-01T08:00:00");
    assert_eq!(glucose.first.value, ReadingValue::Number(95.0));
    assert_eq!(glucose.last.time, "2024-02-10T07:00:00");
    assert_eq!(glucose.common_unit(), None, "two units");
    assert_eq!(glucose.common_source(), None, "two sources");
    let lab = &catalogue[1].summary;
    assert_eq!(
        (lab.name.as_str(), lab.code.as_deref()),
        ("HbA1c", Some("4548-4"))
    );
    assert_eq!(lab.common_unit(), Some(Some("mg/dL")));
    assert_eq!(lab.common_source(), Some("lab"));

    let days = store
        .rollups(user, "Glucose", Period::Day, "2024-01-01", "2024-01-31")
        .await
        .unwrap();
    let periods: Vec<&str> = days.iter().map(|r| r.period.as_str()).collect();
    assert_eq!(periods, ["2024-01-01", "2024-01-02"]);
    assert_eq!((days[0].count, days[0].sum), (2, 205.0));
    assert_eq!(days[0].last.value, ReadingValue::Number(110.0));
    assert_eq!((days[1].count, days[1].numeric_count), (1, 0));
    assert_eq!(days[1].first.value, ReadingValue::Text("high".into()));
    let months = store
        .rollups(user, "glucose", Period::Month, "2024-01", "2024-12")
        .await
        .unwrap();
    let counts: Vec<(&str, u64)> = months
        .iter()
        .map(|r| (r.period.as_str(), r.count))
        .collect();
    assert_eq!(counts, [("2024-01", 3), ("2024-02", 1)]);
    assert!(
        store
            .rollups(user, "glucose", Period::Month, "2024-03", "2024-12")
            .await
            .unwrap()
            .is_empty()
    );

    store.delete_user_data(user).await.unwrap();
    assert!(store.catalogue(user).await.unwrap().is_empty());
    assert!(
        store
            .rollups(user, "glucose", Period::Day, "", "9999")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .rollups(user, "glucose", Period::Month, "", "9999")
            .await
            .unwrap()
            .is_empty()
    );
}

/// The newest readings of one indicator come newest first, at most `limit`, inside
/// the window.
pub(super) async fn latest_readings_newest_first(store: &dyn Store, user: &str) {
    let readings: Vec<Reading> = (0..40)
        .map(|i| {
            reading(
                "Heart rate",
                &format!("2024-03-{:02}T{:02}:00:00", 1 + i / 4, (i % 4) * 6),
                "watch",
                f64::from(60 + i),
            )
        })
        .chain([reading("Other", "2024-12-01T00:00:00", "watch", 1.0)])
        .collect();
    store.put_readings(user, &readings).await.unwrap();
    let latest = store
        .latest_readings(user, "heart rate", 5, &all())
        .await
        .unwrap();
    assert_eq!(
        times(&latest),
        [
            "2024-03-10T18:00:00",
            "2024-03-10T12:00:00",
            "2024-03-10T06:00:00",
            "2024-03-10T00:00:00",
            "2024-03-09T18:00:00"
        ]
    );
    let windowed = store
        .latest_readings(
            user,
            "Heart rate",
            3,
            &window(Some("2024-03-02"), Some("2024-03-03")),
        )
        .await
        .unwrap();
    assert_eq!(
        times(&windowed),
        [
            "2024-03-03T18:00:00",
            "2024-03-03T12:00:00",
            "2024-03-03T06:00:00"
        ]
    );
    let all_of_it = store
        .latest_readings(user, "heart rate", 500, &all())
        .await
        .unwrap();
    assert_eq!(all_of_it.len(), 40);
    assert_eq!(all_of_it[39].time, "2024-03-01T00:00:00");
    assert!(
        store
            .latest_readings(user, "nothing", 5, &all())
            .await
            .unwrap()
            .is_empty()
    );
}

/// A series' numeric values in a window, with their hour of day: text values, other
/// series and readings outside the window left out; `to` covers its whole day.
pub(super) async fn hourly_values_of_one_series_in_a_window(store: &dyn Store, user: &str) {
    let mut readings = vec![
        reading("Heart rate", "2024-03-01T23:59:00", "watch", 50.0),
        reading("Heart rate", "2024-03-02T00:05:00", "watch", 61.0),
        reading("Heart rate", "2024-03-02T07:30:00", "watch", 72.5),
        reading("Heart rate", "2024-03-03T23:55:00", "watch", 83.0),
        reading("Heart rate", "2024-03-04T00:00:00", "watch", 94.0),
        reading("Steps", "2024-03-02T08:00:00", "watch", 800.0),
    ];
    let mut text = reading("Heart rate", "2024-03-02T09:00:00", "watch", 0.0);
    text.value = ReadingValue::Text("high".into());
    readings.push(text);
    store.put_readings(user, &readings).await.unwrap();
    let days = window(Some("2024-03-02"), Some("2024-03-03"));
    let mut values: Vec<(u8, f64)> = store
        .hourly_values(user, "heart rate", &days)
        .await
        .unwrap()
        .iter()
        .map(|v| (v.hour, v.value))
        .collect();
    values.sort_by(|a, b| a.1.total_cmp(&b.1));
    assert_eq!(values, [(0, 61.0), (7, 72.5), (23, 83.0)]);
    let every = store
        .hourly_values(user, "Heart rate", &all())
        .await
        .unwrap();
    assert_eq!(every.len(), 5, "{every:?}");
    assert!(
        store
            .hourly_values(user, "nothing", &all())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Writers racing on the same day of the same indicator lose nothing: every reading
/// is kept, and the rollups and the catalogue count them all.
pub(super) async fn racing_writers_of_one_day_lose_nothing(store: &dyn Store, user: &str) {
    let writers = (0..4).map(|w| {
        let rows: Vec<Reading> = (0..6)
            .map(|i| {
                reading(
                    "Glucose",
                    &format!("2024-06-01T{:02}:00:00", i * 4),
                    &format!("writer {w}"),
                    f64::from(w * 10 + i),
                )
            })
            .collect();
        async move { store.put_readings(user, &rows).await.unwrap() }
    });
    futures_util::future::join_all(writers).await;
    assert_eq!(store.readings(user, &all()).await.unwrap().len(), 24);
    let days = store
        .rollups(user, "glucose", Period::Day, "2024-06-01", "2024-06-01")
        .await
        .unwrap();
    assert_eq!(days.iter().map(|d| d.count).sum::<u64>(), 24);
    let months = store
        .rollups(user, "glucose", Period::Month, "2024-06", "2024-06")
        .await
        .unwrap();
    assert_eq!(months.iter().map(|m| m.count).sum::<u64>(), 24);
    assert_eq!(store.catalogue(user).await.unwrap()[0].summary.count, 24);
}
