//! A list's `metadata` (`ListMeta`): its resourceVersion, continue token and
//! remaining item count, and how each kind of list writes it.

use super::personality::Personality;
use super::style::ListStyle;
use crate::request::ContinueToken;
use crate::store::page::Page;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListMeta {
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining_item_count: Option<i64>,
}

impl ListMeta {
    /// The metadata of one page read at `rv`: a continue token after its
    /// last key when more follow, written as `personality`'s apiserver
    /// writes it.
    pub fn of_page<M>(rv: u64, page: &Page<M>, personality: Personality) -> Self {
        let slash = if personality.slashed_continue_keys() {
            "/"
        } else {
            ""
        };
        ListMeta {
            resource_version: rv,
            continue_token: page
                .continue_after
                .as_ref()
                .map(|k| ContinueToken::after(rv as i64, &format!("{slash}{k}")).encode()),
            remaining_item_count: page.remaining,
        }
    }

    /// The metadata as JSON: in `ListMeta`'s field order for typed lists,
    /// in sorted-key order for unstructured ones.
    pub fn to_json(&self, style: ListStyle) -> String {
        let mut fields: Vec<String> = Vec::with_capacity(3);
        let rv = format!("\"resourceVersion\":\"{}\"", self.resource_version);
        let cont = self
            .continue_token
            .as_ref()
            .map(|c| format!("\"continue\":{}", serde_json::Value::from(c.as_str())));
        let rem = self
            .remaining_item_count
            .map(|n| format!("\"remainingItemCount\":{n}"));
        match style {
            ListStyle::Typed => {
                fields.push(rv);
                fields.extend(cont);
                fields.extend(rem);
            }
            ListStyle::Unstructured => {
                // UnstructuredList.SetContinue writes the key even when empty.
                fields.push(cont.unwrap_or_else(|| "\"continue\":\"\"".into()));
                fields.extend(rem);
                fields.push(rv);
            }
        }
        format!("{{{}}}", fields.join(","))
    }
}
