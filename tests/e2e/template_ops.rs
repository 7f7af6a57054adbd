//! The template: `template.yaml`'s operations side against the code it deploys.
//! Every function is traced (`Tracing: Active`, and its role may upload segments) and
//! knows its metrics namespace; every alarm notifies the alarm topic, which mails
//! `AlarmEmail` when one is given; every function has a Lambda errors and throttles alarm,
//! every HTTP function a 5xx-rate and a p99-latency alarm; both tables, the store and the
//! imports have theirs; every deployed route of the route table is covered by its
//! function's alarms and by the dashboard (a SEARCH over the routes of its function); the
//! dashboard's JSON parses once `${…}` is substituted, shows every alarm, and names only
//! metrics of the EMF contract (COMMON: name and dimension set) or of an AWS namespace;
//! cfn-lint finds nothing.

use std::collections::{BTreeMap, BTreeSet};

use e2e::root;
use e2e::template::{of_type, resources, template};
use mirobody::routes::{Resolved, resolve, templates};
use serde_json::{Value, json};

/// The EMF contract: each metric the functions print, with the dimension sets it is
/// published under.
const EMF: &[(&str, &[&[&str]])] = &[
    ("Requests", HTTP_SETS),
    ("Latency", HTTP_SETS),
    ("Errors4xx", HTTP_SETS),
    ("Errors5xx", HTTP_SETS),
    ("ToolCalls", &[&["Function", "Tool"]]),
    ("ToolLatency", &[&["Function", "Tool"]]),
    ("ToolErrors", &[&["Function", "Tool"]]),
    ("StoreCalls", &[&["Function"]]),
    ("StoreLatency", &[&["Function"]]),
    ("StoreThrottles", &[&["Function"]]),
    ("ForwardedCalls", &[&["Function"]]),
    ("ForwardedLatency", &[&["Function"]]),
    ("ForwardedFailures", &[&["Function"]]),
    ("ImportRows", &[&["Function"]]),
    ("ImportRowsPerSecond", &[&["Function"]]),
    ("ImportFailures", &[&["Function"]]),
    ("ImportDuration", &[&["Function"]]),
];
const HTTP_SETS: &[&[&str]] = &[&["Function"], &["Function", "Route"]];

/// The AWS metrics the alarms and the dashboard may name (a typo here is a graph that
/// stays empty forever).
const AWS: &[(&str, &[&str])] = &[
    (
        "AWS/Lambda",
        &[
            "Errors",
            "Throttles",
            "Duration",
            "Invocations",
            "ConcurrentExecutions",
            "AsyncEventsDropped",
            "AsyncEventAge",
        ],
    ),
    (
        "AWS/DynamoDB",
        &[
            "ReadThrottleEvents",
            "WriteThrottleEvents",
            "ThrottledRequests",
            "ConsumedReadCapacityUnits",
            "ConsumedWriteCapacityUnits",
        ],
    ),
    (
        "AWS/ApiGateway",
        &["Count", "4xx", "5xx", "Latency", "IntegrationLatency"],
    ),
];

/// The `Function` dimension's values: the route groups' functions and the importer.
const FUNCTIONS: &[&str] = &["mcp", "personal", "oauth", "data", "console", "import"];

/// How the template spells the metrics namespace (the functions' environment, the
/// alarms); `STACK` stands for the stack's name once substituted.
fn namespace() -> Value {
    json!({ "Fn::Sub": "Mirobody/${AWS::StackName}" })
}
const STACK: &str = "mirobody-test";

/// Whether `name` under `dimensions` (names) is a metric the contract publishes, or one
/// of the AWS metrics above; `Err` says why not.
fn known_metric(namespace: &str, name: &str, dimensions: &[String]) -> Result<(), String> {
    if namespace == format!("Mirobody/{STACK}") {
        let Some((_, sets)) = EMF.iter().find(|(metric, _)| *metric == name) else {
            return Err(format!("{name} is not an EMF metric of the contract"));
        };
        let mut got: Vec<&str> = dimensions.iter().map(String::as_str).collect();
        got.sort_unstable();
        let published = sets.iter().any(|set| {
            let mut want = set.to_vec();
            want.sort_unstable();
            want == got
        });
        if !published {
            return Err(format!(
                "{name} is not published with dimensions {got:?} (the contract: {sets:?})"
            ));
        }
        return Ok(());
    }
    match AWS.iter().find(|(ns, _)| *ns == namespace) {
        Some((_, names)) if names.contains(&name) => Ok(()),
        Some(_) => Err(format!("{namespace} has no metric {name}")),
        None => Err(format!(
            "namespace {namespace:?} is neither the EMF namespace nor an AWS one"
        )),
    }
}

// ------------------------------------------------------------------ alarms

/// One metric an alarm watches (directly, or as one input of its metric math).
#[derive(Debug)]
struct Watched {
    namespace: Value,
    name: String,
    /// Dimension name → value as the template spells it (`mcp`, `{"Ref": "McpFunction"}`).
    dimensions: BTreeMap<String, Value>,
    /// `Sum`, `p99`…
    stat: String,
}

fn dimensions(list: &Value) -> BTreeMap<String, Value> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|d| (d["Name"].as_str().unwrap().to_string(), d["Value"].clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn watched(alarm: &Value) -> Vec<Watched> {
    let props = &alarm["Properties"];
    if let Some(name) = props["MetricName"].as_str() {
        let stat = props["Statistic"]
            .as_str()
            .or(props["ExtendedStatistic"].as_str())
            .expect("a statistic");
        return vec![Watched {
            namespace: props["Namespace"].clone(),
            name: name.to_string(),
            dimensions: dimensions(&props["Dimensions"]),
            stat: stat.to_string(),
        }];
    }
    props["Metrics"]
        .as_array()
        .expect("MetricName or Metrics")
        .iter()
        .filter(|m| m.get("MetricStat").is_some())
        .map(|m| {
            let metric = &m["MetricStat"]["Metric"];
            Watched {
                namespace: metric["Namespace"].clone(),
                name: metric["MetricName"].as_str().unwrap().to_string(),
                dimensions: dimensions(&metric["Dimensions"]),
                stat: m["MetricStat"]["Stat"].as_str().unwrap().to_string(),
            }
        })
        .collect()
}

fn alarms(template: &Value) -> Vec<(&String, &Value)> {
    of_type(template, "AWS::CloudWatch::Alarm")
}

/// The alarms watching `metric` in `namespace` with the dimension `key` = `value`.
fn alarms_on<'t>(
    template: &'t Value,
    namespace: &Value,
    metric: &str,
    key: &str,
    value: &Value,
) -> Vec<(&'t String, &'t Value)> {
    alarms(template)
        .into_iter()
        .filter(|(_, alarm)| {
            watched(alarm).iter().any(|w| {
                &w.namespace == namespace
                    && w.name == metric
                    && w.dimensions.get(key) == Some(value)
            })
        })
        .collect()
}

/// The function resources, by their binary (= the `Function` dimension's value).
fn functions(template: &Value) -> BTreeMap<String, String> {
    of_type(template, "AWS::Serverless::Function")
        .into_iter()
        .map(|(name, f)| {
            let binary = f["Metadata"]["BuildProperties"]["Binary"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: Metadata.BuildProperties.Binary"));
            (binary.to_string(), name.clone())
        })
        .collect()
}

fn group_function(group: mirobody::RouteGroup) -> String {
    format!("{group:?}").to_lowercase()
}

/// The HTTP functions (a route reaches them), by binary.
fn http_functions() -> BTreeSet<String> {
    templates().map(|(_, _, g)| group_function(g)).collect()
}

/// A function's Lambda alarm on `metric` (`Errors`, `Throttles`): `Err` says what is missing.
fn lambda_alarm(template: &Value, resource: &str, metric: &str) -> Result<(), String> {
    let found = alarms_on(
        template,
        &json!("AWS/Lambda"),
        metric,
        "FunctionName",
        &json!({ "Ref": resource }),
    );
    match found.as_slice() {
        [(_, alarm)] => {
            let props = &alarm["Properties"];
            let zero = props["Threshold"] == json!(0)
                && props["ComparisonOperator"] == "GreaterThanThreshold";
            let summed = watched(alarm)[0].stat == "Sum";
            if zero && summed {
                Ok(())
            } else {
                Err(format!(
                    "{resource}: its {metric} alarm must fire on any (Sum > 0)"
                ))
            }
        }
        [] => Err(format!("{resource} has no Lambda {metric} alarm")),
        more => Err(format!("{resource}: {} {metric} alarms", more.len())),
    }
}

/// An HTTP function's 5xx-rate alarm: `Errors5xx` over `Requests` of its `Function`.
fn error_rate_alarm(template: &Value, function: &str) -> Result<(), String> {
    let found = alarms_on(
        template,
        &namespace(),
        "Errors5xx",
        "Function",
        &json!(function),
    );
    let [(name, alarm)] = found.as_slice() else {
        return Err(format!(
            "{function}: {} 5xx alarms, one expected",
            found.len()
        ));
    };
    let props = &alarm["Properties"];
    let inputs = watched(alarm);
    let requests = inputs.iter().any(|w| {
        w.name == "Requests"
            && w.namespace == namespace()
            && w.dimensions.get("Function") == Some(&json!(function))
            && w.stat == "Sum"
    });
    let rate = props["Metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["ReturnData"] == true)
        .and_then(|m| m["Expression"].as_str())
        .is_some_and(|e| e.contains('/'));
    if !requests || !rate {
        return Err(format!("{name}: not a rate of Errors5xx over Requests"));
    }
    if props["Threshold"] != json!({ "Ref": "Alarm5xxRatePercent" }) {
        return Err(format!("{name}: threshold {}", props["Threshold"]));
    }
    Ok(())
}

/// An HTTP function's p99 latency alarm; its threshold a parameter below the timeout.
fn latency_alarm(template: &Value, function: &str, resource: &str) -> Result<(), String> {
    let found = alarms_on(
        template,
        &namespace(),
        "Latency",
        "Function",
        &json!(function),
    );
    let [(name, alarm)] = found.as_slice() else {
        return Err(format!(
            "{function}: {} latency alarms, one expected",
            found.len()
        ));
    };
    if watched(alarm)[0].stat != "p99" {
        return Err(format!("{name}: not p99"));
    }
    let parameter = alarm["Properties"]["Threshold"]["Ref"]
        .as_str()
        .ok_or(format!("{name}: the threshold is not a parameter"))?;
    let default = template["Parameters"][parameter]["Default"]
        .as_f64()
        .ok_or(format!("{parameter}: no default"))?;
    let timeout = resources(template)[resource]["Properties"]["Timeout"]
        .as_f64()
        .or(template["Globals"]["Function"]["Timeout"].as_f64())
        .expect("a timeout");
    if !(0.0 < default && default < timeout * 1000.0) {
        return Err(format!(
            "{parameter}: {default} ms can never fire for {resource} (timeout {timeout} s)"
        ));
    }
    Ok(())
}

#[test]
fn every_function_is_traced_and_its_role_may_upload_segments() {
    let template = template();
    assert_eq!(template["Globals"]["Function"]["Tracing"], "Active");
    for (name, function) in of_type(&template, "AWS::Serverless::Function") {
        let own = &function["Properties"]["Tracing"];
        assert!(own.is_null() || own == "Active", "{name}: Tracing {own}");
        // SAM adds X-Ray permissions only to roles it generates; these roles are ours.
        let role = function["Properties"]["Role"]["Fn::GetAtt"][0]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: Role"));
        let statements: Vec<&Value> = resources(&template)[role]["Properties"]["Policies"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["PolicyDocument"]["Statement"].as_array().unwrap())
            .collect();
        let traced = statements.iter().any(|s| {
            s["Effect"] == "Allow"
                && s["Action"] == json!(["xray:PutTraceSegments", "xray:PutTelemetryRecords"])
                && s["Resource"] == "*"
        });
        assert!(traced, "{name}: {role} may not upload X-Ray segments");
    }
}

#[test]
fn every_function_prints_its_metrics_to_the_stacks_namespace() {
    let template = template();
    assert_eq!(
        template["Globals"]["Function"]["Environment"]["Variables"]["MIROBODY_METRICS_NAMESPACE"],
        namespace()
    );
    for (name, function) in of_type(&template, "AWS::Serverless::Function") {
        let own = &function["Properties"]["Environment"]["Variables"]["MIROBODY_METRICS_NAMESPACE"];
        assert!(own.is_null(), "{name} overrides the namespace: {own}");
    }
}

#[test]
fn the_alarm_topic_mails_alarm_email_only_when_one_is_given() {
    let template = template();
    let parameter = &template["Parameters"]["AlarmEmail"];
    assert_eq!(parameter["Default"], "", "no subscription by default");
    let operations = template["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["Label"]["default"] == "Operations")
        .expect("an Operations parameter group");
    for name in [
        "AlarmEmail",
        "Alarm5xxRatePercent",
        "AlarmP99LatencyMs",
        "AlarmP99LatencySlowMs",
    ] {
        assert!(
            operations["Parameters"]
                .as_array()
                .unwrap()
                .contains(&json!(name)),
            "{name} is not in the Operations group"
        );
        assert!(template["Parameters"][name].is_object(), "{name}");
    }
    assert_eq!(
        template["Conditions"]["HasAlarmEmail"],
        json!({ "Fn::Not": [{ "Fn::Equals": [{ "Ref": "AlarmEmail" }, ""] }] })
    );
    let topics = of_type(&template, "AWS::SNS::Topic");
    let [(topic, _)] = topics.as_slice() else {
        panic!("one SNS topic expected")
    };
    assert_eq!(topic.as_str(), "AlarmTopic");
    let subscriptions = of_type(&template, "AWS::SNS::Subscription");
    let [(_, subscription)] = subscriptions.as_slice() else {
        panic!("one subscription expected")
    };
    assert_eq!(subscription["Condition"], "HasAlarmEmail");
    let props = &subscription["Properties"];
    assert_eq!(props["TopicArn"], json!({ "Ref": "AlarmTopic" }));
    assert_eq!(props["Protocol"], "email");
    assert_eq!(props["Endpoint"], json!({ "Ref": "AlarmEmail" }));
    // The pattern takes an address and the empty default, nothing else.
    let pattern = parameter["AllowedPattern"].as_str().unwrap();
    assert_eq!(pattern, "^([^@\\s]+@[^@\\s]+\\.[^@\\s]+)?$");
    assert_eq!(
        template["Outputs"]["AlarmTopicArn"]["Value"],
        json!({ "Ref": "AlarmTopic" })
    );
}

#[test]
fn every_alarm_notifies_the_topic_when_it_fires_and_clears_and_no_data_is_not_a_breach() {
    let template = template();
    let all = alarms(&template);
    assert!(all.len() >= 20, "only {} alarms", all.len());
    for (name, alarm) in all {
        let props = &alarm["Properties"];
        let topic = json!([{ "Ref": "AlarmTopic" }]);
        assert_eq!(props["AlarmActions"], topic, "{name}");
        assert_eq!(props["OKActions"], topic, "{name}");
        assert_eq!(props["TreatMissingData"], "notBreaching", "{name}");
        let alarm_name = props["AlarmName"]["Fn::Sub"].as_str().unwrap_or_default();
        assert!(
            alarm_name.starts_with("${AWS::StackName}-"),
            "{name}: AlarmName {} (named per stack, so that two stacks never collide)",
            props["AlarmName"]
        );
        assert!(props["AlarmDescription"].is_string() || props["AlarmDescription"].is_object());
        // What it watches is a metric that exists.
        for w in watched(alarm) {
            let namespace = if w.namespace == namespace() {
                format!("Mirobody/{STACK}")
            } else {
                w.namespace.as_str().unwrap().to_string()
            };
            let keys: Vec<String> = w.dimensions.keys().cloned().collect();
            if let Err(problem) = known_metric(&namespace, &w.name, &keys) {
                panic!("{name}: {problem}");
            }
            if let Some(function) = w.dimensions.get("Function") {
                assert!(
                    FUNCTIONS.contains(&function.as_str().unwrap_or_default()),
                    "{name}: Function {function}"
                );
            }
        }
    }
}

#[test]
fn every_function_has_a_lambda_errors_and_a_throttles_alarm() {
    let template = template();
    let functions = functions(&template);
    assert_eq!(functions.len(), FUNCTIONS.len(), "{functions:?}");
    for (binary, resource) in &functions {
        assert!(FUNCTIONS.contains(&binary.as_str()), "{binary}");
        for metric in ["Errors", "Throttles"] {
            if let Err(problem) = lambda_alarm(&template, resource, metric) {
                panic!("{problem}");
            }
        }
    }
}

#[test]
fn every_http_function_has_a_5xx_rate_and_a_p99_latency_alarm() {
    let template = template();
    let functions = functions(&template);
    let http = http_functions();
    assert_eq!(http.len(), 5, "{http:?}");
    for function in &http {
        let resource = &functions[function];
        if let Err(problem) = error_rate_alarm(&template, function) {
            panic!("{problem}");
        }
        if let Err(problem) = latency_alarm(&template, function, resource) {
            panic!("{problem}");
        }
    }
    assert_eq!(template["Parameters"]["Alarm5xxRatePercent"]["Default"], 5);
    assert_eq!(template["Parameters"]["AlarmP99LatencyMs"]["Default"], 3000);
    for function in ["mcp", "data"] {
        let alarm = alarms_on(
            &template,
            &namespace(),
            "Latency",
            "Function",
            &json!(function),
        );
        assert_eq!(
            alarm[0].1["Properties"]["Threshold"],
            json!({ "Ref": "AlarmP99LatencyMs" }),
            "{function}"
        );
    }
}

#[test]
fn both_tables_the_store_and_the_imports_have_their_alarms() {
    let template = template();
    for table in ["KeysTable", "DataTable"] {
        let table_ref = json!({ "Ref": table });
        for metric in ["ReadThrottleEvents", "WriteThrottleEvents"] {
            let found = alarms_on(
                &template,
                &json!("AWS/DynamoDB"),
                metric,
                "TableName",
                &table_ref,
            );
            assert!(!found.is_empty(), "{table}: no {metric} alarm");
        }
    }
    // The data table's index throttles on its own.
    let index = alarms(&template).into_iter().any(|(_, alarm)| {
        watched(alarm).iter().any(|w| {
            w.dimensions.get("GlobalSecondaryIndexName") == Some(&json!("by_position"))
                && w.dimensions.get("TableName") == Some(&json!({ "Ref": "DataTable" }))
        })
    });
    assert!(index, "no alarm on the by_position index's throttles");
    // The store's own count, from every function that calls it.
    for function in FUNCTIONS {
        let found = alarms_on(
            &template,
            &namespace(),
            "StoreThrottles",
            "Function",
            &json!(function),
        );
        assert!(!found.is_empty(), "{function}: StoreThrottles has no alarm");
    }
    // Failed imports, and S3 events Lambda gave up on.
    let failures = alarms_on(
        &template,
        &namespace(),
        "ImportFailures",
        "Function",
        &json!("import"),
    );
    let [(name, alarm)] = failures.as_slice() else {
        panic!("one ImportFailures alarm expected")
    };
    let props = &alarm["Properties"];
    assert_eq!(props["Statistic"], "Sum", "{name}");
    assert_eq!(props["Threshold"], 0, "{name}");
    assert_eq!(
        props["ComparisonOperator"], "GreaterThanThreshold",
        "{name}"
    );
    let dropped = alarms_on(
        &template,
        &json!("AWS/Lambda"),
        "AsyncEventsDropped",
        "FunctionName",
        &json!({ "Ref": "ImportFunction" }),
    );
    assert_eq!(dropped.len(), 1, "the import function's dropped events");
}

// ------------------------------------------------------------------ dashboard

/// One metric a dashboard graph draws: a plain metric, or a SEARCH (its schema's
/// dimension names and its `Key="value"` filters).
#[derive(Debug)]
struct Drawn {
    namespace: String,
    name: String,
    dimensions: Vec<String>,
    /// The dimension values the graph fixes (all of a plain metric's; a SEARCH's filters).
    values: BTreeMap<String, String>,
    search: bool,
    stat: String,
}

/// `SEARCH('{Namespace,Dim,Dim} MetricName="X" Dim="v"', 'Stat', 300)`.
fn parse_search(expression: &str) -> Result<Drawn, String> {
    let rest = expression
        .strip_prefix("SEARCH('{")
        .ok_or(format!("not a SEARCH: {expression}"))?;
    let (schema, rest) = rest
        .split_once('}')
        .ok_or(format!("no schema: {expression}"))?;
    let (query, rest) = rest
        .split_once("', '")
        .ok_or(format!("no statistic: {expression}"))?;
    let (stat, period) = rest
        .split_once("', ")
        .ok_or(format!("no period: {expression}"))?;
    if period != "300)" {
        return Err(format!("period {period}: {expression}"));
    }
    let mut parts = schema.split(',');
    let namespace = parts.next().unwrap_or_default().to_string();
    let dimensions: Vec<String> = parts.map(str::to_string).collect();
    let mut name = None;
    let mut values = BTreeMap::new();
    for term in query.split_whitespace() {
        let (key, value) = term
            .split_once('=')
            .ok_or(format!("{term:?} in {expression}"))?;
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .ok_or(format!("{term:?} is not quoted"))?;
        if key == "MetricName" {
            name = Some(value.to_string());
        } else if dimensions.iter().any(|d| d == key) {
            values.insert(key.to_string(), value.to_string());
        } else {
            return Err(format!(
                "{key} is not a dimension of the schema: {expression}"
            ));
        }
    }
    Ok(Drawn {
        namespace,
        name: name.ok_or(format!("no MetricName: {expression}"))?,
        dimensions,
        values,
        search: true,
        stat: stat.to_string(),
    })
}

fn drawn(widget: &Value) -> Result<Vec<Drawn>, String> {
    let props = &widget["properties"];
    let default_stat = props["stat"].as_str().unwrap_or("Average");
    let mut out = Vec::new();
    for row in props["metrics"]
        .as_array()
        .ok_or("a metric widget without metrics")?
    {
        let row = row.as_array().ok_or(format!("a metric row {row}"))?;
        if let Some(expression) = row.first().and_then(|r| r["expression"].as_str()) {
            out.push(parse_search(expression)?);
            continue;
        }
        let options = row.last().filter(|v| v.is_object());
        let strings: Vec<&str> = row.iter().filter_map(Value::as_str).collect::<Vec<&str>>();
        if strings.len() < 2 || !strings.len().is_multiple_of(2) || strings.contains(&".") {
            return Err(format!("a metric row must be written out in full: {row:?}"));
        }
        let values: BTreeMap<String, String> = strings[2..]
            .chunks(2)
            .map(|kv| (kv[0].to_string(), kv[1].to_string()))
            .collect();
        out.push(Drawn {
            namespace: strings[0].to_string(),
            name: strings[1].to_string(),
            dimensions: values.keys().cloned().collect(),
            values,
            search: false,
            stat: options
                .and_then(|o| o["stat"].as_str())
                .unwrap_or(default_stat)
                .to_string(),
        });
    }
    Ok(out)
}

/// The dashboard body with every `${…}` replaced: pseudo-parameters by sample values,
/// `${Alarm.Arn}` by an alarm ARN, `${Resource}` / `${Parameter}` by a sample name.
/// `Err` names a `${…}` that is neither.
fn substitute(body: &str, template: &Value) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = body;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or("an unclosed ${")? + start;
        let name = &rest[start + 2..end];
        let value = match name {
            "AWS::StackName" => STACK.to_string(),
            "AWS::Region" => "us-east-1".to_string(),
            "AWS::AccountId" => "123456789012".to_string(),
            "AWS::Partition" => "aws".to_string(),
            _ => match name.split_once('.') {
                Some((resource, "Arn"))
                    if resources(template)
                        .get(resource)
                        .is_some_and(|r| r["Type"] == "AWS::CloudWatch::Alarm") =>
                {
                    format!("arn:aws:cloudwatch:us-east-1:123456789012:alarm:{resource}")
                }
                Some((resource, attribute)) if resources(template).contains_key(resource) => {
                    format!("{resource}-{attribute}")
                }
                None if resources(template).contains_key(name)
                    || template["Parameters"].get(name).is_some() =>
                {
                    format!("{name}-1234")
                }
                _ => return Err(format!("${{{name}}} names nothing in the template")),
            },
        };
        out.push_str(&value);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn dashboard(template: &Value) -> String {
    let dashboards = of_type(template, "AWS::CloudWatch::Dashboard");
    let [(_, dashboard)] = dashboards.as_slice() else {
        panic!("one dashboard expected")
    };
    assert_eq!(
        dashboard["Properties"]["DashboardName"],
        json!({ "Fn::Sub": "${AWS::StackName}-operations" })
    );
    dashboard["Properties"]["DashboardBody"]["Fn::Sub"]
        .as_str()
        .expect("DashboardBody: !Sub with a string")
        .to_string()
}

/// Everything wrong with a dashboard body: JSON that does not parse, a metric outside the
/// contract, an unknown `Function`, an alarm missing from the alarm widget.
fn dashboard_problems(body: &str, template: &Value) -> (Vec<Drawn>, Vec<String>) {
    let mut problems = Vec::new();
    let text = match substitute(body, template) {
        Ok(text) => text,
        Err(problem) => return (vec![], vec![problem]),
    };
    let parsed: Value = match serde_json::from_str(&text) {
        Ok(parsed) => parsed,
        Err(e) => return (vec![], vec![format!("the dashboard is not JSON: {e}")]),
    };
    let mut all = Vec::new();
    let mut shown_alarms = BTreeSet::new();
    for widget in parsed["widgets"].as_array().into_iter().flatten() {
        for key in ["x", "y", "width", "height"] {
            if !widget[key].is_u64() {
                problems.push(format!("a widget without {key}: {widget}"));
            }
        }
        match widget["type"].as_str() {
            Some("metric") => match drawn(widget) {
                Ok(metrics) => all.extend(metrics),
                Err(problem) => problems.push(problem),
            },
            Some("alarm") => {
                for arn in widget["properties"]["alarms"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    shown_alarms.insert(arn.as_str().unwrap_or_default().to_string());
                }
            }
            Some("text") => {}
            other => problems.push(format!("a widget of type {other:?}")),
        }
    }
    for metric in &all {
        if let Err(problem) = known_metric(&metric.namespace, &metric.name, &metric.dimensions) {
            problems.push(problem);
        }
        if let Some(function) = metric.values.get("Function")
            && !FUNCTIONS.contains(&function.as_str())
        {
            problems.push(format!("{}: Function {function:?}", metric.name));
        }
        if metric.stat.is_empty() {
            problems.push(format!("{}: no statistic", metric.name));
        }
    }
    for (name, _) in alarms(template) {
        let arn = format!("arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}");
        if !shown_alarms.contains(&arn) {
            problems.push(format!("the alarm widget does not show {name}"));
        }
    }
    if parsed["widgets"].as_array().is_none_or(Vec::is_empty) {
        problems.push("no widgets".to_string());
    }
    (all, problems)
}

#[test]
fn the_dashboard_parses_shows_every_alarm_and_names_only_contract_or_aws_metrics() {
    let template = template();
    let (drawn, problems) = dashboard_problems(&dashboard(&template), &template);
    assert!(problems.is_empty(), "{problems:#?}");
    let emf = format!("Mirobody/{STACK}");
    let has = |namespace: &str, name: &str, key: &str, value: &str, stat: &str| {
        drawn.iter().any(|d| {
            d.namespace == namespace
                && d.name == name
                && d.values.get(key).map(String::as_str) == Some(value)
                && d.stat == stat
        })
    };
    // Per HTTP function: requests, 4xx, 5xx, p50 and p99 latency.
    for function in http_functions() {
        for (name, stat) in [
            ("Requests", "Sum"),
            ("Errors4xx", "Sum"),
            ("Errors5xx", "Sum"),
            ("Latency", "p50"),
            ("Latency", "p99"),
        ] {
            assert!(
                has(&emf, name, "Function", &function, stat),
                "{function}: {name} {stat}"
            );
        }
    }
    // Per function: store calls, latency and throttles; Lambda errors, throttles, duration.
    let resources_by_binary = functions(&template);
    for (function, resource) in &resources_by_binary {
        for (name, stat) in [
            ("StoreCalls", "Sum"),
            ("StoreLatency", "p99"),
            ("StoreThrottles", "Sum"),
        ] {
            assert!(
                has(&emf, name, "Function", function, stat),
                "{function}: {name} {stat}"
            );
        }
        for (name, stat) in [("Errors", "Sum"), ("Throttles", "Sum"), ("Duration", "p99")] {
            assert!(
                has(
                    "AWS/Lambda",
                    name,
                    "FunctionName",
                    &format!("{resource}-1234"),
                    stat
                ),
                "{resource}: Lambda {name} {stat}"
            );
        }
    }
    // Per tool and per function: every one that reported (SEARCH).
    let searched = |name: &str, dimensions: &[&str]| {
        drawn
            .iter()
            .any(|d| d.search && d.namespace == emf && d.name == name && d.dimensions == dimensions)
    };
    for name in ["ToolCalls", "ToolErrors", "ToolLatency"] {
        assert!(searched(name, &["Function", "Tool"]), "{name} per tool");
    }
    for name in ["ForwardedCalls", "ForwardedFailures", "ForwardedLatency"] {
        // Never per host: a host is a name a user chose.
        assert!(searched(name, &["Function"]), "{name} per function");
    }
    // Imports.
    for name in ["ImportRowsPerSecond", "ImportFailures", "ImportRows"] {
        assert!(
            drawn.iter().any(|d| d.name == name
                && d.values.get("Function").map(String::as_str) == Some("import")),
            "{name}"
        );
    }
    // DynamoDB throttles of both tables.
    for table in ["KeysTable", "DataTable"] {
        for name in ["ReadThrottleEvents", "WriteThrottleEvents"] {
            assert!(
                has(
                    "AWS/DynamoDB",
                    name,
                    "TableName",
                    &format!("{table}-1234"),
                    "Sum"
                ),
                "{table}: {name}"
            );
        }
    }
}

/// The checks above catch what they are for: a misspelt metric, a dimension set the
/// functions never publish, a metric from nowhere, a `${…}` naming nothing, an alarm left
/// out of the alarm widget, broken JSON.
#[test]
fn the_dashboard_check_catches_a_wrong_dashboard() {
    let template = template();
    let body = dashboard(&template);
    let first_alarm = alarms(&template)[0].0.clone();
    for (what, from, to) in [
        ("a misspelt metric", "\"Requests\"", "\"Request\""),
        (
            "a dimension set never published",
            "{Mirobody/${AWS::StackName},Function}",
            "{Mirobody/${AWS::StackName},Function,RemoteHost}",
        ),
        (
            "another namespace",
            "\"Mirobody/${AWS::StackName}\"",
            "\"Mirobody\"",
        ),
        (
            "a Function that is not one",
            "\"Function\", \"mcp\"",
            "\"Function\", \"mpc\"",
        ),
        ("an unknown AWS metric", "\"Throttles\"", "\"Throttled\""),
        ("a ${…} naming nothing", "${McpFunction}", "${McpFunctio}"),
        (
            "an alarm left out",
            &format!("\"${{{first_alarm}.Arn}}\","),
            "",
        ),
        ("broken JSON", "\"widgets\": [", "\"widgets\": "),
    ] {
        assert!(body.contains(from), "{what}: the dashboard has no {from}");
        let wrong = body.replacen(from, to, 1);
        let (_, problems) = dashboard_problems(&wrong, &template);
        assert!(!problems.is_empty(), "{what} went unnoticed");
    }
}

// ------------------------------------------------------------------ coverage of the routes

/// Every deployed route of the route table: its function has a Lambda errors and
/// throttles alarm, a 5xx-rate and a p99 alarm, and the dashboard draws its requests and
/// latency (a SEARCH over its function's routes: one line per route name).
#[test]
fn every_route_is_covered_by_its_functions_alarms_and_the_dashboard() {
    let template = template();
    let functions = functions(&template);
    let (drawn, problems) = dashboard_problems(&dashboard(&template), &template);
    assert!(problems.is_empty(), "{problems:#?}");
    let emf = format!("Mirobody/{STACK}");
    let mut routes = 0;
    for (method, path, group) in templates() {
        let Resolved::Route(matched) = resolve(&method.parse().unwrap(), path, "") else {
            panic!("{method} {path} resolves to no route")
        };
        // The route's name: what the EMF line's Route dimension carries.
        let route = format!("{matched:?}");
        let function = group_function(group);
        let resource = functions
            .get(&function)
            .unwrap_or_else(|| panic!("{route}: no function {function}"));
        let mut problems = Vec::new();
        for metric in ["Errors", "Throttles"] {
            problems.extend(lambda_alarm(&template, resource, metric).err());
        }
        problems.extend(error_rate_alarm(&template, &function).err());
        problems.extend(latency_alarm(&template, &function, resource).err());
        for (metric, stat) in [("Requests", "Sum"), ("Latency", "p99")] {
            let shown = drawn.iter().any(|d| {
                d.search
                    && d.namespace == emf
                    && d.name == metric
                    && d.dimensions == ["Function", "Route"]
                    && d.values.get("Function") == Some(&function)
                    && !d.values.contains_key("Route")
                    && d.stat == stat
            });
            if !shown {
                problems.push(format!(
                    "the dashboard has no {metric} per route of {function}"
                ));
            }
        }
        assert!(problems.is_empty(), "{route} ({function}): {problems:#?}");
        routes += 1;
    }
    assert!(routes > 50, "only {routes} routes");
}

#[test]
fn cfn_lint_finds_nothing() {
    let lint = root().join(".venv/bin/cfn-lint");
    assert!(
        lint.exists(),
        "no .venv/bin/cfn-lint: run scripts/install-test-deps (scripts/test does)"
    );
    let output = std::process::Command::new(lint)
        .arg("template.yaml")
        .current_dir(root())
        .output()
        .expect("cfn-lint runs");
    assert!(
        output.status.success(),
        "cfn-lint template.yaml:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// README's "Alarms and dashboard" stays true: the parameters, the dashboard's name, and
/// the alarm and metric counts its cost sentence is computed from.
#[test]
fn the_readme_says_how_many_alarms_watch_how_many_metrics() {
    let template = template();
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let section = readme
        .split("### Alarms and dashboard")
        .nth(1)
        .expect("README: ### Alarms and dashboard")
        .split("\n## ")
        .next()
        .unwrap();
    let all = alarms(&template);
    let metrics: usize = all.iter().map(|(_, alarm)| watched(alarm).len()).sum();
    let claim = format!("The {} alarms\nwatch {metrics} metrics", all.len());
    assert!(
        section
            .replace('\n', " ")
            .contains(&claim.replace('\n', " ")),
        "README should say: {claim:?}"
    );
    for name in [
        "AlarmEmail",
        "AlarmTopicArn",
        "DashboardUrl",
        "<stack>-operations",
    ] {
        assert!(
            section.contains(name),
            "README, Alarms and dashboard: {name}"
        );
    }
    for (name, _) in template["Parameters"].as_object().unwrap() {
        if name.starts_with("Alarm") {
            assert!(readme.contains(&format!("`{name}`")), "README: {name}");
        }
    }
    for (name, alarm) in all {
        let alarm_name = alarm["Properties"]["AlarmName"]["Fn::Sub"]
            .as_str()
            .unwrap();
        let suffix = alarm_name.trim_start_matches("${AWS::StackName}-");
        let listed = FUNCTIONS.iter().fold(suffix.to_string(), |s, f| {
            s.replacen(&format!("{f}-"), "<function>-", 1)
        });
        assert!(
            section.contains(&format!("`{suffix}`")) || section.contains(&format!("`{listed}`")),
            "{name}: README lists neither `{suffix}` nor `{listed}`"
        );
    }
}
