//! Content negotiation on `Accept`, exactly as the apiserver does it: its
//! header parser (goautoneg: clauses sorted by q and specificity, malformed
//! clauses skipped, a bad q read as 0 and still acceptable), then the first
//! clause and serializer (JSON, YAML, protobuf, in that order) that the
//! endpoint accepts, with `as`/`g`/`v` naming a conversion (Table,
//! PartialObjectMetadata[List]) and `stream`, `sv`, `pretty` honoured.

/// One clause of an Accept header.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    pub kind: String,
    pub sub: String,
    pub q: f64,
    /// Parameters other than q; a repeated key keeps its last value.
    pub params: Vec<(String, String)>,
}

impl Clause {
    fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Splits at the first `sep`, like goautoneg's nextSplitElement.
fn next_split(s: &str, sep: char) -> (&str, &str) {
    match s.find(sep) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

fn trim_spaces(s: &str) -> &str {
    s.trim_matches(' ')
}

/// goautoneg.ParseAccept: the clauses in preference order.
pub fn parse(header: &str) -> Vec<Clause> {
    let mut out = Vec::new();
    let mut remaining = header;
    while !remaining.is_empty() {
        let (part, rest) = next_split(remaining, ',');
        remaining = rest;
        let part = trim_spaces(part);
        let (media, mut params_part) = next_split(part, ';');
        let (kind, after) = next_split(media, '/');
        let kind = trim_spaces(kind).to_string();
        let sub = if after.is_empty() {
            if kind != "*" {
                continue;
            }
            "*".to_string()
        } else {
            let (sub, extra) = next_split(after, '/');
            if !extra.is_empty() {
                continue;
            }
            trim_spaces(sub).to_string()
        };
        let mut clause = Clause {
            kind,
            sub,
            q: 1.0,
            params: Vec::new(),
        };
        while !params_part.is_empty() {
            let (p, rest) = next_split(params_part, ';');
            params_part = rest;
            let (key, rest) = next_split(p, '=');
            if rest.is_empty() {
                continue;
            }
            // `k=v=` still counts (as v); `k=v=w` does not.
            let (value, extra) = next_split(rest, '=');
            if !extra.is_empty() {
                continue;
            }
            let key = trim_spaces(key);
            if key == "q" {
                // strconv.ParseFloat(s, 32): an error leaves 0, still a
                // clause the server may pick.
                clause.q = crate::go::strconv::parse_float32(value);
            } else {
                let value = trim_spaces(value).to_string();
                match clause.params.iter_mut().find(|(k, _)| k == key) {
                    Some(slot) => slot.1 = value,
                    None => clause.params.push((key.to_string(), value)),
                }
            }
        }
        out.push(clause);
    }
    // sort.Sort on fewer than 13 elements is an insertion sort; more than
    // that is not seen in practice, and a stable sort by the same Less
    // gives the same order for every header tried against the apiserver.
    insertion_sort(&mut out);
    out
}

/// goautoneg's Less: higher q first, then concrete types before wildcards.
fn less(a: &Clause, b: &Clause) -> bool {
    if a.q > b.q {
        return true;
    }
    if a.kind != "*" && b.kind == "*" {
        return true;
    }
    if a.sub != "*" && b.sub == "*" {
        return true;
    }
    false
}

fn insertion_sort(v: &mut [Clause]) {
    for i in 1..v.len() {
        let mut j = i;
        while j > 0 && less(&v[j], &v[j - 1]) {
            v.swap(j, j - 1);
            j -= 1;
        }
    }
}

/// The serializers the apiserver offers, in its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Media {
    Json,
    Yaml,
    Protobuf,
}

impl Media {
    /// The apiserver's serializers.
    pub const ALL: [Media; 3] = [Media::Json, Media::Yaml, Media::Protobuf];
    /// A server with the JSON serializer only (the simulator).
    pub const JSON_ONLY: [Media; 1] = [Media::Json];

    pub fn media_type(self) -> &'static str {
        match self {
            Media::Json => "application/json",
            Media::Yaml => "application/yaml",
            Media::Protobuf => "application/vnd.kubernetes.protobuf",
        }
    }

    fn types(self) -> (&'static str, &'static str) {
        self.media_type()
            .split_once('/')
            .expect("media types have a slash")
    }

    /// YAML has no stream serializer.
    fn streams(self) -> bool {
        self != Media::Yaml
    }
}

/// The `meta.k8s.io` version a conversion names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaVersion {
    V1,
    V1beta1,
}

impl MetaVersion {
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// The conversion asked for with `as`, `g` and `v`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    Table(MetaVersion),
    PartialObjectMetadata(MetaVersion),
    PartialObjectMetadataList(MetaVersion),
}

/// What the endpoint serves, for the negotiation.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint {
    /// Custom resources have no protobuf serializer.
    pub protobuf: bool,
    /// Whether `as`/`g`/`v` conversions are served at all.
    pub conversions: bool,
    /// The server's serializers, in its order: the apiserver's three, or
    /// fewer for a server that has fewer.
    pub serializers: &'static [Media],
}

impl Endpoint {
    /// A resource endpoint (a RequestScope).
    pub fn resource(protobuf: bool) -> Endpoint {
        Endpoint {
            protobuf,
            conversions: true,
            serializers: &Media::ALL,
        }
    }

    /// How errors are negotiated (DefaultEndpointRestrictions): no
    /// conversions. When nothing is acceptable so, the apiserver writes the
    /// error Status as indented JSON anyway.
    pub const ERRORS: Endpoint = Endpoint {
        protobuf: true,
        conversions: false,
        serializers: &Media::ALL,
    };

    /// A resource endpoint of a server whose only serializer is JSON.
    pub const JSON_ONLY_RESOURCE: Endpoint = Endpoint {
        protobuf: false,
        conversions: true,
        serializers: &Media::JSON_ONLY,
    };

    /// How such a server negotiates its errors.
    pub const JSON_ONLY_ERRORS: Endpoint = Endpoint {
        protobuf: false,
        conversions: false,
        serializers: &Media::JSON_ONLY,
    };

    /// The media types a NotAcceptable error lists (`MediaTypesForSerializer`).
    pub fn media_types(&self) -> String {
        let types: Vec<&str> = self.serializers.iter().map(|m| m.media_type()).collect();
        types.join(", ")
    }
}

/// The outcome of negotiation: the serializer and the conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    pub media: Media,
    pub conversion: Option<Conversion>,
    /// `pretty=1` in the Accept clause.
    pub pretty: bool,
    /// A `stream=watch` parameter was given.
    pub stream: bool,
}

/// An Accept header, read once: its text and its clauses in preference
/// order, negotiated against any endpoint without being parsed again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Accept {
    /// The header's text; `None` when absent or empty.
    text: Option<String>,
    clauses: Vec<Clause>,
    /// Present but not text (bytes outside visible ASCII).
    unreadable: bool,
}

impl Accept {
    /// The header as text (`None`: absent).
    pub fn new(header: Option<&str>) -> Accept {
        let text = header.filter(|h| !h.is_empty());
        Accept {
            text: text.map(str::to_string),
            clauses: text.map(parse).unwrap_or_default(),
            unreadable: false,
        }
    }

    /// The header of a request.
    pub fn from_header(header: Option<&http::HeaderValue>) -> Accept {
        match header.map(|v| v.to_str()) {
            None => Accept::default(),
            Some(Ok(text)) => Accept::new(Some(text)),
            Some(Err(_)) => Accept {
                unreadable: true,
                ..Accept::default()
            },
        }
    }

    /// The header's text, if it has any.
    pub fn text(&self) -> Option<&str> {
        self.text.as_deref()
    }

    /// Whether it names `application/json` and not `text/html`: a page
    /// kubecache serves in both (its status page) is JSON for such a
    /// client and HTML for a browser, whose Accept names HTML.
    pub fn names_json_not_html(&self) -> bool {
        let text = self.text().unwrap_or("");
        text.contains("application/json") && !text.contains("text/html")
    }

    /// Whether a header came that is not text: nothing here can judge it
    /// as the apiserver would, and errors made here treat it as absent.
    pub fn is_unreadable(&self) -> bool {
        self.unreadable
    }

    /// go-restful's route check, which the apiserver's built-in resources
    /// pass before any negotiation: some entry of the Accept header, cut at
    /// its first `;` and trimmed, is `*/*` or exactly one of the media
    /// types the routes produce (the endpoint's serializers'). It fails
    /// with a bare 406 ("406: Not Acceptable"), e.g. for `application/*`,
    /// which negotiation alone would accept.
    pub fn restful_accepts(&self, endpoint: Endpoint) -> bool {
        let Some(header) = self.text() else {
            return true;
        };
        header.split(',').any(|entry| {
            let media = entry.split(';').next().unwrap_or("").trim_matches(' ');
            media == "*/*" || endpoint.serializers.iter().any(|m| m.media_type() == media)
        })
    }

    /// Whether aggregated discovery (`application/json;as=APIGroupDiscoveryList;
    /// g=apidiscovery.k8s.io;v=v2`, what current kubectl asks `/api` and
    /// `/apis` first) comes before the plain JSON document: the clauses in
    /// order, the first JSON one deciding; other versions and protobuf's
    /// aggregated discovery are passed over (kubecache keeps only v2 in JSON).
    pub fn prefers_aggregated_discovery(&self) -> bool {
        for clause in &self.clauses {
            let json = clause.kind == "application" && clause.sub == "json";
            let any = clause.kind == "*" && clause.sub == "*";
            if !json && !any {
                continue;
            }
            match clause.param("as") {
                None => return false,
                Some("APIGroupDiscoveryList")
                    if json
                        && clause.param("g") == Some("apidiscovery.k8s.io")
                        && clause.param("v") == Some("v2") =>
                {
                    return true
                }
                Some(_) => {}
            }
        }
        false
    }

    /// NegotiateMediaTypeOptions for an endpoint: `None` when nothing is
    /// acceptable (the apiserver's 406).
    pub fn negotiate(&self, endpoint: Endpoint) -> Option<Negotiated> {
        if self.text.is_none() {
            return Some(Negotiated {
                media: Media::Json,
                conversion: None,
                pretty: false,
                stream: false,
            });
        }
        for clause in &self.clauses {
            for &media in endpoint.serializers {
                let (kind, sub) = media.types();
                let matches = (clause.kind == kind && (clause.sub == sub || clause.sub == "*"))
                    || (clause.kind == "*" && clause.sub == "*");
                if matches {
                    if let Some(n) = accept(clause, media, endpoint) {
                        return Some(n);
                    }
                }
            }
        }
        None
    }
}

/// acceptMediaTypeOptions with the RequestScope's restrictions.
fn accept(clause: &Clause, media: Media, endpoint: Endpoint) -> Option<Negotiated> {
    let mut stream = false;
    if let Some(v) = clause.param("stream").filter(|v| !v.is_empty()) {
        if !media.streams() || v != "watch" {
            return None;
        }
        stream = true;
    }
    if clause
        .param("sv")
        .is_some_and(|v| !v.is_empty() && v != "v1")
    {
        return None;
    }
    let pretty = clause.param("pretty") == Some("1");
    let (as_, g, v) = (clause.param("as"), clause.param("g"), clause.param("v"));
    let conversion = if as_.is_none() && g.is_none() && v.is_none() {
        if media == Media::Protobuf && !endpoint.protobuf {
            return None;
        }
        None
    } else {
        if !endpoint.conversions {
            return None;
        }
        let version = match (g.unwrap_or(""), v.unwrap_or("")) {
            ("meta.k8s.io", "v1") => MetaVersion::V1,
            ("meta.k8s.io", "v1beta1") => MetaVersion::V1beta1,
            _ => return None,
        };
        Some(match as_.unwrap_or("") {
            "Table" if media != Media::Protobuf => Conversion::Table(version),
            "PartialObjectMetadata" => Conversion::PartialObjectMetadata(version),
            "PartialObjectMetadataList" => Conversion::PartialObjectMetadataList(version),
            _ => return None,
        })
    };
    Some(Negotiated {
        media,
        conversion,
        pretty,
        stream,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_not_html_is_what_a_script_asks_and_a_browser_does_not() {
        let names = |h: Option<&str>| Accept::new(h).names_json_not_html();
        assert!(names(Some("application/json")));
        assert!(names(Some("application/json, */*")));
        let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert!(!names(Some(browser)));
        assert!(!names(Some("text/html, application/json")));
        assert!(!names(Some("*/*")) && !names(None));
    }

    const BUILTIN: Endpoint = Endpoint {
        protobuf: true,
        conversions: true,
        serializers: &Media::ALL,
    };
    const CUSTOM: Endpoint = Endpoint {
        protobuf: false,
        conversions: true,
        serializers: &Media::ALL,
    };

    fn n(h: &str) -> Option<(Media, Option<Conversion>)> {
        Accept::new(Some(h))
            .negotiate(BUILTIN)
            .map(|n| (n.media, n.conversion))
    }

    #[test]
    fn no_header_is_json() {
        assert_eq!(
            Accept::new(None).negotiate(BUILTIN).unwrap().media,
            Media::Json
        );
        assert_eq!(
            Accept::new(Some("")).negotiate(BUILTIN).unwrap().media,
            Media::Json
        );
    }

    #[test]
    fn wildcards_pick_the_first_serializer() {
        assert_eq!(n("*/*"), Some((Media::Json, None)));
        assert_eq!(n("*"), Some((Media::Json, None)));
        assert_eq!(n("application/*"), Some((Media::Json, None)));
        assert_eq!(n("text/html, */*;q=0.8"), Some((Media::Json, None)));
    }

    #[test]
    fn kubectls_table_header_asks_for_a_v1_table_first() {
        let h = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            n(h),
            Some((Media::Json, Some(Conversion::Table(MetaVersion::V1))))
        );
    }

    #[test]
    fn parameters_may_come_in_any_order_with_spaces() {
        assert_eq!(
            n("application/json; g=meta.k8s.io ;v=v1beta1; as=PartialObjectMetadataList"),
            Some((
                Media::Json,
                Some(Conversion::PartialObjectMetadataList(MetaVersion::V1beta1))
            ))
        );
    }

    #[test]
    fn unknown_conversions_fall_through_to_the_next_clause() {
        assert_eq!(
            n("application/json;as=Foo;g=meta.k8s.io;v=v1, application/yaml"),
            Some((Media::Yaml, None))
        );
        assert_eq!(n("application/json;as=Table"), None);
        assert_eq!(n("application/json;as=Table;g=apps;v=v1"), None);
        // Tables are JSON or YAML only; metadata can be protobuf.
        assert_eq!(
            n("application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1"),
            None
        );
        assert_eq!(
            n("application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            Some((
                Media::Protobuf,
                Some(Conversion::PartialObjectMetadata(MetaVersion::V1))
            ))
        );
    }

    #[test]
    fn q_values_order_the_clauses_and_bad_ones_count_as_zero() {
        assert_eq!(
            n("application/yaml;q=0.5, application/json"),
            Some((Media::Json, None))
        );
        assert_eq!(
            n("application/json;q=0.1, application/yaml;q=0.9"),
            Some((Media::Yaml, None))
        );
        // q=0 is not a refusal to goautoneg.
        assert_eq!(n("application/json;q=0"), Some((Media::Json, None)));
        assert_eq!(
            n("application/json;q=abc, application/yaml;q=0.1"),
            Some((Media::Yaml, None))
        );
        assert_eq!(n("application/json;q=abc"), Some((Media::Json, None)));
    }

    #[test]
    fn malformed_clauses_are_skipped() {
        assert_eq!(n("application"), None);
        assert_eq!(n("application/json/x"), None);
        assert_eq!(n(",,,"), None);
        assert_eq!(n("text/html"), None);
        // Media types are case-sensitive to the apiserver.
        assert_eq!(n("Application/JSON"), None);
        assert_eq!(n("application/json;;;x"), Some((Media::Json, None)));
    }

    #[test]
    fn stream_and_server_version_parameters_restrict() {
        assert_eq!(
            n("application/json;stream=watch"),
            Some((Media::Json, None))
        );
        assert_eq!(n("application/yaml;stream=watch"), None);
        assert_eq!(n("application/json;stream=other"), None);
        assert_eq!(n("application/json;sv=v2"), None);
        assert_eq!(n("application/json;sv=v1"), Some((Media::Json, None)));
    }

    #[test]
    fn custom_resources_have_no_protobuf() {
        let h = Some("application/vnd.kubernetes.protobuf, application/json;q=0.5");
        assert_eq!(Accept::new(h).negotiate(CUSTOM).unwrap().media, Media::Json);
        assert_eq!(
            Accept::new(h).negotiate(BUILTIN).unwrap().media,
            Media::Protobuf
        );
    }

    #[test]
    fn pretty_is_a_parameter_too() {
        assert!(
            Accept::new(Some("application/json;pretty=1"))
                .negotiate(BUILTIN)
                .unwrap()
                .pretty
        );
        assert!(
            !Accept::new(Some("application/json;pretty=0"))
                .negotiate(BUILTIN)
                .unwrap()
                .pretty
        );
    }

    #[test]
    fn go_restful_wants_an_exact_media_type_or_any() {
        let ok = |h: Option<&str>| Accept::new(h).restful_accepts(BUILTIN);
        assert!(ok(None));
        assert!(ok(Some("application/json;as=Table;g=meta.k8s.io;v=v1")));
        assert!(ok(Some("text/html, */*;q=0.1")));
        assert!(ok(Some(" application/yaml ")));
        assert!(!ok(Some("application/*")));
        assert!(!ok(Some("*")));
        assert!(!ok(Some("Application/JSON")));
        assert!(!ok(Some("application/json/extra")));
    }

    #[test]
    fn a_json_only_server_routes_and_negotiates_json_alone() {
        let json = Endpoint::JSON_ONLY_RESOURCE;
        assert!(Accept::new(Some("application/json;as=Table")).restful_accepts(json));
        assert!(Accept::new(Some("application/yaml, */*")).restful_accepts(json));
        assert!(!Accept::new(Some("application/yaml")).restful_accepts(json));
        assert!(!Accept::new(Some("application/vnd.kubernetes.protobuf")).restful_accepts(json));
        // What the apiserver would answer in protobuf or YAML falls to the
        // next clause JSON fits.
        let h = Some("application/vnd.kubernetes.protobuf, application/json;q=0.5");
        assert_eq!(Accept::new(h).negotiate(json).unwrap().media, Media::Json);
        assert_eq!(
            Accept::new(Some(
                "application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1"
            ))
            .negotiate(json)
            .unwrap()
            .conversion,
            Some(Conversion::Table(MetaVersion::V1))
        );
        assert_eq!(Accept::new(Some("application/yaml")).negotiate(json), None);
        assert_eq!(
            Accept::new(Some("*/*")).negotiate(json).unwrap().media,
            Media::Json
        );
        assert_eq!(json.media_types(), "application/json");
        assert_eq!(
            BUILTIN.media_types(),
            "application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
    }

    #[test]
    fn errors_are_negotiated_without_conversions() {
        let meta = Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
        assert_eq!(Accept::new(meta).negotiate(Endpoint::ERRORS), None);
        let with_json =
            Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json");
        assert_eq!(
            Accept::new(with_json)
                .negotiate(Endpoint::ERRORS)
                .unwrap()
                .media,
            Media::Json
        );
    }

    #[test]
    fn current_kubectl_prefers_aggregated_discovery_and_v1_20s_clients_do_not() {
        let kubectl = Accept::new(Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"));
        assert!(kubectl.prefers_aggregated_discovery());
        for plain in [
            None,
            Some("application/json"),
            Some("*/*"),
            Some("application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"),
            Some("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"),
        ] {
            assert!(!Accept::new(plain).prefers_aggregated_discovery(), "{plain:?}");
        }
        // Protobuf's aggregated discovery is passed over for the JSON one.
        let pb = Accept::new(Some("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"));
        assert!(pb.prefers_aggregated_discovery());
    }
}
