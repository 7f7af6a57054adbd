//! Lean functions: each Lambda function links what its route group needs and
//! nothing else. Reads each function's dependency tree as `cargo build -p <function>`
//! resolves it (its own features: `cargo build --workspace` unifies them, so the workspace
//! build proves nothing about one function) and checks what it must link and what it must
//! not; and that `sam build` (cargo-lambda) builds each function that way too. Cheap:
//! `cargo tree` resolves, it builds nothing.

use std::collections::BTreeSet;
use std::process::Command;

/// The Lambda functions: one per route group, and the import function.
const FUNCTIONS: [&str; 6] = ["mcp", "personal", "oauth", "data", "console", "import"];

/// What `cargo tree -p <package>` resolves: the crates linked (normal dependencies, the
/// host target) and the `mirobody` features enabled.
struct Tree {
    crates: BTreeSet<String>,
    features: BTreeSet<String>,
}

/// What `cargo tree --locked --prefix none <args>` prints, run at the workspace root.
fn cargo_tree(args: &[&str]) -> String {
    let output = e2e::cargo()
        .args(["tree", "--locked", "--prefix", "none"])
        .args(args)
        .output()
        .expect("cargo tree runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && !text.is_empty(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    text
}

fn tree(package: &str) -> Tree {
    let text = cargo_tree(&["-p", package, "-e", "normal,features"]);
    let mut tree = Tree {
        crates: BTreeSet::new(),
        features: BTreeSet::new(),
    };
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(second)) = (words.next(), words.next()) else {
            continue;
        };
        match (name, second) {
            ("mirobody", "feature") => {
                let feature = words.next().unwrap_or_default().trim_matches('"');
                tree.features.insert(feature.to_string());
            }
            (_, "feature") => {}
            _ => {
                tree.crates.insert(name.to_string());
            }
        }
    }
    tree
}

/// Whether `function` links `krate`, with the tree in the message when the answer is wrong.
fn check(function: &str, tree: &Tree, krate: &str, wanted: bool) {
    assert_eq!(
        tree.crates.contains(krate),
        wanted,
        "{function} {} {krate}; it links {:?}",
        if wanted { "must link" } else { "must not link" },
        tree.crates
    );
}

#[test]
fn each_function_links_its_groups_needs_only() {
    for function in FUNCTIONS {
        let tree = tree(function);
        // Every function: the library, DynamoDB and the Lambda runtime.
        for needed in ["mirobody", "aws-sdk-dynamodb", "lambda_runtime"] {
            check(function, &tree, needed, true);
        }
        // SQLite is the local server's embedded store: never in a Lambda function.
        check(function, &tree, "rusqlite", false);
        check(function, &tree, "libsqlite3-sys", false);
        // S3 only where files are uploaded, imported or exported.
        let s3 = matches!(function, "oauth" | "data" | "console" | "import");
        check(function, &tree, "aws-sdk-s3", s3);
        // Only the functions that send mail (sign-up, reset, invitations).
        let ses = matches!(function, "oauth" | "console");
        check(function, &tree, "aws-sdk-sesv2", ses);
        // Password hashing and HTML pages only where people sign up and in and pages are
        // served (the authorization server, the console).
        let pages = matches!(function, "oauth" | "console");
        check(function, &tree, "argon2", pages);
        check(function, &tree, "maud", pages);
        // The Apple Health parser only where uploads are read.
        let uploads = matches!(function, "data" | "console" | "import");
        check(function, &tree, "quick-xml", uploads);

        // The library's features: the function's own group (the import function has no
        // routes), never the full build or another group's.
        let group = format!("group-{function}");
        assert!(
            tree.features.contains(&group),
            "{function}: {:?}",
            tree.features
        );
        for feature in &tree.features {
            assert!(
                !feature.starts_with("group-") || *feature == group,
                "{function} enables {feature}"
            );
        }
        for never in ["full", "sqlite", "fixtures", "testing", "fuzzing"] {
            assert!(!tree.features.contains(never), "{function} enables {never}");
        }
        assert_eq!(
            tree.features.contains("console"),
            function == "console",
            "{function}: the console's pages: {:?}",
            tree.features
        );
    }
}

/// The local server serves every group over the embedded store: the full build.
#[test]
fn the_local_server_links_everything() {
    let tree = tree("mirobody-local");
    for needed in [
        "rusqlite",
        "aws-sdk-s3",
        "aws-sdk-dynamodb",
        "reqwest",
        "maud",
        "argon2",
        "quick-xml",
    ] {
        check("mirobody-local", &tree, needed, true);
    }
    for feature in ["full", "sqlite", "s3", "console", "fixtures"] {
        assert!(tree.features.contains(feature), "local: {feature}");
    }
    for function in FUNCTIONS {
        assert!(
            tree.features.contains(&format!("group-{function}")),
            "local lacks group-{function}"
        );
    }
}

/// Every crate `cargo tree` resolves for `packages` (`-p` each, or the whole workspace), as
/// "name version features" lines, the workspace's own crates left out.
fn resolved_features(packages: &[&str]) -> BTreeSet<String> {
    let mut args = vec!["-e", "normal,build", "-f", "{p} {f}"];
    if packages.is_empty() {
        args.push("--workspace");
    }
    for package in packages {
        args.extend(["-p", *package]);
    }
    cargo_tree(&args)
        .lines()
        .filter(|line| !line.contains(" (/")) // a path dependency: one of ours
        .map(|line| line.trim_end_matches(" (*)").to_string())
        .collect()
}

/// The feature pins in `shared/Cargo.toml`: each function alone resolves every third-party
/// crate with the workspace build's features, so checking a function's own feature set
/// (scripts/test) reuses the workspace's checked dependencies. A crate that resolves
/// differently is checked again, with everything built on it, once per function.
#[test]
fn each_function_resolves_its_dependencies_with_the_workspaces_features() {
    let workspace = resolved_features(&[]);
    for function in FUNCTIONS {
        let own: Vec<String> = resolved_features(&[function])
            .difference(&workspace)
            .cloned()
            .collect();
        assert!(
            own.is_empty(),
            "{function} resolves these crates with features of its own (pin them in \
             shared/Cargo.toml with the workspace's): {own:?}"
        );
    }
}

/// `sam build` builds a function with `cargo lambda build --release --bin <function>` at
/// the workspace root (CodeUri `.`), and cargo given only `--bin` there resolves every
/// member's features together: the function would link the whole product, the local
/// server's store and the test support. Each function's `[package.metadata.lambda.build]`
/// names its package, which cargo-lambda passes on. Checked on the cargo-lambda that
/// `scripts/install-test-deps` installs, with a stand-in `cargo` that records the build
/// command (and answers `cargo metadata` with the real one): nothing is built.
#[test]
fn sam_builds_each_function_as_its_own_package() {
    let root = e2e::root();
    let cargo_lambda = root.join(".venv/bin/cargo-lambda");
    assert!(
        cargo_lambda.exists(),
        "cargo-lambda is not installed: run scripts/install-test-deps (scripts/test does)"
    );
    let real_cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let dir = e2e::TempDir::new("sam-build");
    let recorded = dir.0.join("build-command");
    let stand_in = dir.0.join("cargo");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\nif [ \"$1\" = metadata ]; then exec '{real_cargo}' \"$@\"; fi\n\
             echo \"$*\" > '{}'\nexit 1\n",
            recorded.display()
        ),
    )
    .unwrap();
    let mut permissions = std::fs::metadata(&stand_in).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&stand_in, permissions).unwrap();
    for function in FUNCTIONS {
        let _ = std::fs::remove_file(&recorded);
        let run = Command::new(&cargo_lambda)
            .current_dir(&root)
            .args(["lambda", "build", "--release", "--bin", function])
            .args(["--compiler", "cargo"])
            .env("CARGO", &stand_in)
            .output()
            .expect("cargo-lambda runs");
        let command = std::fs::read_to_string(&recorded).unwrap_or_else(|_| {
            panic!(
                "{function}: cargo-lambda ran no build: {}",
                String::from_utf8_lossy(&run.stderr)
            )
        });
        let words: Vec<&str> = command.split_whitespace().collect();
        assert!(
            words.windows(2).any(|pair| pair == ["--package", function]),
            "{function}: {command}"
        );
        assert!(
            words.windows(2).any(|pair| pair == ["--bin", function]),
            "{function}: {command}"
        );
    }
}
