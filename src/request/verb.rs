//! The verb of a request as the apiserver's RequestInfo names it (the
//! `verb` label of its metrics, and what authorization will be asked about).

use super::path::{ResourcePath, Shape};

/// The apiserver's request verbs (its `verb` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Post,
    Put,
    Patch,
    Delete,
    DeleteCollection,
    /// Anything else, e.g. non-resource paths.
    Other,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::List => "LIST",
            Verb::Watch => "WATCH",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
            Verb::DeleteCollection => "DELETECOLLECTION",
            Verb::Other => "OTHER",
        }
    }

    /// The verb of a request as the apiserver's RequestInfo names it: a
    /// read of a collection is a LIST, or a WATCH with `watch`; a legacy
    /// `/watch/` path is always a WATCH.
    pub fn of(method: &http::Method, path: Option<&ResourcePath>, watch: bool) -> Verb {
        use http::Method;
        let Some(p) = path else {
            return Verb::Other;
        };
        let named = p.name.is_some();
        match *method {
            Method::GET | Method::HEAD => match Shape::of(p, watch) {
                Shape::Watch => Verb::Watch,
                Shape::Object => Verb::Get,
                Shape::List => Verb::List,
            },
            Method::POST => Verb::Post,
            Method::PUT => Verb::Put,
            Method::PATCH => Verb::Patch,
            Method::DELETE if named => Verb::Delete,
            Method::DELETE => Verb::DeleteCollection,
            _ => Verb::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ResourcePath;
    use super::*;
    use http::Method;

    fn verb(method: Method, path: &str, watch: bool) -> &'static str {
        Verb::of(&method, ResourcePath::parse(path).as_ref(), watch).as_str()
    }

    #[test]
    fn verbs_are_named_as_the_apiservers_request_info_names_them() {
        let cms = "/api/v1/namespaces/a/configmaps";
        assert_eq!(verb(Method::GET, cms, false), "LIST");
        assert_eq!(verb(Method::GET, cms, true), "WATCH");
        assert_eq!(verb(Method::GET, &format!("{cms}/x"), false), "GET");
        assert_eq!(verb(Method::GET, &format!("{cms}/x"), true), "GET");
        assert_eq!(
            verb(
                Method::GET,
                "/api/v1/watch/namespaces/a/configmaps/x",
                false
            ),
            "WATCH"
        );
        assert_eq!(verb(Method::DELETE, &format!("{cms}/x"), false), "DELETE");
        assert_eq!(verb(Method::DELETE, cms, false), "DELETECOLLECTION");
        assert_eq!(verb(Method::POST, cms, false), "POST");
        assert_eq!(verb(Method::GET, "/version", false), "OTHER");
    }
}
