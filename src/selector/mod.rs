//! Label and field selectors: parsing with apimachinery's grammar and error
//! texts, and matching against a cached entry's labels and selectable fields.

pub mod field;
pub mod label;

pub use field::FieldSelector;
pub use label::LabelSelector;

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum SelectorError {
    #[error("{0}")]
    Label(String),
    #[error("{0}")]
    Field(String),
}
