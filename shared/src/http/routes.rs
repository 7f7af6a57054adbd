//! What a route is, and how a request finds its row: the shape of a row of the route
//! table (`app/routes.rs`, where each row carries its handler), and the router compiled
//! from the rows once per process. Generic over what answers a route, so this floor knows
//! nothing of the handlers (nor of the console).
//!
//! Owns path shapes and the `HTTP_URI_PREFIX` rule: `/mcp`, `/mcp/{secret}` and
//! `/personal/mcp` live under the prefix, the resource metadata of the prefixed `/mcp`
//! puts it after the well-known name, and every other path (well-known documents, the
//! OAuth and REST APIs) never has it. A route's name (in the request log) is "METHOD
//! path" unless the row names an alias; it never shows a path parameter's value.

use std::collections::HashMap;

use http::Method;

/// The route groups: one Lambda function each (template.yaml); the local server serves all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteGroup {
    Mcp,
    Personal,
    Oauth,
    Data,
    /// The web console's pages.
    Console,
    All,
}

/// Who may call a route. `App::dispatch` checks it before the handler runs, and the
/// CORS headers of the answer follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Cross-origin by design (discovery, registration and token endpoints for
    /// browser-based clients): no `Origin`/`Host` check; CORS allows any origin.
    Open,
    /// Protected against DNS rebinding: the `Origin`/`Host` check (403); CORS echoes an
    /// allowed origin.
    SameOrigin,
    /// Same-origin, and a valid bearer token is required (401 without one).
    SignedIn,
    /// A console page: the `Origin`/`Host` check, and no CORS headers at all
    /// (a page and its forms are for this origin's own tabs); the console checks its
    /// session cookie and CSRF token itself.
    Page,
    /// The OAuth sign-in and consent forms (CSRF cookie): like `SameOrigin`, but
    /// `MCP_ALLOWED_ORIGINS` never widens their `Origin` check.
    Form,
}

/// Which bearer tokens a route takes: read by the one check in caller resolution
/// (`CallerResolver::admit`), for signed-in routes and for a bearer token on `/mcp`.
/// A token that does not verify is 401; a valid one of another kind or without the
/// scope is 403 (`insufficient_scope`). A client-credentials token is never a person,
/// so no row takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Accepts {
    /// Only a person's first-party session (sign-in, sign-up, the development mint):
    /// the account, data, share, personal-URL and server-registry APIs.
    Session,
    /// A person's session, or an OAuth access token whose scope includes this one.
    SessionOrScope(&'static str),
}

/// Where `HTTP_URI_PREFIX` goes in a route's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prefix {
    /// Nowhere: the path is served as written, whatever the prefix.
    Never,
    /// In front: `/mcp` is served at `/api/mcp` with the prefix `/api`.
    Leading,
    /// After this leading part of the path (RFC 9728: the metadata of the resource
    /// `/api/mcp` is at `/.well-known/oauth-protected-resource/api/mcp`).
    After(&'static str),
}

/// One route: what the row of the route table says about it. `H` is what answers it
/// (the app's handler); later needs per route become fields here with a default in the
/// table's `ROW`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Route<H: 'static> {
    pub method: &'static str,
    /// The path without the prefix; `{name}` matches one non-empty segment.
    pub path: &'static str,
    pub prefix: Prefix,
    pub group: RouteGroup,
    /// The name in the request log: "METHOD path" unless an alias shares another's name;
    /// safe to log (no path parameter's value).
    pub name: &'static str,
    pub access: Access,
    pub handler: H,
    /// The bearer tokens it takes (the strictest, a first-party session, by default).
    pub accepts: Accepts,
    /// In `template.yaml`: API Gateway sends it to the group's function. `false` for
    /// what only the local server answers.
    pub deployed: bool,
    /// The largest request body it takes, in bytes: checked before anything parses it
    /// (the local server stops reading there; Lambda's already-read body is refused
    /// unparsed). A 6 MB hostile JSON body must never reach a parser.
    pub max_body: usize,
    /// The local server streams its body to the handler as it arrives instead of
    /// reading it whole (`App::handle_streamed`: an upload's file).
    pub streamed: bool,
}

/// Forms and small JSON (accounts, OAuth, shares, the personal URL): the default.
pub(crate) const FORM_BODY: usize = 16 * 1024;
/// A JSON-RPC message: tool arguments are bounded far below this (1,000 rsids is ~15 KB).
pub(crate) const RPC_BODY: usize = 256 * 1024;
/// A server registration: headers, a credential of up to 8 KiB, 256 allowed tool names.
pub(crate) const REGISTRY_BODY: usize = 64 * 1024;
/// An upload of readings or genotypes (API Gateway takes 10 MB; Lambda 6 MB).
pub(crate) const UPLOAD_BODY: usize = 8 * 1024 * 1024;

/// A request's route with the values of its path parameters. Its `Debug` shows the
/// route's name only: a parameter may be a secret.
pub struct Matched<'p, H: 'static> {
    pub(crate) route: &'static Route<H>,
    pub(crate) params: Params<'p>,
}

impl<H> Clone for Matched<'_, H> {
    fn clone(&self) -> Self {
        Matched {
            route: self.route,
            params: self.params.clone(),
        }
    }
}

impl<'p, H> Matched<'p, H> {
    /// The value of `{name}` in the path, if the route's path has it.
    pub(crate) fn param(&self, name: &str) -> Option<&'p str> {
        self.params.get(name)
    }
}

impl<H> std::fmt::Debug for Matched<'_, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.route.name)
    }
}

/// The values of a request's path parameters, by name. Its `Debug` shows the names
/// only: a value may be a secret.
#[derive(Clone, Default)]
pub(crate) struct Params<'p>(pub(crate) Vec<(&'static str, &'p str)>);

impl<'p> Params<'p> {
    /// The value of `{name}` in the path, if the route's path has it.
    pub(crate) fn get(&self, name: &str) -> Option<&'p str> {
        self.0
            .iter()
            .find(|(param, _)| *param == name)
            .map(|(_, value)| *value)
    }
}

impl std::fmt::Debug for Params<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

/// What the table says about a request's method and path.
#[derive(Debug, Clone)]
pub enum Resolved<'p, H: 'static> {
    Route(Matched<'p, H>),
    /// A known path with a method it does not serve: the methods it does, for `Allow`.
    /// (`App::handle` answers it with 404, as it always has.)
    MethodNotAllowed(String),
    NotFound,
}

impl<H> Resolved<'_, H> {
    /// The group whose function serves the route; `None` when nothing does.
    pub fn group(&self) -> Option<RouteGroup> {
        match self {
            Resolved::Route(matched) => Some(matched.route.group),
            _ => None,
        }
    }
}

/// The route table compiled for one prefix, built once per process: the rows without a
/// path parameter by the exact path they answer (one hash look-up), and the few rows
/// with one, tried in table order. Answers exactly as a scan of the rows in order would.
pub(crate) struct Router<H: 'static> {
    rows: &'static [Route<H>],
    prefix: String,
    /// Full path (prefix placed) → indices into the rows of the rows without a
    /// parameter that answer it, in table order, and whether it is alone (no row with a
    /// parameter answers that path too, so the patterns need not be tried). A fixed-seed
    /// hash: its keys are the table's own paths, which no request can add to.
    exact: HashMap<String, (Vec<usize>, bool), foldhash::fast::FixedState>,
    /// The rows whose path has a `{param}`, in table order: the index and the literal
    /// start of the full path (prefix placed), which a request path must begin with.
    patterns: Vec<(usize, String)>,
}

impl<H> Router<H> {
    /// The rows compiled for `prefix`. Trailing slashes are ignored when resolving;
    /// paths outside the prefix are tried first.
    pub(crate) fn new(rows: &'static [Route<H>], prefix: &str) -> Router<H> {
        let mut exact: HashMap<String, (Vec<usize>, bool), _> =
            HashMap::with_hasher(foldhash::fast::FixedState::default());
        let mut patterns = Vec::new();
        for (index, route) in rows.iter().enumerate() {
            let full = match route.prefix {
                Prefix::Never => route.path.to_string(),
                Prefix::Leading => format!("{prefix}{}", route.path),
                Prefix::After(head) => {
                    format!("{head}{prefix}{}", &route.path[head.len()..])
                }
            };
            match full.find('{') {
                Some(at) => patterns.push((index, full[..at].to_string())),
                None => exact.entry(full).or_default().0.push(index),
            }
        }
        for (full, (_, alone)) in exact.iter_mut() {
            *alone = patterns.iter().all(|(index, head)| {
                !full.starts_with(head.as_str()) || captures(&rows[*index], prefix, full).is_none()
            });
        }
        Router {
            rows,
            prefix: prefix.to_string(),
            exact,
            patterns,
        }
    }

    pub(crate) fn resolve<'p>(&self, method: &Method, path: &'p str) -> Resolved<'p, H> {
        let path = if path.len() > 1 {
            path.trim_end_matches('/')
        } else {
            path
        };
        let (exact, alone) = match self.exact.get(path) {
            Some((rows, alone)) => (rows.as_slice(), *alone),
            None => (&[][..], false),
        };
        let patterns = if alone { &[][..] } else { &self.patterns[..] };
        for under_prefix in [false, true] {
            let in_pass =
                |index: &usize| (self.rows[*index].prefix == Prefix::Leading) == under_prefix;
            // A path no pattern answers: its first row (in table order) with the method
            // is the answer, found without gathering the rows.
            if patterns.is_empty()
                && let Some(&index) = exact
                    .iter()
                    .filter(|index| in_pass(index))
                    .find(|index| self.rows[**index].method == method.as_str())
            {
                let route = &self.rows[index];
                let params = Params(Vec::new());
                return Resolved::Route(Matched { route, params });
            }
            // The rows that answer this path, in table order, with their parameters.
            let mut found: Vec<(usize, Vec<(&'static str, &'p str)>)> = exact
                .iter()
                .filter(|index| in_pass(index))
                .map(|&index| (index, Vec::new()))
                .collect();
            for (index, head) in patterns {
                if !in_pass(index) || !path.starts_with(head.as_str()) {
                    continue;
                }
                let index = *index;
                if let Some(params) = captures(&self.rows[index], &self.prefix, path) {
                    found.push((index, params));
                }
            }
            found.sort_by_key(|(index, _)| *index);
            let mut allowed: Vec<&str> = Vec::new();
            for (index, params) in found {
                let route = &self.rows[index];
                if route.method == method.as_str() {
                    let params = Params(params);
                    return Resolved::Route(Matched { route, params });
                }
                if !allowed.contains(&route.method) {
                    allowed.push(route.method);
                }
            }
            if !allowed.is_empty() {
                return Resolved::MethodNotAllowed(allowed.join(", "));
            }
        }
        Resolved::NotFound
    }
}

/// The path parameters when `path` is the route's path with the prefix placed by its rule.
pub(crate) fn captures<'p, H>(
    route: &Route<H>,
    prefix: &str,
    path: &'p str,
) -> Option<Vec<(&'static str, &'p str)>> {
    let (head, inserted) = match route.prefix {
        Prefix::Never => ("", ""),
        Prefix::Leading => ("", prefix),
        Prefix::After(head) => (head, prefix),
    };
    let rest = path.strip_prefix(head)?.strip_prefix(inserted)?;
    let template = &route.path[head.len()..];
    // Most paths have no parameter: one comparison.
    let Some(literal) = template.find('{') else {
        return (rest == template).then(Vec::new);
    };
    if !rest.starts_with(&template[..literal]) {
        return None;
    }
    let mut template = template.split('/');
    let mut segments = rest.split('/');
    let mut params = Vec::new();
    loop {
        match (template.next(), segments.next()) {
            (None, None) => return Some(params),
            (Some(part), Some(segment)) => {
                match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(name) if !segment.is_empty() => params.push((name, segment)),
                    Some(_) => return None,
                    None if part == segment => {}
                    None => return None,
                }
            }
            _ => return None,
        }
    }
}

/// The methods `rows` serve `route`'s path with, of the rows `counts` keeps (for an
/// `Allow` header).
pub(crate) fn methods_at<H>(
    rows: &[Route<H>],
    route: &Route<H>,
    counts: impl Fn(&Route<H>) -> bool,
) -> String {
    let mut methods: Vec<&str> = Vec::new();
    for other in rows {
        let same = other.path == route.path && other.prefix == route.prefix;
        if same && counts(other) && !methods.contains(&other.method) {
            methods.push(other.method);
        }
    }
    methods.join(", ")
}
