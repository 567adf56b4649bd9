//! Who a client is and what it may do, decided by the upstream: bearer
//! tokens through its `TokenReview`, each read kubecache answers through
//! its `SubjectAccessReview` (asked with kubecache's own identity), client
//! certificates read as its x509 authenticator reads them, and
//! `Impersonate-*` headers allowed as its impersonation filter allows
//! them.
//!
//! Reviews are cached as the apiserver's webhook authenticator and
//! authorizer cache theirs: token reviews for `token_ttl` (2 min), allowed
//! decisions for `allowed_ttl` (5 min) and refusals for `denied_ttl`
//! (30 s), at most `max_entries` of each — each counted by the KiB it
//! holds, so that clients asking about long names cannot make the caches
//! hold more than about `max_entries` KiB. Identical reviews asked at once
//! are asked upstream once (the first asker's, the others wait for it). A
//! review that fails is not cached. Tokens are kept only as their SHA-256.
//!
//! Token reviews are asked before anyone is known, so nothing per user
//! bounds them: a client sending a new made-up token with each request
//! would have kubecache ask the upstream a review for each, under
//! kubecache's own identity. At most `max_token_reviews_in_flight` are
//! asked at once; a token that finds none free within `TOKEN_REVIEW_WAIT`
//! is refused as busy (the apiserver's 429), not reviewed.

pub mod attributes;
pub mod cert;
pub mod impersonate;
pub mod review;

pub use attributes::Attributes;
pub use review::Decision;

use crate::request::UserInfo;
use crate::upstream::{Upstream, UpstreamError};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The upstream could not be asked, or answered with an error.
    #[error("{review} failed: {source}")]
    Review {
        review: &'static str,
        #[source]
        source: UpstreamError,
    },
    /// The upstream's answer was not a review.
    #[error("{review} failed: its answer does not decode: {source}")]
    Decode {
        review: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// `max_token_reviews_in_flight` reviews were being asked for the
    /// whole `TOKEN_REVIEW_WAIT`: this token was not reviewed.
    #[error("{0} token reviews are being asked already")]
    Busy(usize),
}

impl AccessError {
    /// What a client is told of it: which review failed and how, not the
    /// upstream's answer to kubecache (that is for kubecache's log).
    pub fn client_text(&self) -> String {
        match self {
            AccessError::Review {
                review,
                source: UpstreamError::Status { status, .. },
            } => format!("{review} failed: the upstream answered {status}"),
            AccessError::Review { review, .. } => {
                format!("{review} failed: the upstream could not be reached")
            }
            AccessError::Decode { review, .. } => {
                format!("{review} failed: the upstream's answer does not decode")
            }
            AccessError::Busy(_) => "Too many requests, please try again later.".into(),
        }
    }
}

/// How reviews are asked and kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessConfig {
    /// The audiences a token must be for (`--authentication-token-audiences`;
    /// none: the upstream's own).
    pub audiences: Vec<String>,
    pub token_ttl: Duration,
    pub allowed_ttl: Duration,
    pub denied_ttl: Duration,
    /// At most this many token reviews, and as many decisions, are kept;
    /// one that holds more than a KiB counts once for each KiB.
    pub max_entries: u64,
    /// Token reviews asked upstream at once, at most.
    pub max_token_reviews_in_flight: usize,
}

impl Default for AccessConfig {
    fn default() -> Self {
        AccessConfig {
            audiences: Vec::new(),
            token_ttl: Duration::from_secs(120),
            allowed_ttl: Duration::from_secs(300),
            denied_ttl: Duration::from_secs(30),
            max_entries: 10_000,
            max_token_reviews_in_flight: 64,
        }
    }
}

/// How long a token waits for one of the `max_token_reviews_in_flight`
/// before it is refused as busy: a burst of new clients waits out the
/// reviews ahead of it (100 ms each against a nearby apiserver), a flood
/// of made-up tokens does not queue without end.
pub const TOKEN_REVIEW_WAIT: Duration = Duration::from_secs(1);

type TokenKey = [u8; 32];
type DecisionKey = Arc<(UserInfo, Attributes)>;

/// Each decision kept for its own TTL: allowed or refused.
struct DecisionTtl {
    allowed: Duration,
    denied: Duration,
}

impl moka::Expiry<DecisionKey, Decision> for DecisionTtl {
    fn expire_after_create(&self, _: &DecisionKey, d: &Decision, _: Instant) -> Option<Duration> {
        Some(if d.allowed { self.allowed } else { self.denied })
    }
}

/// The KiB (at least one) that `bytes` take, as the caches count them.
fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024).max(1)).unwrap_or(u32::MAX)
}

fn user_bytes(u: &UserInfo) -> usize {
    let strings = |v: &[String]| v.iter().map(|s| s.len() + 24).sum::<usize>();
    u.name.len()
        + u.uid.len()
        + strings(&u.groups)
        + u.extra
            .iter()
            .map(|(k, v)| k.len() + strings(v))
            .sum::<usize>()
}

/// What a kept decision weighs: its user, its attributes, its words.
fn decision_weight(key: &DecisionKey, d: &Decision) -> u32 {
    let (user, attributes) = &**key;
    let attributes = match attributes {
        Attributes::Resource {
            verb,
            group,
            version,
            resource,
            subresource,
            namespace,
            name,
        } => [verb, group, version, resource, subresource, namespace, name]
            .iter()
            .map(|s| s.len())
            .sum(),
        Attributes::NonResource { verb, path } => verb.len() + path.len(),
    };
    kib(user_bytes(user) + attributes + d.reason.len() + d.evaluation_error.len() + 256)
}

/// The reviews, asked upstream and cached.
pub struct Access {
    upstream: Arc<Upstream>,
    config: AccessConfig,
    tokens: moka::future::Cache<TokenKey, Option<UserInfo>>,
    decisions: moka::future::Cache<DecisionKey, Decision>,
    /// A permit for each token review being asked.
    token_reviews: tokio::sync::Semaphore,
}

impl Access {
    /// Reviews asked through `upstream`, which presents kubecache's own
    /// credentials.
    pub fn new(upstream: Arc<Upstream>, config: AccessConfig) -> Access {
        let tokens = moka::future::Cache::builder()
            .max_capacity(config.max_entries)
            .weigher(|_: &TokenKey, user: &Option<UserInfo>| {
                kib(32 + user.as_ref().map_or(0, user_bytes))
            })
            .time_to_live(config.token_ttl)
            .build();
        let decisions = moka::future::Cache::builder()
            .max_capacity(config.max_entries)
            .weigher(|key: &DecisionKey, d: &Decision| decision_weight(key, d))
            .expire_after(DecisionTtl {
                allowed: config.allowed_ttl,
                denied: config.denied_ttl,
            })
            .build();
        Access {
            upstream,
            token_reviews: tokio::sync::Semaphore::new(config.max_token_reviews_in_flight.max(1)),
            config,
            tokens,
            decisions,
        }
    }

    /// Who a bearer token is: `None` when the upstream does not take it.
    pub async fn token_user(&self, token: &str) -> Result<Option<UserInfo>, Arc<AccessError>> {
        let key: TokenKey = ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
            .as_ref()
            .try_into()
            .expect("SHA-256 is 32 bytes");
        let mut asked = false;
        let found = self
            .tokens
            .try_get_with(key, async {
                asked = true;
                const REVIEW: &str = "TokenReview";
                let permit = tokio::time::timeout(TOKEN_REVIEW_WAIT, self.token_reviews.acquire());
                let Ok(Ok(_permit)) = permit.await else {
                    crate::metrics::token_review_refused_busy();
                    return Err(AccessError::Busy(self.config.max_token_reviews_in_flight));
                };
                let body = review::token_review(token, &self.config.audiences);
                let answer = self.post(REVIEW, review::TOKEN_REVIEWS, body).await?;
                review::token_reviewed(&answer, &self.config.audiences).map_err(|source| {
                    AccessError::Decode {
                        review: REVIEW,
                        source,
                    }
                })
            })
            .await;
        crate::metrics::review_cache("token", asked, found.is_ok());
        found
    }

    /// Whether `user` may do what `attributes` say.
    pub async fn decide(
        &self,
        user: &UserInfo,
        attributes: &Attributes,
    ) -> Result<Decision, Arc<AccessError>> {
        let key = Arc::new((user.clone(), attributes.clone()));
        let mut asked = false;
        let found = self
            .decisions
            .try_get_with(key, async {
                asked = true;
                const REVIEW: &str = "SubjectAccessReview";
                let body = review::access_review(user, attributes);
                let answer = self
                    .post(REVIEW, review::SUBJECT_ACCESS_REVIEWS, body)
                    .await?;
                review::access_reviewed(&answer).map_err(|source| AccessError::Decode {
                    review: REVIEW,
                    source,
                })
            })
            .await;
        crate::metrics::review_cache("access", asked, found.is_ok());
        found
    }

    async fn post(
        &self,
        review: &'static str,
        path: &str,
        body: Vec<u8>,
    ) -> Result<bytes::Bytes, AccessError> {
        self.upstream
            .post_json(path, body)
            .await
            .map_err(|source| AccessError::Review { review, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> Attributes {
        Attributes::Resource {
            verb: "get".into(),
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: String::new(),
            namespace: "a".into(),
            name: name.into(),
        }
    }

    #[test]
    fn kept_decisions_weigh_what_they_hold_so_long_names_cannot_pin_memory() {
        let alice = UserInfo::authenticated("alice".into(), String::new(), vec!["g".into()]);
        let d = Decision {
            allowed: false,
            reason: String::new(),
            evaluation_error: String::new(),
        };
        let small = Arc::new((alice.clone(), get("web-1")));
        assert_eq!(decision_weight(&small, &d), 1);
        // A name as long as a URL may carry counts for its 64 KiB.
        let long = Arc::new((alice, get(&"x".repeat(64 * 1024))));
        assert!(decision_weight(&long, &d) >= 64);
        assert_eq!(kib(0), 1);
        assert_eq!(kib(1025), 2);
    }
}
