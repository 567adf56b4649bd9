//! How a patch fails, whatever its format.

/// How a patch failed, in the apiserver's terms; the HTTP edge
/// (`api::errors`) turns each into its `Status`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PatchError {
    /// 400 BadRequest: a patch that does not decode.
    #[error("{0}")]
    BadRequest(String),
    /// 422 Invalid with the generic message: a JSON patch that does not
    /// apply (the apiserver drops the library's own words).
    #[error("the server rejected our request due to an error in our request")]
    DoesNotApply,
    /// 422 Invalid, field `patch`: the patched document is not an object.
    #[error("patch: Invalid value: {0}")]
    NotAnObject(String),
    /// 413: more JSON patch operations than the apiserver takes.
    #[error("{0}")]
    TooLarge(String),
    /// An error the apiserver passes on untranslated: 500, no reason.
    #[error("{0}")]
    Unknown(String),
}
