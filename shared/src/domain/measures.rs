//! The catalogue of measures: what each uploaded name is, how its values add
//! up, and which units it takes. The data is `shared/measures/measures.csv`, one row per
//! measure, reviewable as a table; this module reads it once per process and answers
//! lookups. [`Catalogue::canonical`] turns an uploaded reading into the measure's own
//! name and canonical unit, keeping what was sent as the reading's `original`.
//!
//! Owns the rules of names, kinds and units. Knows nothing of parsing files, storing or
//! answering; never logs a value.
//!
//! The table's columns:
//! - `name`: the display name; its indicator key ([`Reading::indicator_key`]) is the
//!   series key readings are stored under, so renaming a measure is a data migration.
//! - `kind`: `cumulative` (summed per day: steps, distance, energy), `discrete` (averaged,
//!   with extremes: heart rate, glucose, weight, lab results), `sleep` (one duration per
//!   night, dated by the morning it ends).
//! - `unit`: the canonical unit every stored value is in.
//! - `loinc`: LOINC codes, `;`-separated, the first the measure's own; an upload naming
//!   any of them is this measure whatever its name.
//! - `apple`: Apple HealthKit type identifiers.
//! - `names`: the names and abbreviations people upload it under (any language; compared
//!   as indicator keys). A name belongs to one measure only.
//! - `units`: every other accepted unit as `spelling=factor` or `spelling=factor@offset`,
//!   meaning canonical = value × factor + offset (`a/b` allowed for either); `none` is a
//!   value sent without a unit. Spellings are compared lower-cased, without spaces, µ as u.
//!   A measure without `none` refuses a value sent without a unit (5.5 or 99 glucose?).
//! - `source`: where each conversion factor comes from.
//! - `group`: where a person looks for it ([`Group`]: activity, heart, sleep, body,
//!   metabolic, labs), the console's summary sections.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::health::{Original, Reading, ReadingValue};

/// The catalogue's data, compiled in.
const MEASURES_CSV: &str = include_str!("../../measures/measures.csv");

/// How a measure's readings add up over a day or a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Summed: a day's total, a period's total and mean daily total (steps, distance).
    Cumulative,
    /// Averaged: mean, min, max, latest (heart rate, glucose, weight, lab results).
    Discrete,
    /// One duration per night, dated by the morning it ends (asleep, by stage, in bed).
    Sleep,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::Cumulative => "cumulative",
            Kind::Discrete => "discrete",
            Kind::Sleep => "sleep",
        }
    }

    /// Are a day's readings added up (a day total) rather than averaged?
    pub(crate) fn is_summed(self) -> bool {
        matches!(self, Kind::Cumulative | Kind::Sleep)
    }
}

/// Where a person looks for a measure: the console summary's sections, in their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Group {
    Activity,
    Heart,
    Sleep,
    Body,
    Metabolic,
    Labs,
    /// A series the catalogue does not list.
    Other,
}

impl Group {
    const LISTED: [Group; 6] = [
        Group::Activity,
        Group::Heart,
        Group::Sleep,
        Group::Body,
        Group::Metabolic,
        Group::Labs,
    ];

    /// A listed group by its name in the catalogue's `group` column (its [`Group::id`]).
    fn parse(text: &str) -> Option<Group> {
        Group::LISTED.into_iter().find(|g| g.id() == text)
    }

    /// The group's name in the catalogue and in the page's ids (`lab results` is `labs`).
    pub(crate) fn id(self) -> &'static str {
        match self {
            Group::Activity => "activity",
            Group::Heart => "heart",
            Group::Sleep => "sleep",
            Group::Body => "body",
            Group::Metabolic => "metabolic",
            Group::Labs => "labs",
            Group::Other => "other",
        }
    }

    /// The section's heading.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Group::Activity => "Activity",
            Group::Heart => "Heart",
            Group::Sleep => "Sleep",
            Group::Body => "Body",
            Group::Metabolic => "Metabolic",
            Group::Labs => "Lab results",
            Group::Other => "Other measures",
        }
    }
}

/// One accepted unit: canonical = value × factor + offset.
#[derive(Debug, Clone, PartialEq)]
struct UnitRule {
    /// As the table writes it, for messages.
    spelling: String,
    key: String,
    factor: f64,
    offset: f64,
}

/// One measure of the catalogue.
#[derive(Debug, Clone)]
pub(crate) struct Measure {
    pub(crate) name: String,
    /// The series key: the name as an indicator key.
    pub(crate) key: String,
    pub(crate) kind: Kind,
    pub(crate) group: Group,
    pub(crate) unit: String,
    /// LOINC codes, the measure's own first.
    pub(crate) loinc: Vec<String>,
    pub(crate) apple: Vec<String>,
    pub(crate) names: Vec<String>,
    units: Vec<UnitRule>,
    /// The canonical unit as a rule (factor 1).
    own: UnitRule,
}

impl Measure {
    /// The measure's own LOINC code.
    pub(crate) fn code(&self) -> Option<&str> {
        self.loinc.first().map(String::as_str)
    }

    /// The units this measure accepts, for messages: the canonical one first.
    pub(crate) fn accepted_units(&self) -> String {
        let mut out = vec![self.unit.clone()];
        out.extend(
            self.units
                .iter()
                .filter(|u| u.key != "none")
                .map(|u| u.spelling.clone()),
        );
        out.join(", ")
    }

    fn rule(&self, unit: Option<&str>) -> Option<&UnitRule> {
        let key = unit.map_or_else(|| "none".to_string(), unit_key);
        if key == self.own.key {
            return Some(&self.own);
        }
        self.units.iter().find(|u| u.key == key)
    }
}

/// A unit spelling as compared: lower-cased, without spaces, µ and μ as u.
pub(crate) fn unit_key(unit: &str) -> String {
    let unit = unit.trim();
    if unit.is_ascii() {
        // The usual case, in one allocation.
        return unit
            .chars()
            .filter(|c| !c.is_whitespace())
            .map(|c| c.to_ascii_lowercase())
            .collect();
    }
    unit_key_of_any(unit)
}

/// [`unit_key`] by the general rule (any script).
fn unit_key_of_any(unit: &str) -> String {
    unit.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if matches!(c, 'µ' | 'μ') { 'u' } else { c })
        .collect::<String>()
        .to_lowercase()
}

/// Why an uploaded reading was refused; the message names the measure and what it
/// expects, never the value sent (it is health data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal(pub(crate) String);

/// The measures, indexed by series key, name, LOINC code and Apple type.
#[derive(Debug)]
pub(crate) struct Catalogue {
    measures: Vec<Measure>,
    by_key: HashMap<String, usize>,
    by_name: HashMap<String, usize>,
    /// Every listed name as it is spelt (found without working out a key: the usual
    /// upload names a measure as the catalogue does).
    by_spelling: HashMap<String, usize>,
    by_code: HashMap<String, usize>,
    by_apple: HashMap<String, usize>,
}

static CATALOGUE: LazyLock<Catalogue> = LazyLock::new(|| {
    // The data is compiled in and checked by this module's tests: it cannot fail at run time.
    Catalogue::parse(MEASURES_CSV).unwrap_or_else(|e| panic!("shared/measures/measures.csv: {e}"))
});

/// The catalogue, read once per process (a cold start reads it through `App::new`).
pub(crate) fn catalogue() -> &'static Catalogue {
    &CATALOGUE
}

/// `a`, `-a`, or `a/b` as a number.
fn number(text: &str) -> Option<f64> {
    let text = text.trim();
    match text.split_once('/') {
        Some((a, b)) => {
            let (a, b) = (a.trim().parse::<f64>().ok()?, b.trim().parse::<f64>().ok()?);
            (b != 0.0).then(|| a / b)
        }
        None => text.parse().ok(),
    }
    .filter(|n: &f64| n.is_finite())
}

fn list(cell: &str) -> Vec<String> {
    cell.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

impl Catalogue {
    fn parse(csv_text: &str) -> Result<Catalogue, String> {
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .from_reader(csv_text.as_bytes());
        let mut out = Catalogue {
            measures: Vec::new(),
            by_key: HashMap::new(),
            by_name: HashMap::new(),
            by_spelling: HashMap::new(),
            by_code: HashMap::new(),
            by_apple: HashMap::new(),
        };
        for (i, record) in reader.records().enumerate() {
            let line = i + 2;
            let record = record.map_err(|e| format!("line {line}: {e}"))?;
            let cell = |n: usize| record.get(n).unwrap_or("");
            let kind = match cell(1) {
                "cumulative" => Kind::Cumulative,
                "discrete" => Kind::Discrete,
                "sleep" => Kind::Sleep,
                other => return Err(format!("line {line}: unknown kind {other:?}")),
            };
            let group = Group::parse(cell(8))
                .ok_or_else(|| format!("line {line}: unknown group {:?}", cell(8)))?;
            let mut units = Vec::new();
            for entry in list(cell(6)) {
                let (spelling, rule) = entry
                    .split_once('=')
                    .ok_or_else(|| format!("line {line}: unit {entry:?} has no '='"))?;
                let (factor, offset) = rule.split_once('@').unwrap_or((rule, "0"));
                let (Some(factor), Some(offset)) = (number(factor), number(offset)) else {
                    return Err(format!("line {line}: unit {entry:?} is not a number"));
                };
                let key = unit_key(spelling);
                if key == unit_key(cell(2)) || units.iter().any(|u: &UnitRule| u.key == key) {
                    return Err(format!("line {line}: unit {spelling:?} is listed twice"));
                }
                units.push(UnitRule {
                    spelling: spelling.trim().to_string(),
                    key,
                    factor,
                    offset,
                });
            }
            let measure = Measure {
                name: cell(0).to_string(),
                key: Reading::indicator_key(cell(0)),
                kind,
                group,
                unit: cell(2).to_string(),
                own: UnitRule {
                    spelling: cell(2).to_string(),
                    key: unit_key(cell(2)),
                    factor: 1.0,
                    offset: 0.0,
                },
                loinc: list(cell(3)),
                apple: list(cell(4)),
                names: list(cell(5)),
                units,
            };
            if measure.key.is_empty() || measure.unit.is_empty() {
                return Err(format!("line {line}: a measure needs a name and a unit"));
            }
            let index = out.measures.len();
            let claim = |map: &mut HashMap<String, usize>, what: &str, key: String| match map
                .insert(key.clone(), index)
            {
                Some(other) if other != index => Err(format!(
                    "line {line}: {what} {key:?} already belongs to another measure"
                )),
                _ => Ok(()),
            };
            claim(&mut out.by_key, "name", measure.key.clone())?;
            for name in std::iter::once(&measure.name).chain(&measure.names) {
                claim(&mut out.by_name, "name", Reading::indicator_key(name))?;
                out.by_spelling.insert(name.clone(), index);
            }
            for code in &measure.loinc {
                claim(&mut out.by_code, "LOINC code", code.clone())?;
            }
            for apple in &measure.apple {
                claim(&mut out.by_apple, "Apple type", apple.clone())?;
            }
            out.measures.push(measure);
        }
        // A series key must not be another measure's name, or a reading could land in both.
        for measure in &out.measures {
            if out.by_name.get(&measure.key).map(|&i| &out.measures[i].key) != Some(&measure.key) {
                return Err(format!("{:?} is another measure's name", measure.name));
            }
        }
        Ok(out)
    }

    pub(crate) fn measures(&self) -> &[Measure] {
        &self.measures
    }

    /// The measure stored under a series key.
    pub(crate) fn by_key(&self, key: &str) -> Option<&Measure> {
        self.by_key.get(key).map(|&i| &self.measures[i])
    }

    /// The measure an uploaded name (any listed name, compared as an indicator key) is.
    pub(crate) fn by_name(&self, name: &str) -> Option<&Measure> {
        self.by_spelling
            .get(name)
            .or_else(|| self.by_name.get(&Reading::indicator_key(name)))
            .map(|&i| &self.measures[i])
    }

    /// The measure a LOINC code is.
    pub(crate) fn by_code(&self, code: &str) -> Option<&Measure> {
        self.by_code.get(code.trim()).map(|&i| &self.measures[i])
    }

    /// The measure an Apple HealthKit type is.
    #[cfg(test)]
    pub(crate) fn by_apple(&self, apple_type: &str) -> Option<&Measure> {
        self.by_apple.get(apple_type).map(|&i| &self.measures[i])
    }

    /// The kind of the series stored under `key` (a measure nobody listed is discrete).
    pub(crate) fn kind_of_key(&self, key: &str) -> Kind {
        self.by_key(key).map_or(Kind::Discrete, |m| m.kind)
    }

    /// Which measure an uploaded reading is: by its LOINC code (when it names none or
    /// LOINC as its system), else by its name.
    fn measure_of(&self, reading: &Reading) -> Option<&Measure> {
        let loinc_system = reading
            .code_system
            .as_deref()
            .is_none_or(|s| s.trim().eq_ignore_ascii_case("loinc") || s.contains("loinc.org"));
        reading
            .code
            .as_deref()
            .filter(|_| loinc_system)
            .and_then(|c| self.by_code(c))
            .or_else(|| self.by_name(&reading.indicator))
    }

    /// The reading as the catalogue keeps it: the measure's name, its LOINC code, the
    /// value in the canonical unit; what was sent, when anything changed, as `original`.
    /// A measure nobody listed stays as sent. Refused: a value that is not a number (or a
    /// censored number such as `<50`), and a unit the measure does not take.
    pub(crate) fn canonical(&self, reading: Reading) -> Result<Reading, Refusal> {
        let Some(measure) = self.measure_of(&reading) else {
            return Ok(reading);
        };
        let unit = reading.unit.as_deref().filter(|u| !u.trim().is_empty());
        let Some(rule) = measure.rule(unit) else {
            return Err(Refusal(match unit {
                None => format!(
                    "{} needs a unit: one of {}",
                    measure.name,
                    measure.accepted_units()
                ),
                Some(_) => format!(
                    "the unit is not one {} takes ({})",
                    measure.name,
                    measure.accepted_units()
                ),
            }));
        };
        let convert = |n: f64| n * rule.factor + rule.offset;
        let value = match &reading.value {
            ReadingValue::Number(n) if n.is_finite() => ReadingValue::Number(convert(*n)),
            ReadingValue::Number(_) => return Err(not_a_number(measure)),
            ReadingValue::Text(text) => match censored(text) {
                Some((bound, n)) => ReadingValue::Text(format!("{bound}{}", short(convert(n)))),
                None => return Err(not_a_number(measure)),
            },
        };
        let changed = reading.indicator != measure.name
            || value != reading.value
            || unit != Some(measure.unit.as_str());
        let code = match reading.code {
            Some(code) if self.by_code(&code).is_some_and(|m| m.key == measure.key) => Some(code),
            _ => measure.code().map(String::from),
        };
        let code_system = match (&code, reading.code_system) {
            (None, _) => None,
            (Some(_), Some(system)) if system == "LOINC" => Some(system),
            (Some(_), _) => Some("LOINC".to_string()),
        };
        // What was sent moves into `original` when anything changed; otherwise the
        // reading keeps its own strings (an import makes this call once a row).
        let (indicator, unit, original) = match (reading.original, changed) {
            (Some(original), _) => (
                measure.name.clone(),
                Some(measure.unit.clone()),
                Some(original),
            ),
            (None, false) => (reading.indicator, reading.unit, None),
            (None, true) => (
                measure.name.clone(),
                Some(measure.unit.clone()),
                Some(Original {
                    indicator: reading.indicator,
                    value: reading.value,
                    unit: reading.unit,
                }),
            ),
        };
        Ok(Reading {
            indicator,
            value,
            unit,
            code_system,
            code,
            original,
            time: reading.time,
            source: reading.source,
            offset: reading.offset,
        })
    }
}

fn not_a_number(measure: &Measure) -> Refusal {
    Refusal(format!(
        "{} takes a number in {} (or a bound such as <5); the value is not one",
        measure.name, measure.unit
    ))
}

/// A lab's censored result (`<50`, `> 1000`, `<=0.1`, `≤0.1`): its bound and number.
fn censored(text: &str) -> Option<(&'static str, f64)> {
    let text = text.trim();
    let (bound, rest) = [
        ("<=", "<="),
        (">=", ">="),
        ("≤", "<="),
        ("≥", ">="),
        ("<", "<"),
        (">", ">"),
    ]
    .into_iter()
    .find_map(|(prefix, bound)| text.strip_prefix(prefix).map(|rest| (bound, rest)))?;
    let n: f64 = rest.trim().parse().ok()?;
    n.is_finite().then_some((bound, n))
}

/// A converted bound, without float noise.
fn short(n: f64) -> String {
    let rounded = (n * 10_000.0).round() / 10_000.0;
    format!("{rounded}")
}

/// `+HH:MM` for an offset in seconds east of UTC.
pub(crate) fn format_offset(seconds: i64) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ascii_unit_keys_as_the_general_rule_keys_it() {
        for unit in ["mg/dL", " MMOL / L ", "10^9/L", "\tkg\u{b}", "{steps}", ""] {
            assert_eq!(unit_key(unit), unit_key_of_any(unit.trim()), "{unit:?}");
        }
        assert_eq!(unit_key(" µmol/L"), "umol/l");
    }

    fn reading(name: &str, value: ReadingValue, unit: Option<&str>) -> Reading {
        Reading {
            indicator: name.into(),
            value,
            unit: unit.map(String::from),
            time: "2026-01-05T08:00:00".into(),
            code_system: None,
            code: None,
            source: "lab".into(),
            offset: None,
            original: None,
        }
    }

    fn number(r: &Reading) -> f64 {
        match r.value {
            ReadingValue::Number(n) => n,
            ReadingValue::Text(_) => panic!("text"),
        }
    }

    #[test]
    fn the_catalogue_parses_and_every_name_belongs_to_one_measure() {
        let catalogue = Catalogue::parse(MEASURES_CSV).unwrap();
        assert!(catalogue.measures().len() >= 50);
        let steps = catalogue
            .by_apple("HKQuantityTypeIdentifierStepCount")
            .unwrap();
        assert_eq!(
            (steps.name.as_str(), steps.kind),
            ("Steps", Kind::Cumulative)
        );
        assert_eq!(catalogue.by_code("2339-0").unwrap().name, "Glucose");
        assert_eq!(catalogue.by_name("Weight").unwrap().name, "Body weight");
        // A name claimed twice is refused, naming the line.
        let twice = "name,kind,unit,loinc,apple,names,units,source,group\n\
                     A,discrete,x,,,a;pulse,,,labs\nB,discrete,y,,,pulse,,,labs\n";
        assert!(Catalogue::parse(twice).unwrap_err().contains("line 3"));
    }

    #[test]
    fn every_measure_has_the_section_a_person_looks_in() {
        let c = catalogue();
        let group = |name: &str| c.by_name(name).map(|m| m.group);
        assert_eq!(group("steps"), Some(Group::Activity));
        assert_eq!(group("rhr"), Some(Group::Heart));
        assert_eq!(group("Sleep deep"), Some(Group::Sleep));
        assert_eq!(group("weight"), Some(Group::Body));
        assert_eq!(group("HbA1c"), Some(Group::Metabolic));
        assert_eq!(group("TSH"), Some(Group::Labs));
        let unknown = "name,kind,unit,loinc,apple,names,units,source,group\n\
                       A,discrete,x,,,,,,vitals\n";
        assert!(
            Catalogue::parse(unknown)
                .unwrap_err()
                .contains("unknown group")
        );
    }

    #[test]
    fn glucose_in_mmol_per_litre_is_the_same_level_in_mg_per_decilitre() {
        let c = catalogue();
        // 5.5 mmol/L × 18.016 = 99.088 mg/dL (REFERENCE 5).
        let meter = c
            .canonical(reading(
                "Blood sugar",
                ReadingValue::Number(5.5),
                Some("mmol/L"),
            ))
            .unwrap();
        assert_eq!(meter.indicator, "Glucose");
        assert_eq!(meter.unit.as_deref(), Some("mg/dL"));
        assert!((number(&meter) - 99.088).abs() < 1e-9);
        assert_eq!(meter.code.as_deref(), Some("2345-7"));
        let original = meter.original.unwrap();
        assert_eq!(
            (original.indicator.as_str(), original.unit.as_deref()),
            ("Blood sugar", Some("mmol/L"))
        );
        assert_eq!(original.value, ReadingValue::Number(5.5));
        // Already canonical: nothing to keep.
        let lab = c
            .canonical(reading(
                "Glucose",
                ReadingValue::Number(99.0),
                Some("mg/dl"),
            ))
            .unwrap();
        assert_eq!(lab.unit.as_deref(), Some("mg/dL"));
        assert!(lab.original.is_some(), "the unit's spelling changed");
        let exact = c
            .canonical(reading(
                "Glucose",
                ReadingValue::Number(99.0),
                Some("mg/dL"),
            ))
            .unwrap();
        assert_eq!(exact.original, None);
    }

    #[test]
    fn plain_and_analyte_conversions_are_the_defined_factors() {
        let c = catalogue();
        let cases = [
            // 150 lb × 0.45359237 = 68.0388555 kg
            ("Weight", 150.0, "lb", 68.0388555),
            // (98.6 °F − 32) × 5/9 = 37 °C
            ("Body temperature", 98.6, "degF", 37.0),
            // 48 mmol/mol / 10.929 + 2.15 = 6.5420 %
            ("HbA1c", 48.0, "mmol/mol", 48.0 / 10.929 + 2.15),
            // 5.2 mmol/L × 38.67 = 201.084 mg/dL
            ("Total cholesterol", 5.2, "mmol/L", 201.084),
            // 1.7 mmol/L × 88.57 = 150.569 mg/dL
            ("Triglycerides", 1.7, "mmol/L", 150.569),
            // 88.42 µmol/L / 88.42 = 1 mg/dL
            ("Creatinine", 88.42, "µmol/L", 1.0),
            // 2 mi × 1.609344 = 3.218688 km
            ("Walking and running distance", 2.0, "mi", 3.218688),
        ];
        for (name, value, unit, expected) in cases {
            let r = c
                .canonical(reading(name, ReadingValue::Number(value), Some(unit)))
                .unwrap();
            assert!(
                (number(&r) - expected).abs() < 1e-6,
                "{name} {value} {unit}: {} != {expected}",
                number(&r)
            );
        }
    }

    #[test]
    fn a_bad_value_or_unit_is_refused_and_a_censored_result_kept() {
        let c = catalogue();
        let letter_o = c.canonical(reading(
            "Glucose",
            ReadingValue::Text("1O4".into()),
            Some("mg/dL"),
        ));
        assert!(letter_o.unwrap_err().0.contains("takes a number"));
        let no_unit = c.canonical(reading("Glucose", ReadingValue::Number(99.0), None));
        assert!(no_unit.unwrap_err().0.contains("needs a unit"));
        let wrong = c.canonical(reading(
            "Weight",
            ReadingValue::Number(70.0),
            Some("mmol/L"),
        ));
        assert!(wrong.unwrap_err().0.contains("kg, lb"));
        let below = c
            .canonical(reading(
                "LDL",
                ReadingValue::Text("<1.3".into()),
                Some("mmol/L"),
            ))
            .unwrap();
        // 1.3 × 38.67 = 50.271
        assert_eq!(below.value, ReadingValue::Text("<50.271".into()));
        // Steps need no unit; a name nobody listed stays as sent.
        assert!(
            c.canonical(reading("step count", ReadingValue::Number(800.0), None))
                .is_ok()
        );
        let unknown = reading("Ketones", ReadingValue::Text("trace".into()), None);
        assert_eq!(c.canonical(unknown.clone()).unwrap(), unknown);
    }

    #[test]
    fn offsets_are_written_as_hours_and_minutes() {
        assert_eq!(format_offset(8 * 3600), "+08:00");
        assert_eq!(format_offset(-(3 * 3600 + 1800)), "-03:30");
        assert_eq!(format_offset(0), "+00:00");
    }
}
