//! What this build of the crate links ("lean functions"): each Lambda function
//! enables its route group's Cargo feature (`group-mcp`, …), which implies the dependency
//! boundaries the group needs (`s3`, `console`); the local server, the tests and the fuzz
//! targets build `full` (every group, and `sqlite` for the embedded store). `mail` (Amazon
//! SES) is the oauth and console groups' only.
//!
//! The cfgs sit at module and dispatch boundaries only: each row's handler is compiled in
//! with its group (`gate!` in `app/routes.rs`; another group's row answers `NOT_BUILT`),
//! and without `console` there is no `crate::console`. A single-group build allows dead
//! code (what only other groups use); the full build checks it.
//! `tests/e2e/lean_functions.rs` reads each function's dependency tree.
//!
//! Owns the one start-up check that the group a binary serves was compiled in: `App::new`
//! refuses any other, so a route never reaches a handler the build left out.

use crate::config::ConfigError;
use crate::http::RouteGroup;

/// The route groups this build serves.
const COMPILED: &[(RouteGroup, bool)] = &[
    (RouteGroup::Mcp, cfg!(feature = "group-mcp")),
    (RouteGroup::Personal, cfg!(feature = "group-personal")),
    (RouteGroup::Oauth, cfg!(feature = "group-oauth")),
    (RouteGroup::Data, cfg!(feature = "group-data")),
    (RouteGroup::Console, cfg!(feature = "group-console")),
];

/// Refuses `group` when this build lacks it (`All`: when it lacks any group).
pub(crate) fn check_group(group: RouteGroup) -> Result<(), ConfigError> {
    check_in(group, COMPILED)
}

fn check_in(group: RouteGroup, compiled: &[(RouteGroup, bool)]) -> Result<(), ConfigError> {
    let missing = compiled
        .iter()
        .filter(|(g, built)| !built && (group == RouteGroup::All || *g == group))
        .map(|(g, _)| feature_of(*g))
        .collect::<Vec<_>>();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(ConfigError {
            setting: "route group".into(),
            problem: format!(
                "this binary was built without the {group:?} routes (mirobody feature {})",
                missing.join(", ")
            ),
        }),
    }
}

fn feature_of(group: RouteGroup) -> &'static str {
    match group {
        RouteGroup::Mcp => "`group-mcp`",
        RouteGroup::Personal => "`group-personal`",
        RouteGroup::Oauth => "`group-oauth`",
        RouteGroup::Data => "`group-data`",
        RouteGroup::Console => "`group-console`",
        RouteGroup::All => "`full`",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build of the mcp group alone.
    const MCP_ONLY: &[(RouteGroup, bool)] = &[
        (RouteGroup::Mcp, true),
        (RouteGroup::Personal, false),
        (RouteGroup::Oauth, false),
        (RouteGroup::Data, false),
        (RouteGroup::Console, false),
    ];

    #[test]
    fn a_build_serves_its_own_group_only() {
        assert_eq!(check_in(RouteGroup::Mcp, MCP_ONLY), Ok(()));
        let error = check_in(RouteGroup::Console, MCP_ONLY).unwrap_err();
        assert_eq!(
            error.to_string(),
            "bad setting route group: this binary was built without the Console routes \
             (mirobody feature `group-console`)"
        );
        let all = check_in(RouteGroup::All, MCP_ONLY).unwrap_err();
        assert!(
            all.problem.contains("`group-personal`, `group-oauth`"),
            "{all}"
        );
        assert!(all.problem.contains("`group-console`"), "{all}");
    }

    #[test]
    fn the_full_build_serves_every_group() {
        for group in [
            RouteGroup::Mcp,
            RouteGroup::Personal,
            RouteGroup::Oauth,
            RouteGroup::Data,
            RouteGroup::Console,
            RouteGroup::All,
        ] {
            assert_eq!(check_group(group), Ok(()), "{group:?}");
        }
    }
}
