//! The proxy's own bearer token. A token that came from a file is re-read
//! once a minute, as client-go's cachingTokenSource does, because the
//! kubelet rotates projected service-account tokens in place.
//!
//! kube-client re-reads token files too, but sends a file's content as it
//! is: a token file ending in a newline (as `echo`, editors and
//! `kubectl create token > file` write it) fails every request with
//! "invalid bearer token", where client-go trims it. So token files, the
//! pod's included, are read here.

use http::HeaderValue;
use std::path::PathBuf;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// Where the token comes from, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Inline(String),
    File(PathBuf),
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    #[error("reading token file {0}: {1}")]
    Read(String, #[source] std::io::Error),
    #[error("token file {0} is empty")]
    Empty(String),
    #[error("the token is not a valid header value")]
    Invalid,
}

pub struct BearerToken {
    file: Option<PathBuf>,
    refresh: Duration,
    current: RwLock<(HeaderValue, Instant)>,
}

const REFRESH: Duration = Duration::from_secs(60);

/// The `Authorization` value of a bearer token.
pub fn bearer(token: &str) -> Result<HeaderValue, CredentialsError> {
    let mut v = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| CredentialsError::Invalid)?;
    v.set_sensitive(true);
    Ok(v)
}

fn read(path: &PathBuf) -> Result<HeaderValue, CredentialsError> {
    let raw = std::fs::read_to_string(path)
        .map_err(|e| CredentialsError::Read(path.display().to_string(), e))?;
    if raw.trim().is_empty() {
        return Err(CredentialsError::Empty(path.display().to_string()));
    }
    bearer(&raw)
}

impl BearerToken {
    pub fn new(source: &TokenSource) -> Result<Self, CredentialsError> {
        Self::with_refresh(source, REFRESH)
    }

    pub fn with_refresh(source: &TokenSource, refresh: Duration) -> Result<Self, CredentialsError> {
        let (value, file) = match source {
            TokenSource::Inline(t) => (bearer(t)?, None),
            TokenSource::File(p) => (read(p)?, Some(p.clone())),
        };
        Ok(BearerToken {
            file,
            refresh,
            current: RwLock::new((value, Instant::now())),
        })
    }

    /// The `Authorization` value to send now. A file that cannot be read
    /// keeps the last good token: it may still be valid, and the upstream's
    /// 401 says so clearly if not.
    pub fn header(&self) -> HeaderValue {
        let (value, read_at) = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(path) = &self.file else {
            return value;
        };
        if read_at.elapsed() < self.refresh {
            return value;
        }
        let mut cur = self.current.write().unwrap_or_else(|e| e.into_inner());
        cur.1 = Instant::now();
        match read(path) {
            Ok(fresh) => cur.0 = fresh,
            Err(e) => tracing::warn!(error = %e, "keeping the previous token"),
        }
        cur.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, body: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("kubecache-{name}-{}", std::process::id()));
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn a_rotated_token_file_is_picked_up_after_the_refresh_interval() {
        let p = temp_file("token-rotate", "one\n");
        let t = BearerToken::with_refresh(&TokenSource::File(p.clone()), Duration::ZERO).unwrap();
        assert_eq!(t.header(), "Bearer one");
        std::fs::write(&p, "two").unwrap();
        assert_eq!(t.header(), "Bearer two");
        // A vanished file keeps the last good token.
        std::fs::remove_file(&p).unwrap();
        assert_eq!(t.header(), "Bearer two");
    }

    #[test]
    fn within_the_interval_the_token_is_not_reread() {
        let p = temp_file("token-cached", "one");
        let t = BearerToken::new(&TokenSource::File(p.clone())).unwrap();
        std::fs::write(&p, "two").unwrap();
        assert_eq!(t.header(), "Bearer one");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn unusable_tokens_are_refused_up_front() {
        let p = temp_file("token-empty", " \n");
        assert!(matches!(
            BearerToken::new(&TokenSource::File(p.clone())),
            Err(CredentialsError::Empty(_))
        ));
        std::fs::remove_file(&p).unwrap();
        assert!(matches!(
            BearerToken::new(&TokenSource::File(p)),
            Err(CredentialsError::Read(..))
        ));
        assert!(matches!(
            BearerToken::new(&TokenSource::Inline("a\nb".into())),
            Err(CredentialsError::Invalid)
        ));
    }
}
