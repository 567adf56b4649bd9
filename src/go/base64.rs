//! Go's `encoding/base64`: the words of its errors.

/// Go's base64 errors read "illegal base64 data at input byte N".
pub fn error(token: &str, e: base64::DecodeError) -> String {
    let at = match e {
        base64::DecodeError::InvalidByte(i, _) => i,
        base64::DecodeError::InvalidLastSymbol { offset, .. } => offset,
        _ => token.len().saturating_sub(1),
    };
    format!("illegal base64 data at input byte {at}")
}
