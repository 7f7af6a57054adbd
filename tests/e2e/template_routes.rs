//! `template.yaml` (F1) against the code it deploys: its routes are what the route table
//! generates (`mirobody-local routes-template`), every route of
//! `mirobody::routes::templates()` is an API route and every API route is in the table,
//! under `HTTP_URI_PREFIX` exactly where the router puts the prefix; each route reaches
//! the function of its group; the tables are `infra/tables.json`'s definitions; the
//! upload bucket is private and starts the import function, whose role reaches only
//! the uploads.

use std::collections::{BTreeMap, BTreeSet};

use e2e::root;
use e2e::template::{of_type, resources, template};
use mirobody::RouteGroup;
use mirobody::routes::{Resolved, resolve, templates};
use serde_json::{Value, json};

/// The resource a `Fn::Sub` string such as `integrations/${McpIntegration}` names.
fn sub_target(value: &Value, prefix: &str) -> String {
    let text = value["Fn::Sub"]
        .as_str()
        .unwrap_or_else(|| panic!("expected !Sub \"{prefix}${{…}}\", got {value}"));
    text.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix("${"))
        .and_then(|rest| rest.strip_suffix('}'))
        .unwrap_or_else(|| panic!("expected !Sub \"{prefix}${{…}}\", got {text:?}"))
        .to_string()
}

fn group_name(group: RouteGroup) -> String {
    format!("{group:?}").to_lowercase()
}

/// The template's spelling of the `HttpUriPrefix` parameter inside a route key.
const PREFIX: &str = "${HttpUriPrefix}";

/// One API route: the method, and the path with `${HttpUriPrefix}` where the prefix goes.
type RouteKey = (String, String);

/// The routes the code serves, with the prefix placed where the router itself expects
/// it: with a prefix configured, exactly one spelling of the path must reach the route's
/// group, either the path as listed (the prefix does not apply) or the path with the
/// prefix inserted at one segment boundary (usually the front: `/pre/mcp`; RFC 9728's
/// resource metadata puts it after the well-known name).
fn expected_routes() -> BTreeMap<RouteKey, String> {
    templates()
        .map(|(method, path, group)| {
            let parsed: http::Method = method.parse().expect("an HTTP method");
            let sample = |p: &str| {
                p.replace("{secret}", "s3cr3t")
                    .replace("{state}", "st4te")
                    .replace("{name}", "shop")
            };
            let serves = |candidate: &str| {
                let sample = sample(candidate);
                let found = resolve(&parsed, &sample, "/pre");
                assert!(
                    !matches!(found, Resolved::MethodNotAllowed(_)),
                    "{method} {candidate}"
                );
                found.group() == Some(group)
            };
            let mut spellings: Vec<String> = Vec::new();
            if serves(path) {
                spellings.push(path.to_string());
            }
            for (at, _) in path.match_indices('/') {
                if serves(&format!("{}/pre{}", &path[..at], &path[at..])) {
                    spellings.push(format!("{}{PREFIX}{}", &path[..at], &path[at..]));
                }
            }
            assert_eq!(
                spellings.len(),
                1,
                "{method} {path}: with a prefix the router serves {spellings:?}"
            );
            ((method.to_string(), spellings.remove(0)), group_name(group))
        })
        .collect()
}

/// The template's routes, each with the build binary of the function it reaches.
fn template_routes(template: &Value) -> BTreeMap<RouteKey, String> {
    let resources = resources(template);
    let mut out = BTreeMap::new();
    for (name, resource) in of_type(template, "AWS::ApiGatewayV2::Route") {
        let props = &resource["Properties"];
        assert_eq!(props["ApiId"], json!({"Ref": "HttpApi"}), "{name}");
        let key = match &props["RouteKey"] {
            Value::String(key) => key.clone(),
            other => {
                let text = other["Fn::Sub"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{name}: RouteKey {other}"));
                assert!(
                    !text.replace(PREFIX, "").contains("${"),
                    "{name}: only the prefix may be substituted: {text}"
                );
                text.to_string()
            }
        };
        let (method, path) = key.split_once(' ').expect("METHOD PATH");
        let integration = sub_target(&props["Target"], "integrations/");
        let integration = &resources[&integration];
        assert_eq!(integration["Type"], "AWS::ApiGatewayV2::Integration");
        let ip = &integration["Properties"];
        assert_eq!(ip["IntegrationType"], "AWS_PROXY", "{name}");
        assert_eq!(ip["PayloadFormatVersion"], "2.0", "{name}");
        let function = ip["IntegrationUri"]["Fn::GetAtt"][0]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: IntegrationUri is not !GetAtt <Function>.Arn"));
        assert_eq!(ip["IntegrationUri"]["Fn::GetAtt"][1], "Arn");
        let binary = resources[function]["Metadata"]["BuildProperties"]["Binary"]
            .as_str()
            .unwrap_or_else(|| panic!("{function}: Metadata.BuildProperties.Binary"))
            .to_string();
        let previous = out.insert((method.to_string(), path.to_string()), binary);
        assert!(previous.is_none(), "{key} appears twice");
    }
    out
}

/// The routes in `template.yaml` are generated from the route table: a row added,
/// changed or removed fails here until `mirobody-local routes-template` wrote them.
#[test]
fn the_templates_routes_are_generated_from_the_route_table() {
    let path = root().join("template.yaml");
    let text = std::fs::read_to_string(&path).expect("template.yaml");
    let generated = mirobody::routes::template_with_routes(&text).expect("the routes' markers");
    assert!(
        generated == text,
        "template.yaml's routes are not the route table's: run \
         `cargo run -p mirobody-local -- routes-template template.yaml`"
    );
}

#[test]
fn every_route_in_the_route_table_is_in_the_template_and_vice_versa() {
    let expected = expected_routes();
    let actual = template_routes(&template());
    let missing: Vec<_> = expected
        .keys()
        .filter(|k| !actual.contains_key(*k))
        .collect();
    let extra: Vec<_> = actual
        .keys()
        .filter(|k| !expected.contains_key(*k))
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "template.yaml and the route table disagree (method, path):\n  missing from the template: {missing:?}\n  not in the route table: {extra:?}"
    );
}

#[test]
fn each_route_reaches_the_function_of_its_group() {
    let expected = expected_routes();
    for (key, binary) in template_routes(&template()) {
        assert_eq!(Some(&binary), expected.get(&key), "{key:?}");
    }
}

#[test]
fn every_function_is_a_workspace_binary_built_by_cargo_lambda_and_invocable_by_the_api() {
    let template = template();
    let globals = &template["Globals"]["Function"];
    assert_eq!(globals["Runtime"], "provided.al2023");
    assert_eq!(globals["Handler"], "bootstrap");
    assert_eq!(template["Parameters"]["Architecture"]["Default"], "arm64");
    let env = &globals["Environment"]["Variables"];
    assert_eq!(env["MIROBODY_STORE"], "dynamodb");
    assert_eq!(env["MIROBODY_DATA_TABLE"], json!({"Ref": "DataTable"}));
    assert_eq!(env["MIROBODY_KEYS_TABLE"], json!({"Ref": "KeysTable"}));
    assert_eq!(env["MIROBODY_KEYS_SECRET"], json!({"Ref": "KeysSecret"}));
    assert_eq!(env["HTTP_URI_PREFIX"], json!({"Ref": "HttpUriPrefix"}));

    let functions = of_type(&template, "AWS::Serverless::Function");
    let binaries: BTreeSet<String> = functions
        .iter()
        .filter(|(name, _)| name.as_str() != IMPORT_FUNCTION)
        .map(|(name, f)| {
            assert_eq!(f["Metadata"]["BuildMethod"], "rust-cargolambda", "{name}");
            let binary = f["Metadata"]["BuildProperties"]["Binary"].as_str().unwrap();
            let manifest = root().join("functions").join(binary).join("Cargo.toml");
            let manifest = std::fs::read_to_string(&manifest)
                .unwrap_or_else(|_| panic!("{name}: no crate at {}", manifest.display()));
            assert!(
                manifest.contains(&format!("name = \"{binary}\"")),
                "{name}: functions/{binary} builds no binary {binary}"
            );
            // Each function logs to its own group and runs as its own role.
            let log_group = f["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: LoggingConfig.LogGroup"));
            assert!(
                resources(&template)[log_group]["Properties"]["RetentionInDays"].is_object(),
                "{name}: its log group has no retention"
            );
            assert!(
                f["Properties"]["Role"]["Fn::GetAtt"][0].is_string(),
                "{name}"
            );
            // API Gateway may invoke it.
            let permitted = of_type(&template, "AWS::Lambda::Permission")
                .iter()
                .any(|(_, p)| {
                    p["Properties"]["FunctionName"] == json!({"Ref": name})
                        && p["Properties"]["Principal"] == "apigateway.amazonaws.com"
                });
            assert!(permitted, "{name}: no invoke permission for API Gateway");
            binary.to_string()
        })
        .collect();
    let groups: BTreeSet<String> = templates().map(|(_, _, g)| group_name(g)).collect();
    assert_eq!(
        binaries, groups,
        "one function per route group (and the import function)"
    );
}

/// The one function no route reaches: S3 starts it.
const IMPORT_FUNCTION: &str = "ImportFunction";

/// The upload bucket's name as the template spells it everywhere but the bucket's own
/// `!Ref` (from the stack id, so that nothing naming it depends on the bucket).
fn bucket_name_sub(suffix: &str) -> Value {
    json!({ "Fn::Sub": [
        format!("arn:${{AWS::Partition}}:s3:::mirobody-uploads-${{StackUuid}}{suffix}"),
        { "StackUuid": { "Fn::Select": [2, { "Fn::Split": ["/", { "Ref": "AWS::StackId" }] }] } }
    ] })
}

/// Every statement of a role's inline policies.
fn statements<'t>(template: &'t Value, role: &str) -> Vec<&'t Value> {
    resources(template)[role]["Properties"]["Policies"]
        .as_array()
        .unwrap_or_else(|| panic!("{role}: Policies"))
        .iter()
        .flat_map(|p| p["PolicyDocument"]["Statement"].as_array().unwrap())
        .collect()
}

/// A statement's actions as a list (one action may be written as a string).
fn actions(statement: &Value) -> Vec<String> {
    match &statement["Action"] {
        Value::String(one) => vec![one.clone()],
        Value::Array(many) => many
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect(),
        other => panic!("Action {other}"),
    }
}

#[test]
fn the_upload_bucket_is_private_encrypted_short_lived_and_open_to_the_product_origin() {
    let template = template();
    let bucket = &resources(&template)["UploadBucket"];
    assert_eq!(bucket["Type"], "AWS::S3::Bucket");
    let props = &bucket["Properties"];
    assert_eq!(
        props["BucketName"]["Fn::Sub"][0], "mirobody-uploads-${StackUuid}",
        "named from the stack id"
    );
    assert_eq!(
        props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
            ["SSEAlgorithm"],
        "AES256"
    );
    let block = &props["PublicAccessBlockConfiguration"];
    for setting in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(block[setting], true, "{setting}");
    }
    assert_eq!(
        props["OwnershipControls"]["Rules"],
        json!([{ "ObjectOwnership": "BucketOwnerEnforced" }])
    );
    let rules = props["LifecycleConfiguration"]["Rules"].as_array().unwrap();
    assert!(rules.iter().any(|r| r["Status"] == "Enabled"
        && r["ExpirationInDays"] == 1
        && r["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] == 1
        && r.get("Prefix").is_none()
        && r.get("Filter").is_none()));
    let cors = props["CorsConfiguration"]["CorsRules"].as_array().unwrap();
    assert_eq!(cors.len(), 1);
    assert_eq!(cors[0]["AllowedMethods"], json!(["PUT"]));
    assert_eq!(
        cors[0]["AllowedOrigins"],
        json!([{ "Fn::If": ["HasPublicUrl", { "Ref": "PublicUrl" }, { "Fn::GetAtt": ["HttpApi", "ApiEndpoint"] }] }]),
        "the product's own origin, as MCP_PUBLIC_URL"
    );
    // Plain HTTP is refused.
    let policy = of_type(&template, "AWS::S3::BucketPolicy");
    let [(_, policy)] = policy.as_slice() else {
        panic!("one bucket policy expected")
    };
    assert_eq!(
        policy["Properties"]["Bucket"],
        json!({ "Ref": "UploadBucket" })
    );
    let deny = &policy["Properties"]["PolicyDocument"]["Statement"][0];
    assert_eq!(deny["Effect"], "Deny");
    assert_eq!(deny["Condition"]["Bool"]["aws:SecureTransport"], "false");
}

#[test]
fn the_import_function_runs_on_objects_created_under_uploads() {
    let template = template();
    let function = &resources(&template)[IMPORT_FUNCTION];
    assert_eq!(function["Metadata"]["BuildProperties"]["Binary"], "import");
    let manifest = std::fs::read_to_string(root().join("functions/import/Cargo.toml"))
        .expect("functions/import");
    assert!(manifest.contains("name = \"import\""));
    let props = &function["Properties"];
    assert_eq!(props["MemorySize"], 512);
    assert_eq!(props["Timeout"], 900);
    assert_eq!(
        props["ReservedConcurrentExecutions"]["Fn::If"][1],
        json!({ "Ref": "ImportConcurrency" })
    );
    assert!(
        template["Parameters"]["ImportConcurrency"]["Default"]
            .as_u64()
            .is_some_and(|n| (1..=10).contains(&n)),
        "a small reserved concurrency by default"
    );
    assert_eq!(props["EventInvokeConfig"]["MaximumRetryAttempts"], 1);
    assert!(
        resources(&template)[props["LoggingConfig"]["LogGroup"]["Ref"].as_str().unwrap()]
            ["Properties"]["RetentionInDays"]
            .is_object()
    );
    let events: Vec<&Value> = props["Events"].as_object().unwrap().values().collect();
    let [event] = events.as_slice() else {
        panic!("one event source expected")
    };
    assert_eq!(event["Type"], "S3");
    assert_eq!(
        event["Properties"]["Bucket"],
        json!({ "Ref": "UploadBucket" })
    );
    assert_eq!(event["Properties"]["Events"], "s3:ObjectCreated:*");
    assert_eq!(
        event["Properties"]["Filter"]["S3Key"]["Rules"],
        json!([{ "Name": "prefix", "Value": "uploads/" }])
    );
    // No API Gateway permission: nothing but S3 starts it.
    assert!(
        !of_type(&template, "AWS::Lambda::Permission")
            .iter()
            .any(|(_, p)| p["Properties"]["FunctionName"] == json!({ "Ref": IMPORT_FUNCTION }))
    );
    // The same bucket name as the data function's, and no keys.
    let env = &props["Environment"]["Variables"];
    let data_env = &resources(&template)["DataFunction"]["Properties"]["Environment"]["Variables"];
    assert_eq!(
        env["MIROBODY_UPLOAD_BUCKET"],
        data_env["MIROBODY_UPLOAD_BUCKET"]
    );
    assert_eq!(
        env["MIROBODY_UPLOAD_BUCKET"]["Fn::Sub"][0],
        "mirobody-uploads-${StackUuid}"
    );
    assert_eq!(env["MIROBODY_KEYS_SECRET"], "");
    let console_env =
        &resources(&template)["ConsoleFunction"]["Properties"]["Environment"]["Variables"];
    assert_eq!(
        console_env["MIROBODY_UPLOAD_BUCKET"], data_env["MIROBODY_UPLOAD_BUCKET"],
        "the console's uploads go to the same bucket"
    );
}

#[test]
fn only_the_roles_that_need_the_bucket_reach_it_and_only_under_uploads_and_exports() {
    let template = template();
    let uploads = bucket_name_sub("/uploads/*");
    let exports = bucket_name_sub("/exports/*");
    for (name, _) in of_type(&template, "AWS::IAM::Role") {
        let s3: Vec<(Vec<String>, &Value)> = statements(&template, name)
            .into_iter()
            .filter(|st| actions(st).iter().any(|a| a.starts_with("s3:")))
            .map(|st| (actions(st), &st["Resource"]))
            .collect();
        let want: Vec<(Vec<String>, Value)> = match name.as_str() {
            "DataRole" => vec![(vec!["s3:PutObject".into()], uploads.clone())],
            // The console's upload page presigns the same PUT as the data API, and
            // deleting the data or the account removes files waiting for import.
            // An export larger than a Lambda response waits under exports/ for one
            // presigned GET (the console's and GET /api/user/export's).
            "ConsoleRole" => vec![
                (
                    vec!["s3:PutObject".into(), "s3:DeleteObject".into()],
                    uploads.clone(),
                ),
                (
                    vec!["s3:PutObject".into(), "s3:GetObject".into()],
                    exports.clone(),
                ),
            ],
            "OauthRole" => vec![
                (vec!["s3:DeleteObject".into()], uploads.clone()),
                (
                    vec!["s3:PutObject".into(), "s3:GetObject".into()],
                    exports.clone(),
                ),
            ],
            "ImportRole" => vec![
                (
                    vec!["s3:GetObject".into(), "s3:DeleteObject".into()],
                    uploads.clone(),
                ),
                (vec!["s3:ListBucket".into()], bucket_name_sub("")),
            ],
            _ => vec![],
        };
        let got: Vec<(Vec<String>, Value)> = s3.into_iter().map(|(a, r)| (a, r.clone())).collect();
        assert_eq!(got, want, "{name}: its S3 statements");
    }
    // The import role: no secret; on the keys table only GetItem of the items that lead
    // from an object key to its upload (upload-object#...).
    for statement in statements(&template, "ImportRole") {
        let resource = statement["Resource"].to_string();
        assert!(!resource.contains("KeysSecret"), "{statement}");
        if resource.contains("KeysTable") {
            assert_eq!(
                statement["Action"],
                json!("dynamodb:GetItem"),
                "{statement}"
            );
            assert_eq!(
                statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"],
                json!(["upload-object#*"]),
                "{statement}"
            );
        }
    }
}

#[test]
fn tables_are_the_definitions_in_infra_tables_json() {
    let template = template();
    let text = std::fs::read_to_string(root().join("infra/tables.json")).unwrap();
    let defs: Value = serde_json::from_str(&text).unwrap();
    for (role, resource) in [("keys", "KeysTable"), ("data", "DataTable")] {
        let def = &defs["tables"][role];
        let props = &resources(&template)[resource]["Properties"];
        let mut create = def["CreateTable"].clone();
        create.as_object_mut().unwrap().remove("TableName");
        for (field, want) in create.as_object().unwrap() {
            assert_eq!(&props[field], want, "{resource}.{field}");
        }
        assert_eq!(
            props["TimeToLiveSpecification"],
            def.get("TimeToLiveSpecification")
                .cloned()
                .unwrap_or(Value::Null),
            "{resource}.TimeToLiveSpecification"
        );
        assert_eq!(
            props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], true,
            "{resource}: point-in-time recovery"
        );
        assert_eq!(
            resources(&template)[resource]["DeletionPolicy"],
            "Retain",
            "{resource}"
        );
    }
}

/// Abuse limits at the door: the stage throttles every route, and each credential
/// endpoint (sign-up, sign-in, registration, token, the authorize and /mcplogin forms,
/// the console's sign-up, sign-in and password forms)
/// has a tighter limit of its own, on a route the template really has.
#[test]
fn the_stage_throttles_and_credential_endpoints_have_tighter_limits() {
    let template = template();
    let stages = of_type(&template, "AWS::ApiGatewayV2::Stage");
    let [(_, stage)] = stages.as_slice() else {
        panic!("one stage expected")
    };
    let properties = &stage["Properties"];
    let default = &properties["DefaultRouteSettings"];
    assert!(
        default["ThrottlingRateLimit"].is_object() && default["ThrottlingBurstLimit"].is_object()
    );
    let keys: Vec<String> = template_routes(&template)
        .into_keys()
        .map(|(method, path)| format!("{method} {path}"))
        .collect();
    for key in [
        "POST /auth/signup",
        "POST /auth/signin",
        "POST /oauth/register",
        "POST /oauth/token",
        "POST /oauth/authorize",
        "POST /oauth2/authorize",
        "POST /mcplogin",
        "POST /console/signup",
        "POST /console/signin",
        "POST /console/password",
    ] {
        let setting = &properties["RouteSettings"][key];
        assert_eq!(
            setting["ThrottlingRateLimit"],
            serde_json::json!({"Ref": "CredentialThrottleRate"}),
            "{key}"
        );
        assert!(
            keys.contains(&key.to_string()),
            "{key} is not a route of the template"
        );
    }
}
