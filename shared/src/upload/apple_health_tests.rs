use std::io::Write;

use super::*;

/// The head of a real export: the declaration and (part of) Apple's internal DTD.
const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE HealthData [
<!-- HealthKit Export Version: 14 -->
<!ELEMENT HealthData (ExportDate,Me,(Record|Correlation|Workout|ActivitySummary|ClinicalRecord|Audiogram|VisionPrescription)*)>
<!ATTLIST HealthData
  locale CDATA #REQUIRED
>
<!ELEMENT Record ((MetadataEntry|HeartRateVariabilityMetadataList)*)>
<!ATTLIST Record
  type          CDATA #REQUIRED
  unit          CDATA #IMPLIED
  value         CDATA #IMPLIED
  sourceName    CDATA #REQUIRED
  startDate     CDATA #REQUIRED
  endDate       CDATA #REQUIRED
>
<!-- Note: Any Records that appear as children of a correlation also appear as top-level records in this document. -->
<!ELEMENT Correlation ((MetadataEntry|Record)*)>
]>
<HealthData locale="en_US">
 <ExportDate value="2026-03-01 09:00:00 +0100"/>
 <Me HKCharacteristicTypeIdentifierDateOfBirth="" HKCharacteristicTypeIdentifierBiologicalSex="HKBiologicalSexNotSet"/>
"#;

const TAIL: &str = "</HealthData>\n";

fn record(kind: &str, unit: &str, value: &str, start: &str, end: &str) -> String {
    format!(
        " <Record type=\"{kind}\" sourceName=\"Jo&apos;s Watch\" sourceVersion=\"10.1\" device=\"&lt;&lt;HKDevice: 0x1&gt;&gt;\" unit=\"{unit}\" creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\" value=\"{value}\">\n  <MetadataEntry key=\"HKMetadataKeyHeartRateMotionContext\" value=\"0\"/>\n </Record>\n"
    )
}

fn export(body: &str) -> String {
    format!("{HEAD}{body}{TAIL}")
}

fn parse(xml: &str) -> Result<(Vec<Reading>, AppleHealthReport), UploadError> {
    let mut readings = Vec::new();
    let report = stream_apple_health_xml(xml.as_bytes(), &mut |r| {
        readings.push(r);
        Ok(())
    })?;
    Ok((readings, report))
}

const T: &str = "2026-02-03 07:15:00 +0100";
const T2: &str = "2026-02-03 07:16:00 +0100";

#[test]
fn quantity_records_become_readings_with_units_and_codes() {
    let q = |k: &str| format!("HKQuantityTypeIdentifier{k}");
    let body = [
        record(&q("HeartRate"), "count/min", "72", T, T2),
        record(&q("RestingHeartRate"), "count/min", "55", T, T2),
        record(&q("HeartRateVariabilitySDNN"), "ms", "48.5", T, T2),
        record(&q("StepCount"), "count", "1234", T, T2),
        record(&q("BloodGlucose"), "mg/dL", "104", T, T2),
        record(
            &q("BloodGlucose"),
            "mmol<180.1558800000541>/L",
            "5.8",
            T2,
            T2,
        ),
        record(&q("BodyMass"), "lb", "165.2", T, T),
        record(&q("BodyFatPercentage"), "%", "0.25", T, T),
        record(&q("OxygenSaturation"), "%", "0.97", T, T),
        record(&q("RespiratoryRate"), "count/min", "14.5", T, T),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    assert_eq!((report.records, report.imported), (10, 10));
    let got: Vec<(&str, f64, &str, &str)> = readings
        .iter()
        .map(|r| {
            let ReadingValue::Number(n) = r.value else {
                panic!("not a number")
            };
            (
                r.indicator.as_str(),
                (n * 1e6).round() / 1e6,
                r.unit.as_deref().unwrap_or(""),
                r.code.as_deref().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Heart rate", 72.0, "/min", "8867-4"),
            ("Resting heart rate", 55.0, "/min", "40443-4"),
            ("Heart rate variability SDNN", 48.5, "ms", "80404-7"),
            ("Steps", 1234.0, "steps", "55423-8"),
            // The catalogue's names and canonical units:
            ("Glucose", 104.0, "mg/dL", "2339-0"),
            // 5.8 mmol/L × 18.016 = 104.4928 mg/dL
            ("Glucose", 104.4928, "mg/dL", "2339-0"),
            // 165.2 lb × 0.45359237 = 74.933459524 kg
            ("Body weight", 74.93346, "kg", "29463-7"),
            ("Body fat percentage", 25.0, "%", "41982-0"),
            ("Oxygen saturation", 97.0, "%", "59408-5"),
            ("Respiratory rate", 14.5, "/min", "9279-1"),
        ]
    );
    let first = &readings[0];
    assert_eq!(first.time, "2026-02-03T07:15:00", "local time as exported");
    assert!(first.offset.is_some(), "the export's offset is kept");
    assert_eq!(first.source, "Jo's Watch");
    assert_eq!(first.code_system.as_deref(), Some("LOINC"));
}

/// A sleep record of `source` (`stage` without Apple's prefix).
fn sleep_of(source: &str, stage: &str, start: &str, end: &str) -> String {
    format!(
        " <Record type=\"{SLEEP_TYPE}\" sourceName=\"{source}\" sourceVersion=\"10.1\" creationDate=\"{end}\" startDate=\"{start}\" endDate=\"{end}\" value=\"HKCategoryValueSleepAnalysis{stage}\"/>\n"
    )
}

/// A sleep record of Jo's Watch.
fn sleep(stage: &str, start: &str, end: &str) -> String {
    sleep_of("Jo&apos;s Watch", stage, start, end)
}

/// (night's time, offset, source, name, minutes) of each reading.
fn nights(readings: &[Reading]) -> Vec<(&str, &str, &str, &str, f64)> {
    readings
        .iter()
        .map(|r| {
            let ReadingValue::Number(n) = r.value else {
                panic!("not a number")
            };
            assert_eq!(r.unit.as_deref(), Some("min"));
            assert_eq!(
                (&r.code_system, &r.code, &r.original),
                (&None, &None, &None)
            );
            (
                r.time.as_str(),
                r.offset.as_deref().unwrap_or(""),
                r.source.as_str(),
                r.indicator.as_str(),
                n,
            )
        })
        .collect()
}

#[test]
fn a_night_of_sleep_is_one_set_of_readings_dated_by_its_morning() {
    // One night from the Watch, 23:00 (-0800) to 07:00 the next day:
    //   core  23:10-01:10 = 120, deep 01:10-02:00 = 50, core 02:00-04:50 = 170,
    //   REM   04:50-05:40 =  50, awake 05:40-05:50 = 10, core 05:50-06:50 = 60,
    //   InBed 23:00-07:00 = 480.
    // asleep = 120 + 50 + 170 + 50 + 60 = 450; core = 120 + 170 + 60 = 350; deep 50;
    // REM 50; awake 10; in bed 480. Dated the morning's date (2026-01-15), timed at the
    // latest end (07:00) with its offset.
    let at = |day: u32, hm: &str| format!("2026-01-{day} {hm}:00 -0800");
    let body = [
        sleep("InBed", &at(14, "23:00"), &at(15, "07:00")),
        sleep("AsleepCore", &at(14, "23:10"), &at(15, "01:10")),
        sleep("AsleepDeep", &at(15, "01:10"), &at(15, "02:00")),
        sleep("AsleepCore", &at(15, "02:00"), &at(15, "04:50")),
        sleep("AsleepREM", &at(15, "04:50"), &at(15, "05:40")),
        sleep("Awake", &at(15, "05:40"), &at(15, "05:50")),
        sleep("AsleepCore", &at(15, "05:50"), &at(15, "06:50")),
        // A reading of another type after the night: it is handed on first, the sleep
        // readings come after the last record.
        record(
            "HKQuantityTypeIdentifierHeartRate",
            "count/min",
            "58",
            &at(15, "07:05"),
            &at(15, "07:05"),
        ),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    assert_eq!(readings[0].indicator, "Heart rate");
    let w = "Jo's Watch";
    let t = "2026-01-15T07:00:00";
    assert_eq!(
        nights(&readings[1..]),
        [
            (t, "-08:00", w, "Sleep REM", 50.0),
            (t, "-08:00", w, "Sleep asleep", 450.0),
            (t, "-08:00", w, "Sleep awake", 10.0),
            (t, "-08:00", w, "Sleep core", 350.0),
            (t, "-08:00", w, "Sleep deep", 50.0),
            (t, "-08:00", w, "Sleep in bed", 480.0),
        ]
    );
    // 8 records; imported counts what was handed on: 1 heart rate + 6 sleep readings.
    assert_eq!((report.records, report.imported, report.invalid), (8, 7, 0));
    assert_eq!(report.imported, readings.len() as u64);
}

#[test]
fn sleep_stages_daylight_saving_and_unknown_stages() {
    let body = [
        sleep(
            "InBed",
            "2026-02-02 23:00:00 +0100",
            "2026-02-03 07:00:00 +0100",
        ),
        // Ends 23:55:30, after 18:00: the night ending on the 3rd.
        sleep(
            "AsleepCore",
            "2026-02-02 23:10:00 +0100",
            "2026-02-02 23:55:30 +0100",
        ),
        sleep(
            "AsleepDeep",
            "2026-02-02 23:55:30 +0100",
            "2026-02-03 00:40:30 +0100",
        ),
        sleep(
            "AsleepREM",
            "2026-02-03 00:40:30 +0100",
            "2026-02-03 01:00:30 +0100",
        ),
        sleep(
            "Awake",
            "2026-02-03 01:00:30 +0100",
            "2026-02-03 01:02:30 +0100",
        ),
        sleep(
            "AsleepUnspecified",
            "2026-02-03 01:02:30 +0100",
            "2026-02-03 02:02:30 +0100",
        ),
        // Across a daylight-saving change: 01:30 +0100 to 03:30 +0200 is one hour; only
        // Asleep (pre-iOS 16), no in bed: only `Sleep asleep`, at the end's offset.
        sleep(
            "Asleep",
            "2026-03-29 01:30:00 +0100",
            "2026-03-29 03:30:00 +0200",
        ),
        sleep("Mystery", T, T2),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    // The 3rd: core 45.5, deep 45, REM 20, unspecified 60: asleep 170.5; awake 2;
    // in bed 480; woken at 07:00 (the in-bed end).
    let (w, feb, mar) = ("Jo's Watch", "2026-02-03T07:00:00", "2026-03-29T03:30:00");
    assert_eq!(
        nights(&readings),
        [
            (feb, "+01:00", w, "Sleep REM", 20.0),
            (feb, "+01:00", w, "Sleep asleep", 170.5),
            (feb, "+01:00", w, "Sleep awake", 2.0),
            (feb, "+01:00", w, "Sleep core", 45.5),
            (feb, "+01:00", w, "Sleep deep", 45.0),
            (feb, "+01:00", w, "Sleep in bed", 480.0),
            (mar, "+02:00", w, "Sleep asleep", 60.0),
        ]
    );
    assert_eq!(report.skipped.get(SLEEP_TYPE), Some(&1), "an unknown stage");
    assert_eq!(report.imported, 7);
}

#[test]
fn the_same_night_from_two_sources_is_two_sets() {
    // The Watch: core 00:00-06:00 (360), in bed 23:30-06:30 (420), woken 06:30.
    // AutoSleep (sorted first by name): asleep 23:45-06:15 (390, unspecified), no in bed,
    // woken 06:15.
    let body = [
        sleep(
            "InBed",
            "2026-01-14 23:30:00 +0000",
            "2026-01-15 06:30:00 +0000",
        ),
        sleep(
            "AsleepCore",
            "2026-01-15 00:00:00 +0000",
            "2026-01-15 06:00:00 +0000",
        ),
        sleep_of(
            "AutoSleep",
            "AsleepUnspecified",
            "2026-01-14 23:45:00 +0000",
            "2026-01-15 06:15:00 +0000",
        ),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    let (a, w) = ("AutoSleep", "Jo's Watch");
    let (ta, tw) = ("2026-01-15T06:15:00", "2026-01-15T06:30:00");
    assert_eq!(
        nights(&readings),
        [
            (ta, "+00:00", a, "Sleep asleep", 390.0),
            (tw, "+00:00", w, "Sleep asleep", 360.0),
            (tw, "+00:00", w, "Sleep core", 360.0),
            (tw, "+00:00", w, "Sleep in bed", 420.0),
        ]
    );
    assert_eq!(report.imported, 4);
}

#[test]
fn overlapping_intervals_of_one_stage_count_once() {
    let at = |hm: &str| format!("2026-01-15 {hm}:00 +0100");
    let body = [
        // Core: 00:00-02:00 and 01:00-03:00 unite to 00:00-03:00 (180); 01:30-02:30 lies
        // inside; 00:00-02:00 again is a copy; 04:00-04:30 apart (30): core 210.
        sleep("AsleepCore", &at("00:00"), &at("02:00")),
        sleep("AsleepCore", &at("01:00"), &at("03:00")),
        sleep("AsleepCore", &at("01:30"), &at("02:30")),
        sleep("AsleepCore", &at("00:00"), &at("02:00")),
        sleep("AsleepCore", &at("04:00"), &at("04:30")),
        // Deep overlaps core but is another stage: 02:00-03:00 (60) counts.
        sleep("AsleepDeep", &at("02:00"), &at("03:00")),
        // Asleep and AsleepUnspecified are one HealthKit value: 05:00-06:00 once (60).
        sleep("Asleep", &at("05:00"), &at("06:00")),
        sleep("AsleepUnspecified", &at("05:00"), &at("06:00")),
        // Two in-bed intervals, one inside the other: 00:00-07:00 (420).
        sleep("InBed", &at("00:00"), &at("07:00")),
        sleep("InBed", &at("00:30"), &at("06:00")),
    ]
    .concat();
    let (readings, _) = parse(&export(&body)).unwrap();
    // asleep = core 210 + deep 60 + unspecified 60 = 330.
    let (t, w) = ("2026-01-15T07:00:00", "Jo's Watch");
    assert_eq!(
        nights(&readings),
        [
            (t, "+01:00", w, "Sleep asleep", 330.0),
            (t, "+01:00", w, "Sleep core", 210.0),
            (t, "+01:00", w, "Sleep deep", 60.0),
            (t, "+01:00", w, "Sleep in bed", 420.0),
        ]
    );
}

#[test]
fn a_nap_ending_at_15_is_that_days_night() {
    let at = |hm: &str| format!("2026-01-15 {hm}:00 +0900");
    let body = [
        // The night: core 00:00-06:00 (360).
        sleep("AsleepCore", &at("00:00"), &at("06:00")),
        // The nap: 13:30-15:00 (90), ends before 18:00: the same day's night, whose wake
        // time becomes the nap's end. asleep = 360 + 90 = 450.
        sleep("AsleepUnspecified", &at("13:30"), &at("15:00")),
    ]
    .concat();
    let (readings, _) = parse(&export(&body)).unwrap();
    let (t, w) = ("2026-01-15T15:00:00", "Jo's Watch");
    assert_eq!(
        nights(&readings),
        [
            (t, "+09:00", w, "Sleep asleep", 450.0),
            (t, "+09:00", w, "Sleep core", 360.0),
        ]
    );
}

#[test]
fn an_interval_ending_after_18_belongs_to_the_next_days_night() {
    let body = [
        // Ends at 18:00:00 exactly: not after 18:00, the 15th's night (60).
        sleep(
            "AsleepUnspecified",
            "2026-01-15 17:00:00 -0300",
            "2026-01-15 18:00:00 -0300",
        ),
        // Ends at 23:50: the 16th's night (110); its latest end is the evening before,
        // so it is timed at midnight of the 16th.
        sleep(
            "AsleepCore",
            "2026-01-15 22:00:00 -0300",
            "2026-01-15 23:50:00 -0300",
        ),
        // A source whose night runs on past the evening segment: woken 06:00 on the 16th.
        sleep_of(
            "Bed sensor",
            "InBed",
            "2026-01-15 22:30:00 -0300",
            "2026-01-15 23:59:00 -0300",
        ),
        sleep_of(
            "Bed sensor",
            "InBed",
            "2026-01-16 00:10:00 -0300",
            "2026-01-16 06:00:00 -0300",
        ),
    ]
    .concat();
    let (readings, _) = parse(&export(&body)).unwrap();
    // Bed sensor in bed: 22:30-23:59 (89) + 00:10-06:00 (350) = 439.
    let (b, w) = ("Bed sensor", "Jo's Watch");
    assert_eq!(
        nights(&readings),
        [
            ("2026-01-15T18:00:00", "-03:00", w, "Sleep asleep", 60.0),
            ("2026-01-16T06:00:00", "-03:00", b, "Sleep in bed", 439.0),
            ("2026-01-16T00:00:00", "-03:00", w, "Sleep asleep", 110.0),
            ("2026-01-16T00:00:00", "-03:00", w, "Sleep core", 110.0),
        ]
    );
}

#[test]
fn unusable_sleep_intervals_are_invalid() {
    let body = [
        // Negative.
        sleep(
            "AsleepCore",
            "2026-01-15 02:00:00 +0000",
            "2026-01-15 01:00:00 +0000",
        ),
        // A week and a second.
        sleep(
            "InBed",
            "2026-01-01 00:00:00 +0000",
            "2026-01-08 00:00:01 +0000",
        ),
        // No end.
        sleep("InBed", "2026-01-01 00:00:00 +0000", "soon"),
        // Its night would be 2201-01-01.
        sleep(
            "InBed",
            "2200-12-31 19:00:00 +0000",
            "2200-12-31 20:00:00 +0000",
        ),
        // Exactly a week is accepted: 10080 min, the night of the 8th.
        sleep(
            "InBed",
            "2026-01-01 00:00:00 +0000",
            "2026-01-08 00:00:00 +0000",
        ),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    assert_eq!(report.invalid, 4);
    assert_eq!(
        report.first_invalid.unwrap().problem,
        "the sleep interval is negative or longer than a week"
    );
    assert_eq!(
        nights(&readings),
        [(
            "2026-01-08T00:00:00",
            "+00:00",
            "Jo's Watch",
            "Sleep in bed",
            10080.0
        )]
    );
}

#[test]
fn a_night_keeps_at_most_2000_intervals() {
    // 2001 core intervals of 10 s back to back from 00:00: the last is invalid; the
    // first 2000 end at 05:33:20 (20000 s = 333.333 min, 333.33 rounded).
    let hms = |s: u32| {
        format!(
            "2026-01-15 {:02}:{:02}:{:02} +0000",
            s / 3600,
            s / 60 % 60,
            s % 60
        )
    };
    let body: String = (0..=MAX_SLEEP_INTERVALS_PER_NIGHT as u32)
        .map(|i| sleep("AsleepCore", &hms(i * 10), &hms(i * 10 + 10)))
        .collect();
    let (readings, report) = parse(&export(&body)).unwrap();
    assert_eq!((report.invalid, report.imported), (1, 2));
    let first = report.first_invalid.unwrap();
    assert_eq!(
        first.problem,
        format!(
            "more than {MAX_SLEEP_INTERVALS_PER_NIGHT} sleep intervals in one night of one source"
        )
    );
    assert_eq!(
        first.location,
        format!(
            "line {}",
            HEAD.lines().count() + 1 + MAX_SLEEP_INTERVALS_PER_NIGHT
        )
    );
    let (t, w) = ("2026-01-15T05:33:20", "Jo's Watch");
    assert_eq!(
        nights(&readings),
        [
            (t, "+00:00", w, "Sleep asleep", 333.33),
            (t, "+00:00", w, "Sleep core", 333.33),
        ]
    );
}

#[test]
fn sleep_nights_and_intervals_are_capped() {
    let day = |n: u64| {
        chrono::NaiveDate::from_ymd_opt(1900, 1, 1)
            .unwrap()
            .checked_add_days(chrono::Days::new(n))
            .unwrap()
    };
    let interval = |night: chrono::NaiveDate, source: &str| SleepRecord {
        night,
        source: source.into(),
        stage: Stage::Core,
        start: 0,
        seconds: 60,
        end_local: night.and_time(chrono::NaiveTime::MIN),
        end_offset: 0,
    };
    // (source, night) pairs: 200000 (two sources, 100000 nights each), then one more
    // is refused while a pair already kept still takes intervals.
    let mut sleep = SleepNights::default();
    for n in 0..(MAX_SLEEP_NIGHTS / 2) as u64 {
        sleep.add(interval(day(n), "a")).unwrap();
        sleep.add(interval(day(n), "b")).unwrap();
    }
    assert_eq!(
        sleep.add(interval(day(0), "c")),
        Err("more than 200000 nights of sleep (per source) in one export")
    );
    assert_eq!(sleep.add(interval(day(0), "a")), Ok(()));
    assert_eq!(sleep.sources.len(), 2);
    assert_eq!(format!("{MAX_SLEEP_NIGHTS}"), "200000");
    let readings: Vec<Reading> = sleep.into_readings().collect();
    // Two readings (asleep, core) per pair.
    assert_eq!(readings.len(), 2 * MAX_SLEEP_NIGHTS);
    assert_eq!(
        (readings[0].source.as_str(), readings[0].time.as_str()),
        ("a", "1900-01-01T00:00:00")
    );
    assert_eq!(readings[2].source, "b");

    // Intervals in all: 2000000 (1000 pairs of 2000), then one more is refused.
    let mut sleep = SleepNights::default();
    let per_night = MAX_SLEEP_INTERVALS_PER_NIGHT;
    for n in 0..(MAX_SLEEP_INTERVALS / per_night) as u64 {
        for _ in 0..per_night {
            sleep.add(interval(day(n), "a")).unwrap();
        }
    }
    assert_eq!(
        sleep.add(interval(day(5000), "a")),
        Err("more than 2000000 sleep intervals in one export")
    );
    assert_eq!(format!("{MAX_SLEEP_INTERVALS}"), "2000000");
}

#[test]
fn blood_pressure_inside_a_correlation_is_not_duplicated() {
    let sys = |v: &str| {
        record(
            "HKQuantityTypeIdentifierBloodPressureSystolic",
            "mmHg",
            v,
            T,
            T,
        )
    };
    let dia = |v: &str| {
        record(
            "HKQuantityTypeIdentifierBloodPressureDiastolic",
            "mmHg",
            v,
            T,
            T,
        )
    };
    let correlation = |inner: String| {
        format!(
            " <Correlation type=\"HKCorrelationTypeIdentifierBloodPressure\" sourceName=\"Cuff\" startDate=\"{T}\" endDate=\"{T}\">\n  <MetadataEntry key=\"k\" value=\"v\"/>\n{inner} </Correlation>\n"
        )
    };
    // Apple lists the records at the top level and again in their correlation; a
    // correlation whose records are not at the top level still counts once.
    let body = [
        sys("128"),
        dia("82"),
        correlation([sys("128"), dia("82")].concat()),
        correlation([sys("131"), dia("85")].concat()),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    let values: Vec<(&str, ReadingValue)> = readings
        .iter()
        .map(|r| (r.code.as_deref().unwrap_or(""), r.value.clone()))
        .collect();
    assert_eq!(
        values,
        [
            ("8480-6", ReadingValue::Number(128.0)),
            ("8462-4", ReadingValue::Number(82.0)),
            ("8480-6", ReadingValue::Number(131.0)),
            ("8462-4", ReadingValue::Number(85.0)),
        ]
    );
    assert_eq!(
        (report.records, report.imported, report.duplicates),
        (6, 4, 2)
    );
}

#[test]
fn unknown_types_are_counted_and_skipped_in_a_bounded_map() {
    let mut body = String::new();
    for i in 0..150 {
        body.push_str(&record(
            &format!("HKQuantityTypeIdentifierOdd{i}"),
            "x",
            "1",
            T,
            T,
        ));
    }
    body.push_str(&record("HKQuantityTypeIdentifierOdd0", "x", "1", T, T));
    body.push_str(&record(
        "HKQuantityTypeIdentifierHeartRate",
        "count/min",
        "60",
        T,
        T,
    ));
    body.push_str(" <Workout workoutActivityType=\"HKWorkoutActivityTypeRunning\" duration=\"30\"><WorkoutEvent type=\"x\"/></Workout>\n");
    body.push_str(" <ActivitySummary dateComponents=\"2026-02-03\" activeEnergyBurned=\"400\"/>\n");
    let (readings, report) = parse(&export(&body)).unwrap();
    assert_eq!(readings.len(), 1);
    assert_eq!(report.records, 152);
    assert_eq!(report.skipped.len(), MAX_SKIPPED_TYPES + 1);
    assert_eq!(report.skipped.get("HKQuantityTypeIdentifierOdd0"), Some(&2));
    assert_eq!(report.skipped.get(OTHER_TYPES), Some(&50));
    assert_eq!(report.skipped.values().sum::<u64>(), 151);
}

#[test]
fn unusable_records_of_known_types_are_counted_with_the_first_line() {
    let hr = "HKQuantityTypeIdentifierHeartRate";
    let body = [
        record(hr, "count/min", "72", T, T),
        record(hr, "count/min", "fast", T, T),
        record(hr, "count/min", "72", "1850-01-01 00:00:00 +0000", T),
        record(hr, "count/min", "72", "yesterday", T),
        record("HKQuantityTypeIdentifierBodyMass", &"u".repeat(65), "70", T, T),
        record(hr, "count/min", "inf", T, T),
        format!(
            " <Record type=\"{hr}\" sourceName=\"{}\" unit=\"count/min\" startDate=\"{T}\" endDate=\"{T}\" value=\"70\"/>\n",
            "s".repeat(201)
        ),
    ]
    .concat();
    let (readings, report) = parse(&export(&body)).unwrap();
    assert_eq!(readings.len(), 1);
    assert_eq!(report.invalid, 6);
    let first = report.first_invalid.unwrap();
    let line = HEAD.lines().count() + 4; // each record takes three lines
    assert_eq!(first.location, format!("line {line}"));
    assert_eq!(first.problem, "value is not a number");
}

#[test]
fn a_missing_source_is_apple_health() {
    let xml = export(&format!(
        " <Record type=\"HKQuantityTypeIdentifierStepCount\" unit=\"count\" startDate=\"{T}\" endDate=\"{T}\" value=\"5\"/>\n"
    ));
    let (readings, _) = parse(&xml).unwrap();
    assert_eq!(readings[0].source, DEFAULT_SOURCE);
}

#[test]
fn malformed_xml_is_an_error_with_its_line() {
    let hr = record("HKQuantityTypeIdentifierHeartRate", "count/min", "72", T, T);
    let line_after_head = HEAD.lines().count() as u64 + 1;
    let cases: Vec<(String, u64, &str)> = vec![
        (
            export(&format!("{hr} <Record type=\"x\">\n </Correlation>\n")),
            line_after_head + 4,
            "malformed XML (mismatched or missing tags)",
        ),
        (
            format!("{HEAD}{hr}"),
            line_after_head + 3,
            "the file ends inside an element (truncated?)",
        ),
        (
            export(" <Record type=\"a\" type=\"b\"/>\n"),
            line_after_head,
            "malformed XML (an attribute)",
        ),
        (
            export(&format!(
                " <Record type=\"HKQuantityTypeIdentifierHeartRate\" sourceName=\"&bomb;\" startDate=\"{T}\" value=\"1\"/>\n"
            )),
            line_after_head,
            "malformed XML (an undefined entity or a bad character reference)",
        ),
        (
            "<?xml version=\"1.0\"?>\n<rss>\n</rss>\n".to_string(),
            2,
            "not an Apple Health export (the root element is not HealthData)",
        ),
        (
            String::new(),
            1,
            "not an Apple Health export (no HealthData element)",
        ),
    ];
    for (xml, line, problem) in cases {
        let err = parse(&xml).unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            (format!("line {line}").as_str(), problem),
            "{xml}"
        );
    }
}

#[test]
fn depth_and_tag_length_are_bounded() {
    let deep = export(&format!(
        "{}{}",
        "<a>".repeat(MAX_DEPTH + 5),
        "</a>".repeat(MAX_DEPTH + 5)
    ));
    let err = parse(&deep).unwrap_err();
    assert_eq!(
        err.problem,
        format!("elements are nested deeper than {MAX_DEPTH}")
    );

    // A tag that never closes stops at the bound instead of growing the buffer: the
    // reader is infinite, so only the bound ends this.
    let endless = io::Read::chain(HEAD.as_bytes(), io::repeat(b'x'));
    let endless = io::Read::chain(b" <Record type=\"".as_slice(), endless);
    let err = stream_apple_health_xml(io::BufReader::new(endless), &mut |_| Ok(())).unwrap_err();
    assert_eq!(err.problem, EventTooLong.to_string());
}

/// Elements of any name count, and so do the bytes, against the export's
/// bounds; a real export's records pass at the same bounds.
#[test]
fn many_non_record_elements_and_too_many_bytes_are_refused() {
    let many = export(&"<Other/>\n".repeat(2_000));
    let limits = XmlLimits {
        bytes: MAX_XML_BYTES,
        nodes: 1_000,
    };
    let err = stream_xml(many.as_bytes(), &mut |_| Ok(()), limits).unwrap_err();
    assert_eq!(err.problem, "more than 1000 XML nodes in one export");
    let line: u64 = err.location.strip_prefix("line ").unwrap().parse().unwrap();
    assert!(line < 600, "{err}");

    let hr = record("HKQuantityTypeIdentifierHeartRate", "count/min", "72", T, T);
    let records = export(&hr.repeat(100));
    assert!(stream_xml(records.as_bytes(), &mut |_| Ok(()), limits).is_ok());

    let bytes = XmlLimits {
        bytes: 16 << 10,
        nodes: MAX_XML_NODES,
    };
    let err = stream_xml(records.as_bytes(), &mut |_| Ok(()), bytes).unwrap_err();
    assert_eq!(
        err.problem,
        "the export is larger than 16 KiB (decompressed)"
    );
    assert!(err.location.starts_with("line "), "{err}");
    let exact = stream_xml(
        records.as_bytes(),
        &mut |_| Ok(()),
        XmlLimits {
            bytes: records.len() as u64,
            nodes: MAX_XML_NODES,
        },
    );
    assert!(exact.is_ok(), "a file of exactly the bound passes");
}

/// An `export.xml` that inflates past the ratio, or an entry before it that
/// does, fails fast with what was too large.
#[test]
fn a_zip_bomb_is_refused_by_its_ratio() {
    let mut bomb = HEAD.as_bytes().to_vec();
    bomb.extend(b"<Other/>".repeat(8 << 20));
    let zip = [
        zip_entry("apple_health_export/export.xml", &bomb, true, true),
        central_directory(),
    ]
    .concat();
    assert!(zip.len() < 1 << 20, "{} bytes", zip.len());
    let err = parse_zip(&zip).unwrap_err();
    assert_eq!(err.location, "zip");
    assert!(err.problem.contains("100 times"), "{}", err.problem);

    let junk = vec![0u8; 64 << 20];
    let zip = [
        zip_entry(
            "apple_health_export/electrocardiograms/a.csv",
            &junk,
            true,
            true,
        ),
        zip_entry(
            "apple_health_export/export.xml",
            export("").as_bytes(),
            true,
            true,
        ),
        central_directory(),
    ]
    .concat();
    let err = parse_zip(&zip).unwrap_err();
    assert_eq!(err.location, "zip");
    assert!(err.problem.contains("100 times"), "{}", err.problem);
}

#[test]
fn the_callers_error_ends_the_import() {
    let hr = record("HKQuantityTypeIdentifierHeartRate", "count/min", "72", T, T);
    let xml = export(&[hr.clone(), hr.clone(), hr].concat());
    let mut calls = 0;
    let err = stream_apple_health_xml(xml.as_bytes(), &mut |_| {
        calls += 1;
        if calls == 2 {
            Err(error(9, "store full"))
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert_eq!((calls, err.problem.as_str()), (2, "store full"));
}

#[test]
fn the_callers_error_ends_the_sleep_readings_too() {
    // One night: core and in bed, two readings after the last record; the callback
    // refuses the second (`Sleep core` comes before `Sleep in bed`, after `Sleep asleep`).
    let body = [
        sleep(
            "InBed",
            "2026-01-14 23:00:00 +0000",
            "2026-01-15 07:00:00 +0000",
        ),
        sleep(
            "AsleepCore",
            "2026-01-14 23:30:00 +0000",
            "2026-01-15 06:30:00 +0000",
        ),
    ]
    .concat();
    let xml = export(&body);
    let mut names = Vec::new();
    let err = stream_apple_health_xml(xml.as_bytes(), &mut |r| {
        names.push(r.indicator);
        if names.len() == 2 {
            Err(error(9, "store full"))
        } else {
            Ok(())
        }
    })
    .unwrap_err();
    assert_eq!(err.problem, "store full");
    assert_eq!(names, ["Sleep asleep", "Sleep core"]);
}

/// One zip entry as a streaming zipper writes it: deflated (or stored), with the sizes
/// in the local header or in a data descriptor after the data.
fn zip_entry(name: &str, data: &[u8], deflate: bool, descriptor: bool) -> Vec<u8> {
    let body = if deflate {
        let mut encoder =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    } else {
        data.to_vec()
    };
    let crc = crc32fast::hash(data);
    let (c, u) = (body.len() as u32, data.len() as u32);
    let mut out = Vec::new();
    out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    out.extend_from_slice(&(if descriptor { 8u16 } else { 0 }).to_le_bytes());
    out.extend_from_slice(&(if deflate { 8u16 } else { 0 }).to_le_bytes());
    out.extend_from_slice(&[0; 4]); // time, date
    for field in if descriptor { [0, 0, 0] } else { [crc, c, u] } {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&[0x55, 0x58, 0, 0]); // an empty extra field
    out.extend_from_slice(&body);
    if descriptor {
        out.extend_from_slice(&0x0807_4b50u32.to_le_bytes());
        for field in [crc, c, u] {
            out.extend_from_slice(&field.to_le_bytes());
        }
    }
    out
}

/// A zip64 entry as Python's and Apple's streaming zippers write one past 4 GiB: sizes
/// 0xFFFFFFFF in the header, a zip64 extra field, 8-byte sizes in the data descriptor.
fn zip64_entry(name: &str, data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(data).unwrap();
    let body = encoder.finish().unwrap();
    let mut out = Vec::new();
    out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
    out.extend_from_slice(&45u16.to_le_bytes());
    out.extend_from_slice(&8u16.to_le_bytes());
    out.extend_from_slice(&8u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]); // time, date, CRC
    out.extend_from_slice(&[0xff; 8]);
    out.extend_from_slice(&(name.len() as u16).to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&[1, 0, 16, 0]);
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&body);
    out.extend_from_slice(&0x0807_4b50u32.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out
}

fn central_directory() -> Vec<u8> {
    let mut out = 0x0201_4b50u32.to_le_bytes().to_vec();
    out.extend_from_slice(&[0; 42]);
    out
}

fn parse_zip(zip: &[u8]) -> Result<(Vec<Reading>, AppleHealthReport), UploadError> {
    let mut readings = Vec::new();
    // A reader without Seek, handing out a few bytes at a time.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(out.len()).min(777);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let report = stream_apple_health_zip(Trickle(zip), &mut |r| {
        readings.push(r);
        Ok(())
    })?;
    Ok((readings, report))
}

#[test]
fn export_zip_is_streamed_with_or_without_data_descriptors() {
    let mut body = String::new();
    for minute in 0..500 {
        let t = format!("2026-02-03 {:02}:{:02}:00 +0100", minute / 60, minute % 60);
        body.push_str(&record(
            "HKQuantityTypeIdentifierHeartRate",
            "count/min",
            &(60 + minute % 40).to_string(),
            &t,
            &t,
        ));
    }
    let xml = export(&body);
    let cda = b"<ClinicalDocument>...</ClinicalDocument>".repeat(100);
    for (name, descriptor, deflate) in [
        ("apple_health_export/export.xml", true, true),
        ("apple_health_export/export.xml", false, true),
        ("export.xml", false, false),
        ("Export/export.xml", true, true),
        ("apple_health_export/Export.xml", true, true),
    ] {
        let mut zip = zip_entry("apple_health_export/export_cda.xml", &cda, true, descriptor);
        zip.extend(zip_entry(
            "apple_health_export/workout-routes/r.gpx",
            b"<gpx/>",
            false,
            false,
        ));
        zip.extend(zip_entry(name, xml.as_bytes(), deflate, descriptor));
        zip.extend(zip_entry(
            "apple_health_export/electrocardiograms/e.csv",
            b"x",
            true,
            true,
        ));
        zip.extend(central_directory());
        let (readings, report) = parse_zip(&zip).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!((readings.len(), report.imported), (500, 500), "{name}");
        assert_eq!(readings[499].time, "2026-02-03T08:19:00");
    }
    let mut zip = zip64_entry("apple_health_export/export_cda.xml", &cda);
    zip.extend(zip64_entry(
        "apple_health_export/export.xml",
        xml.as_bytes(),
    ));
    let (readings, _) = parse_zip(&zip).unwrap();
    assert_eq!(readings.len(), 500, "zip64");
}

#[test]
fn a_damaged_or_foreign_zip_is_refused() {
    let xml = export(&record(
        "HKQuantityTypeIdentifierHeartRate",
        "count/min",
        "72",
        T,
        T,
    ));
    let mut no_export = zip_entry("apple_health_export/export_cda.xml", b"<a/>", true, true);
    no_export.extend(central_directory());
    let mut damaged = zip_entry("apple_health_export/export.xml", xml.as_bytes(), true, true);
    let crc_at = damaged.len() - 12;
    damaged[crc_at] ^= 0xff;
    let mut truncated = zip_entry(
        "apple_health_export/export.xml",
        xml.as_bytes(),
        true,
        false,
    );
    truncated.truncate(truncated.len() - 40);
    let mut encrypted = zip_entry(
        "apple_health_export/export.xml",
        xml.as_bytes(),
        true,
        false,
    );
    encrypted[6] |= 1;
    let cases: [(&[u8], &str); 5] = [
        (&no_export, "the archive holds no export.xml"),
        (
            &damaged,
            "export.xml is damaged in the archive (checksum mismatch)",
        ),
        (&truncated, "export.xml is damaged in the archive"),
        (&encrypted, "encrypted archives are not supported"),
        (xml.as_bytes(), "not a zip archive (or a damaged one)"),
    ];
    for (zip, problem) in cases {
        let err = parse_zip(zip).unwrap_err();
        assert_eq!(
            (err.location.as_str(), err.problem.as_str()),
            ("zip", problem)
        );
    }
    // Malformed XML inside the zip still names its line.
    let bad = format!("{HEAD}<Record>\n</HealthData>\n");
    let zip = zip_entry("apple_health_export/export.xml", bad.as_bytes(), true, true);
    let err = parse_zip(&zip).unwrap_err();
    assert_eq!(err.location, format!("line {}", HEAD.lines().count() + 2));
}

/// The benchmark's generator (`scripts/gen-dataset`) in a tiny run: every file it writes
/// parses with today's parsers.
#[test]
fn the_generated_dataset_parses() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = std::env::temp_dir().join(format!("gen-dataset-{}", std::process::id()));
    let status = std::process::Command::new("python3")
        .arg(root.join("scripts/gen-dataset"))
        .args(["--out"])
        .arg(&dir)
        .args([
            "--days",
            "4",
            "--genome-rows",
            "3000",
            "--apple-mb",
            "1",
            "--seed",
            "7",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs scripts/gen-dataset");
    assert!(status.success());
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();

    let (readings, _) = super::super::parse_health_csv(&read("readings-3y.csv"), "upload").unwrap();
    assert!(readings.len() > 4 * 288 * 2, "{}", readings.len());
    let indicators: HashSet<&str> = readings.iter().map(|r| r.indicator.as_str()).collect();
    for name in [
        "Glucose",
        "Heart rate",
        "Steps",
        "Body weight",
        "Hemoglobin A1c",
        "LDL cholesterol",
    ] {
        assert!(indicators.contains(name), "{name}");
    }
    assert!(
        !super::super::parse_health_csv(&read("readings-30d.csv"), "upload")
            .unwrap()
            .0
            .is_empty()
    );

    let genome = super::super::parse_genotype_file(&read("genome.txt")).unwrap();
    assert_eq!(genome.len(), 3000);

    let (from_xml, report) = {
        let mut n = Vec::new();
        let report = stream_apple_health_xml(
            io::BufReader::new(std::fs::File::open(dir.join("export.xml")).unwrap()),
            &mut |r| {
                n.push(r);
                Ok(())
            },
        )
        .unwrap();
        (n, report)
    };
    assert!(report.imported > 1000, "{report:?}");
    assert_eq!(report.invalid, 0, "{report:?}");
    assert!(
        report.duplicates > 0,
        "blood pressure in correlations: {report:?}"
    );
    assert!(!report.skipped.is_empty(), "{report:?}");
    let kinds: HashSet<&str> = from_xml.iter().map(|r| r.indicator.as_str()).collect();
    for name in [
        "Heart rate",
        "Steps",
        "Glucose",
        "Sleep core",
        "Systolic blood pressure",
    ] {
        assert!(kinds.contains(name), "{name}");
    }
    let mut from_zip = 0;
    let zipped = stream_apple_health_zip(
        std::fs::File::open(dir.join("export.zip")).unwrap(),
        &mut |_| {
            from_zip += 1;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!((zipped, from_zip), (report, from_xml.len()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Throughput and peak memory on a generated export (release build):
/// `scripts/gen-dataset --out /tmp/ds --apple-mb 200` then
/// `APPLE_HEALTH_XML=/tmp/ds/export.xml cargo test --release -p mirobody --lib apple_health_throughput -- --ignored --nocapture`
/// (`APPLE_HEALTH_ZIP=/tmp/ds/export.zip` measures the zip).
#[test]
#[ignore = "a measurement on a generated file; prints numbers"]
fn apple_health_throughput() {
    let peak_kb = || {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmHWM:"))
                    .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            })
            .unwrap_or(0)
    };
    for (var, zip) in [("APPLE_HEALTH_XML", false), ("APPLE_HEALTH_ZIP", true)] {
        let Ok(path) = std::env::var(var) else {
            continue;
        };
        let bytes = std::fs::metadata(&path).unwrap().len();
        let file = std::fs::File::open(&path).unwrap();
        let before = peak_kb();
        let started = std::time::Instant::now();
        let mut count = 0u64;
        let mut each = |_: Reading| {
            count += 1;
            Ok(())
        };
        let report = if zip {
            stream_apple_health_zip(file, &mut each)
        } else {
            stream_apple_health_xml(io::BufReader::with_capacity(64 * 1024, file), &mut each)
        }
        .unwrap();
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{path}: {:.1} MB in {seconds:.2} s: {} records ({:.0} records/s, {:.1} MB/s), {} readings, {} duplicates, {} skipped; peak RSS {} MB (before {} MB)",
            bytes as f64 / 1e6,
            report.records,
            report.records as f64 / seconds,
            bytes as f64 / 1e6 / seconds,
            report.imported,
            report.duplicates,
            report.skipped.values().sum::<u64>(),
            peak_kb() / 1024,
            before / 1024,
        );
    }
}
