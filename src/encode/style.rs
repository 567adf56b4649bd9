//! How the apiserver serializes a type's objects in lists, which decides
//! how cached items are spliced into bodies.

/// How the apiserver serializes a type's lists, which decides how items are
/// spliced. Built-in types are typed structs: list items carry no
/// `kind`/`apiVersion` and fields come in struct order. Custom resources are
/// unstructured maps: items are self-describing and keys sorted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStyle {
    Typed,
    Unstructured,
}

impl ListStyle {
    /// Told apart by the first key of a list body the upstream sent.
    pub fn detect(list_body: &[u8]) -> Option<ListStyle> {
        let trimmed = list_body.trim_ascii_start();
        if trimmed.starts_with(b"{\"kind\"") {
            Some(ListStyle::Typed)
        } else if trimmed.starts_with(b"{\"apiVersion\"") {
            Some(ListStyle::Unstructured)
        } else {
            None
        }
    }
}
