//! List and get options from the query string, the apiserver's validation of
//! them (`ValidateListOptions`), and the resourceVersion semantics table of
//! the API concepts document turned into one `ReadMode`.

use super::continue_token::{ContinueToken, InvalidToken};
use crate::selector::{FieldSelector, LabelSelector, SelectorError};

/// The query parameters of a get, list or watch. Unparseable numbers or
/// booleans are kept as `unparsed` so the request can be forwarded for the
/// apiserver's own error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListOptions {
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub limit: i64,
    pub continue_token: Option<String>,
    /// The selectors as given (what a forwarded query carries).
    pub label_selector: String,
    pub field_selector: String,
    /// And as parsed, once, where the query is read: by a list, a watch,
    /// the authorizer's attributes (`metadata.name`).
    pub selectors: Selectors,
    pub watch: bool,
    pub allow_watch_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub timeout_seconds: Option<i64>,
    /// A Table's `includeObject`, validated when a Table is asked for.
    pub include_object: Option<String>,
    /// Parameters kubecache does not answer itself (`export`…) or that
    /// did not parse: their presence sends the request upstream.
    pub unparsed: Vec<String>,
}

/// Go's `isPrettyPrint`: a non-empty `pretty` in the query decides (true
/// only as `strconv.ParseBool` reads true, so `pretty=yes` is compact even
/// for curl); without one, curl, Wget and browsers get indented JSON. The
/// query is read as Go 1.19's `URL.Query()` reads it: the first value,
/// pairs with a `;` dropped.
pub fn pretty_print(query: Option<&str>, user_agent: Option<&str>) -> bool {
    // Like Go, only a query that spells "pretty" is parsed at all.
    if let Some(q) = query.filter(|q| q.contains("pretty")) {
        let value = q
            .split('&')
            .filter(|pair| !pair.contains(';'))
            .find_map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let decoded = |s: &str| {
                    url::form_urlencoded::parse(format!("x={s}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_default()
                };
                (decoded(k) == "pretty").then(|| decoded(v))
            });
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            return crate::go::strconv::parse_bool(&v) == Some(true);
        }
    }
    user_agent.is_some_and(|ua| {
        ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("Mozilla/5.0")
    })
}

/// The label and field selectors of a query, parsed; a selector that does
/// not parse keeps its error for the phase that refuses the request. A
/// field selector is still to be converted for its type (which fields it
/// may select, `FieldSelector::convert`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selectors {
    pub labels: Result<LabelSelector, SelectorError>,
    pub fields: Result<FieldSelector, SelectorError>,
}

impl Default for Selectors {
    fn default() -> Self {
        Selectors {
            labels: Ok(LabelSelector::default()),
            fields: Ok(FieldSelector::default()),
        }
    }
}

impl Selectors {
    fn parse(labels: &str, fields: &str) -> Selectors {
        Selectors {
            labels: LabelSelector::parse(labels),
            fields: FieldSelector::parse(fields),
        }
    }

    /// The object name a field selector requires exactly
    /// (`metadata.name=x`), as the apiserver's RequestInfo takes it.
    pub fn name(&self) -> Option<&str> {
        let fields = self.fields.as_ref().ok()?;
        fields
            .terms()
            .iter()
            .find(|t| t.field == "metadata.name" && !t.negate)
            .map(|t| t.value.as_str())
    }
}

impl ListOptions {
    pub fn parse(query: Option<&str>) -> Self {
        let mut o = ListOptions::default();
        let Some(q) = query else { return o };
        let mut seen: Vec<String> = Vec::new();
        for (k, v) in url::form_urlencoded::parse(q.as_bytes()) {
            // url.Values conversion takes the first value of a repeated key.
            if seen.iter().any(|s| *s == k) {
                continue;
            }
            seen.push(k.to_string());
            let v = v.into_owned();
            match k.as_ref() {
                "resourceVersion" => o.resource_version = Some(v),
                "resourceVersionMatch" => o.resource_version_match = Some(v),
                "limit" => match v.parse() {
                    Ok(n) => o.limit = n,
                    Err(_) => o.unparsed.push(k.into()),
                },
                "continue" => o.continue_token = Some(v),
                "includeObject" => o.include_object = Some(v),
                "labelSelector" => o.label_selector = v,
                "fieldSelector" => o.field_selector = v,
                "watch" => match crate::go::strconv::parse_bool(&v) {
                    Some(b) => o.watch = b,
                    None => o.unparsed.push(k.into()),
                },
                "allowWatchBookmarks" => match crate::go::strconv::parse_bool(&v) {
                    Some(b) => o.allow_watch_bookmarks = b,
                    None => o.unparsed.push(k.into()),
                },
                "sendInitialEvents" => match crate::go::strconv::parse_bool(&v) {
                    Some(b) => o.send_initial_events = Some(b),
                    None => o.unparsed.push(k.into()),
                },
                "timeoutSeconds" => match v.parse() {
                    Ok(n) => o.timeout_seconds = Some(n),
                    Err(_) => o.unparsed.push(k.into()),
                },
                // Output-shaping parameters the cache does not reproduce
                // (`pretty` is decided apart, as Go's isPrettyPrint does).
                "export" | "exact" | "includeUninitialized" => o.unparsed.push(k.into()),
                // The apiserver ignores parameters it does not know.
                _ => {}
            }
        }
        o.selectors = Selectors::parse(&o.label_selector, &o.field_selector);
        o
    }

    fn continues(&self) -> bool {
        self.continue_token
            .as_deref()
            .is_some_and(|c| !c.is_empty())
    }

    /// `ValidateListOptions` for lists (the watch rules come with watches).
    pub fn validate_list(&self) -> Result<(), OptionsError> {
        let mut causes = Vec::new();
        if let Some(m) = self
            .resource_version_match
            .as_deref()
            .filter(|m| !m.is_empty())
        {
            let rv = self.resource_version.as_deref().unwrap_or("");
            if rv.is_empty() {
                causes.push(forbidden(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if self.continues() {
                causes.push(forbidden(
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if m != "Exact" && m != "NotOlderThan" {
                causes.push(FieldError {
                    reason: "FieldValueNotSupported",
                    message: format!("Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
                    field: "resourceVersionMatch",
                });
            }
            if m == "Exact" && rv == "0" {
                causes.push(forbidden(
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if self.send_initial_events.is_some() {
            causes.push(FieldError {
                reason: "FieldValueForbidden",
                message: "Forbidden: sendInitialEvents is forbidden for list".into(),
                field: "sendInitialEvents",
            });
        }
        invalid_if_any(causes)
    }

    /// `ValidateListOptions` for watches (`validateWatchOptions`, with the
    /// WatchList feature on, as current apiservers have it).
    pub fn validate_watch(&self) -> Result<(), OptionsError> {
        let mut causes = Vec::new();
        let m = self.resource_version_match.as_deref().unwrap_or("");
        if self.send_initial_events.is_some() && m != "NotOlderThan" {
            causes.push(forbidden(
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !m.is_empty() {
            if self.send_initial_events.is_none() {
                causes.push(forbidden(
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if m != "NotOlderThan" {
                causes.push(FieldError {
                    reason: "FieldValueNotSupported",
                    message: format!(
                        "Unsupported value: \"{m}\": supported values: \"NotOlderThan\""
                    ),
                    field: "resourceVersionMatch",
                });
            }
            if self.continues() {
                causes.push(forbidden(
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
        invalid_if_any(causes)
    }
}

/// One field `ValidateListOptions` refuses, as apimachinery's
/// `field.Error`: its reason (`FieldValueForbidden`…), the field, and the
/// message as `ErrorBody` writes it ("Forbidden: …").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub reason: &'static str,
    pub field: &'static str,
    pub message: String,
}

/// Options the apiserver refuses before reading anything.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptionsError {
    /// `ValidateListOptions` refused these fields (its 422 on
    /// `ListOptions.meta.k8s.io`).
    #[error("invalid list options: {}", .0.iter().map(|f| format!("{}: {}", f.field, f.message)).collect::<Vec<_>>().join(", "))]
    Invalid(Vec<FieldError>),
    /// A continue token the store cannot decode (its 400).
    #[error("invalid continue token: {0}")]
    Continue(#[source] InvalidToken),
    #[error("specifying resource version is not allowed when using continue")]
    VersionWithContinue,
}

/// A forbidden use of `resourceVersionMatch`.
fn forbidden(msg: &str) -> FieldError {
    FieldError {
        reason: "FieldValueForbidden",
        message: format!("Forbidden: {msg}"),
        field: "resourceVersionMatch",
    }
}

fn invalid_if_any(causes: Vec<FieldError>) -> Result<(), OptionsError> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(OptionsError::Invalid(causes))
    }
}

/// Where a watch starts, per the API concepts' watch table and streaming
/// lists (`sendInitialEvents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrom {
    /// RV unset: the most recent state, which must be consistent.
    Latest(Initial),
    /// RV "0": any state.
    Any(Initial),
    /// RV N without initial events: every change after N.
    After(u64),
    /// RV N with `sendInitialEvents=true`: a state at least as new as N.
    AtLeast(u64),
}

/// What a watch sends before the live changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Initial {
    /// Synthetic ADDED events for the state (the legacy watch).
    State,
    /// Nothing (`sendInitialEvents=false`).
    Nothing,
    /// ADDED events, then the initial-events-end bookmark (`sendInitialEvents=true`).
    Events,
}

impl ListOptions {
    /// The start of a watch; validation must have passed.
    pub fn watch_from(&self) -> Result<WatchFrom, ModeError> {
        let initial = match self.send_initial_events {
            None => Initial::State,
            Some(false) => Initial::Nothing,
            Some(true) => Initial::Events,
        };
        Ok(match (self.rv(), initial) {
            ("", i) => WatchFrom::Latest(i),
            ("0", i) => WatchFrom::Any(i),
            (n, Initial::Events) => WatchFrom::AtLeast(numeric_rv(n)?),
            (n, _) => WatchFrom::After(numeric_rv(n)?),
        })
    }
}

/// What a read asks of the data, per the API concepts' semantics tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadMode {
    /// RV unset: consistent, must reflect every write made before it.
    MostRecent,
    /// RV="0": any data.
    Any,
    /// Data at least as new as N.
    NotOlderThan(u64),
    /// Data at exactly N.
    Exact(u64),
    /// A continue token: the page after `start` at the token's rv (−1: latest).
    Continue(ContinueToken),
}

/// Why a read has no mode the cache can serve: either the apiserver's own
/// error, or something only the upstream can judge.
#[derive(Debug)]
pub enum ModeError {
    Reject(OptionsError),
    /// e.g. a non-numeric resourceVersion: forward and let upstream answer.
    Forward(&'static str),
}

fn numeric_rv(rv: &str) -> Result<u64, ModeError> {
    rv.parse::<u64>()
        .map_err(|_| ModeError::Forward("resourceVersion is not a number"))
}

impl ListOptions {
    fn rv(&self) -> &str {
        self.resource_version.as_deref().unwrap_or("")
    }

    /// The mode of a list; validation must have passed.
    pub fn list_mode(&self) -> Result<ReadMode, ModeError> {
        let rv = self.rv();
        let m = self.resource_version_match.as_deref().unwrap_or("");
        if let Some(token) = self.continue_token.as_deref().filter(|c| !c.is_empty()) {
            let token = ContinueToken::decode(token)
                .map_err(|e| ModeError::Reject(OptionsError::Continue(e)))?;
            if !rv.is_empty() && rv != "0" {
                return Err(ModeError::Reject(OptionsError::VersionWithContinue));
            }
            return Ok(ReadMode::Continue(token));
        }
        Ok(match (rv, m) {
            ("", _) => ReadMode::MostRecent,
            ("0", _) => ReadMode::Any,
            (n, "Exact") => ReadMode::Exact(numeric_rv(n)?),
            (n, "NotOlderThan") => ReadMode::NotOlderThan(numeric_rv(n)?),
            // Legacy: with a limit an RV is exact, without one "not older than".
            (n, _) if self.limit > 0 => ReadMode::Exact(numeric_rv(n)?),
            (n, _) => ReadMode::NotOlderThan(numeric_rv(n)?),
        })
    }

    /// The mode of a get: unset → most recent, "0" → any, N → not older than.
    pub fn get_mode(&self) -> Result<ReadMode, ModeError> {
        Ok(match self.rv() {
            "" => ReadMode::MostRecent,
            "0" => ReadMode::Any,
            n => ReadMode::NotOlderThan(numeric_rv(n)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    // What the client sees: the Status the HTTP edge makes of the error.
    use crate::status::Status;

    fn opts(q: &str) -> ListOptions {
        ListOptions::parse(Some(q))
    }

    #[test]
    fn selectors_are_parsed_once_with_the_query_their_errors_kept() {
        let o = opts("labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx%2Cspec.nodeName%3Dn");
        assert_eq!(o.selectors.labels, LabelSelector::parse("app=web"));
        assert_eq!(o.selectors.name(), Some("x"));
        assert_eq!(
            opts("fieldSelector=metadata.name!%3Dx").selectors.name(),
            None
        );
        // No query, or no selectors: both select everything.
        assert_eq!(ListOptions::parse(None).selectors, Selectors::default());
        assert_eq!(opts("limit=5").selectors, Selectors::default());
        // A selector that does not parse keeps its error (the list or
        // watch refuses it) and names no object.
        let bad = opts("labelSelector=a%20in&fieldSelector=x%3D%3D%3Dy");
        assert!(bad.selectors.labels.is_err());
        assert!(bad.selectors.fields.is_err());
        assert_eq!(bad.selectors.name(), None);
    }
    fn mode(q: &str) -> ReadMode {
        let o = opts(q);
        o.validate_list().unwrap();
        match o.list_mode() {
            Ok(m) => m,
            Err(ModeError::Reject(e)) => panic!("{q}: {e}"),
            Err(ModeError::Forward(r)) => panic!("{q}: {r}"),
        }
    }
    fn token(rv: i64) -> String {
        ContinueToken::after(rv, "ns/a").encode()
    }

    fn watch_errors(q: &str) -> Vec<String> {
        match opts(q).validate_watch() {
            Ok(()) => vec![],
            Err(e) => Status::from(&e)
                .details
                .map(|d| {
                    d.causes
                        .iter()
                        .map(|c| format!("{}: {}", c.field, c.message))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    #[test]
    fn watch_options_are_validated_like_current_apiservers() {
        assert!(watch_errors("watch=1&resourceVersion=5").is_empty());
        assert!(
            watch_errors("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
                .is_empty()
        );
        assert_eq!(
            watch_errors("watch=1&resourceVersionMatch=NotOlderThan"),
            vec!["resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"]
        );
        assert_eq!(
            watch_errors("watch=1&sendInitialEvents=true"),
            vec!["resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"]
        );
        assert_eq!(
            watch_errors("watch=1&sendInitialEvents=false&resourceVersionMatch=Exact"),
            vec![
                "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
            ]
        );
        let s = Status::from(&opts("sendInitialEvents=true").validate_list().unwrap_err());
        assert_eq!(s.code, 422);
        assert!(
            s.message
                .ends_with("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
            "{}",
            s.message
        );
    }

    #[test]
    fn where_watches_start() {
        let from = |q: &str| opts(q).watch_from().unwrap();
        assert_eq!(from("watch=1"), WatchFrom::Latest(Initial::State));
        assert_eq!(from("resourceVersion=0"), WatchFrom::Any(Initial::State));
        assert_eq!(
            from("resourceVersion=0&sendInitialEvents=false"),
            WatchFrom::Any(Initial::Nothing)
        );
        assert_eq!(from("resourceVersion=7"), WatchFrom::After(7));
        assert_eq!(
            from("resourceVersion=7&sendInitialEvents=false"),
            WatchFrom::After(7)
        );
        assert_eq!(
            from("resourceVersion=7&sendInitialEvents=true"),
            WatchFrom::AtLeast(7)
        );
        assert_eq!(
            from("sendInitialEvents=true"),
            WatchFrom::Latest(Initial::Events)
        );
        assert!(matches!(
            opts("resourceVersion=x").watch_from(),
            Err(ModeError::Forward(_))
        ));
    }

    // One test per row of the "resourceVersionMatch and paging parameters for
    // list" table; columns are RV unset, "0", and N.
    #[test]
    fn row_match_unset_limit_unset() {
        assert_eq!(mode(""), ReadMode::MostRecent);
        assert_eq!(mode("resourceVersion=0"), ReadMode::Any);
        assert_eq!(mode("resourceVersion=42"), ReadMode::NotOlderThan(42));
    }

    #[test]
    fn row_match_unset_limit_set() {
        assert_eq!(mode("limit=5"), ReadMode::MostRecent);
        assert_eq!(mode("limit=5&resourceVersion=0"), ReadMode::Any);
        assert_eq!(mode("limit=5&resourceVersion=42"), ReadMode::Exact(42));
    }

    #[test]
    fn row_match_unset_with_continue() {
        let t = token(42);
        assert!(
            matches!(mode(&format!("limit=5&continue={t}")), ReadMode::Continue(c) if c.rv == 42)
        );
        assert!(matches!(
            mode(&format!("limit=5&continue={t}&resourceVersion=0")),
            ReadMode::Continue(_)
        ));
        let o = opts(&format!("limit=5&continue={t}&resourceVersion=42"));
        match o.list_mode() {
            Err(ModeError::Reject(e)) => {
                let s = Status::from(&e);
                assert_eq!(s.code, 400);
                assert_eq!(
                    s.message,
                    "specifying resource version is not allowed when using continue"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn row_match_exact() {
        for q in [
            "resourceVersionMatch=Exact",
            "resourceVersionMatch=Exact&limit=5",
        ] {
            let err = Status::from(&opts(q).validate_list().unwrap_err());
            assert_eq!(err.code, 422);
            assert!(err
                .message
                .contains("resourceVersionMatch is forbidden unless resourceVersion is provided"));
            let err = Status::from(
                &opts(&format!("{q}&resourceVersion=0"))
                    .validate_list()
                    .unwrap_err(),
            );
            assert!(
                err.message
                    .contains("resourceVersionMatch \\\"exact\\\" is forbidden")
                    || err.message.contains("\"exact\" is forbidden")
            );
            assert_eq!(
                mode(&format!("{q}&resourceVersion=42")),
                ReadMode::Exact(42)
            );
        }
    }

    #[test]
    fn row_match_not_older_than() {
        for q in [
            "resourceVersionMatch=NotOlderThan",
            "resourceVersionMatch=NotOlderThan&limit=5",
        ] {
            assert_eq!(
                Status::from(&opts(q).validate_list().unwrap_err()).code,
                422
            );
            assert_eq!(mode(&format!("{q}&resourceVersion=0")), ReadMode::Any);
            assert_eq!(
                mode(&format!("{q}&resourceVersion=42")),
                ReadMode::NotOlderThan(42)
            );
        }
    }

    #[test]
    fn match_with_continue_is_forbidden() {
        let e = Status::from(
            &opts(&format!(
                "resourceVersionMatch=NotOlderThan&resourceVersion=1&continue={}",
                token(3)
            ))
            .validate_list()
            .unwrap_err(),
        );
        assert!(e
            .message
            .contains("resourceVersionMatch is forbidden when continue is provided"));
    }

    #[test]
    fn unknown_match_values_are_not_supported() {
        let e = Status::from(
            &opts("resourceVersionMatch=Newest&resourceVersion=1")
                .validate_list()
                .unwrap_err(),
        );
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains("Unsupported value: \"Newest\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn bad_continue_tokens_are_bad_requests() {
        match opts("continue=%%%").list_mode() {
            Err(ModeError::Reject(e)) => {
                let s = Status::from(&e);
                assert_eq!(s.code, 400);
                assert!(s
                    .message
                    .starts_with("invalid continue token: continue key is not valid"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn get_modes() {
        assert_eq!(opts("").get_mode().unwrap(), ReadMode::MostRecent);
        assert_eq!(opts("resourceVersion=0").get_mode().unwrap(), ReadMode::Any);
        assert_eq!(
            opts("resourceVersion=9").get_mode().unwrap(),
            ReadMode::NotOlderThan(9)
        );
    }

    #[test]
    fn non_numeric_versions_and_numbers_go_upstream() {
        assert!(matches!(
            opts("resourceVersion=abc").list_mode(),
            Err(ModeError::Forward(_))
        ));
        assert_eq!(opts("limit=abc").unparsed, vec!["limit".to_string()]);
        assert_eq!(opts("export=true").unparsed, vec!["export".to_string()]);
        assert!(opts("pretty=true").unparsed.is_empty());
    }

    #[test]
    fn pretty_printing_follows_the_query_first_and_the_user_agent_second() {
        let curl = Some("curl/8.5.0");
        assert!(pretty_print(None, curl));
        assert!(pretty_print(None, Some("Wget/1.21")));
        assert!(pretty_print(None, Some("Mozilla/5.0 (X11)")));
        assert!(!pretty_print(None, Some("Mozilla/4.0")));
        assert!(!pretty_print(None, Some("kubectl/v1.20.2")));
        assert!(!pretty_print(None, None));
        assert!(pretty_print(Some("pretty=true"), None));
        assert!(pretty_print(Some("limit=1&pretty=1"), Some("kc")));
        assert!(
            pretty_print(Some("%70retty=1&pretty=0"), None),
            "decoded keys count"
        );
        assert!(!pretty_print(Some("pretty=false"), curl));
        assert!(
            !pretty_print(Some("pretty=yes"), curl),
            "not a Go bool: false"
        );
        assert!(
            pretty_print(Some("pretty="), curl),
            "empty: the agent decides"
        );
        assert!(pretty_print(Some("pretty"), curl));
        assert!(
            !pretty_print(Some("pretty=0&pretty=1"), None),
            "the first value wins"
        );
        assert!(
            pretty_print(Some("pretty=0;x&pretty=1"), None),
            "a pair with ; is dropped"
        );
        assert!(pretty_print(Some("labelSelector=prettyish"), curl));
        assert!(!pretty_print(Some("labelSelector=prettyish"), None));
    }

    #[test]
    fn first_value_of_a_repeated_parameter_wins() {
        assert_eq!(opts("limit=3&limit=9").limit, 3);
    }
}
