//! The upstream's reviews of clients, as kubecache asks and keeps them,
//! against a fake upstream that counts what it is asked: a burst of
//! identical asks makes one review, allowed and refused decisions are
//! kept for their own TTLs, a review that fails is asked again next time
//! (and never taken for a yes).

mod common;

use common::within;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use kubecache::access::{Access, AccessConfig, AccessError, Attributes};
use kubecache::request::UserInfo;
use kubecache::upstream::{Upstream, UpstreamConfig};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A fake upstream's review endpoints: the token `good` is alice, alice
/// may list, nobody else may do anything; each answer takes 100 ms.
#[derive(Default)]
struct FakeReviews {
    token_reviews: AtomicUsize,
    access_reviews: AtomicUsize,
    /// Answer 500 to everything.
    failing: AtomicBool,
    /// Take 2.5 s over each answer instead of 100 ms.
    slow: AtomicBool,
}

impl FakeReviews {
    async fn start(self: &Arc<Self>) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let me = self.clone();
        tokio::spawn(kubecache::serve::listener::serve_http(
            listener,
            None,
            move |req: http::Request<hyper::body::Incoming>| {
                let me = me.clone();
                async move { me.answer(req).await }
            },
            std::future::pending(),
            Duration::from_secs(1),
        ));
        format!("http://{addr}")
    }

    async fn answer(
        &self,
        req: http::Request<hyper::body::Incoming>,
    ) -> Response<kubecache::body::Body> {
        let path = req.uri().path().to_string();
        let body: serde_json::Value =
            serde_json::from_slice(&req.into_body().collect().await.unwrap().to_bytes()).unwrap();
        let delay = if self.slow.load(Ordering::SeqCst) {
            2500
        } else {
            100
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        let status = if path.ends_with("/tokenreviews") {
            self.token_reviews.fetch_add(1, Ordering::SeqCst);
            if body["spec"]["token"] == "good" {
                serde_json::json!({"authenticated": true, "user": {"username": "alice", "groups": ["system:authenticated"]}})
            } else {
                serde_json::json!({"authenticated": false})
            }
        } else {
            self.access_reviews.fetch_add(1, Ordering::SeqCst);
            let allowed = body["spec"]["user"] == "alice"
                && body["spec"]["resourceAttributes"]["verb"] == "list";
            serde_json::json!({"allowed": allowed, "reason": if allowed { "" } else { "no" }})
        };
        let (code, answer) = if self.failing.load(Ordering::SeqCst) {
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                serde_json::json!({"kind": "Status", "code": 500}),
            )
        } else {
            (StatusCode::CREATED, serde_json::json!({"status": status}))
        };
        let mut resp = Response::new(kubecache::body::full(answer.to_string()));
        *resp.status_mut() = code;
        resp
    }
}

async fn access(config: AccessConfig) -> (Arc<FakeReviews>, Arc<Access>) {
    let fake = Arc::new(FakeReviews::default());
    let url = fake.start().await;
    let upstream = Upstream::new(&UpstreamConfig::new(&url).unwrap()).unwrap();
    (fake, Arc::new(Access::new(upstream, config)))
}

/// A client sending a new made-up token with each request cannot have
/// kubecache ask the upstream more reviews at once than it allows: the
/// rest wait a second for a permit, then are refused busy, unreviewed and
/// not kept.
#[tokio::test]
async fn made_up_tokens_get_no_more_reviews_at_once_than_allowed_and_the_rest_are_refused_busy() {
    within(30, async {
        let (fake, access) = access(AccessConfig {
            max_token_reviews_in_flight: 2,
            ..AccessConfig::default()
        })
        .await;
        fake.slow.store(true, Ordering::SeqCst);
        let asks = (0..20).map(|i| {
            let access = access.clone();
            tokio::spawn(async move { access.token_user(&format!("made-up-{i}")).await })
        });
        let (mut reviewed, mut busy) = (0, 0);
        for r in futures::future::join_all(asks).await {
            match r.unwrap() {
                Ok(None) => reviewed += 1,
                Err(e) if matches!(*e, AccessError::Busy(2)) => busy += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!((reviewed, busy), (2, 18));
        assert_eq!(fake.token_reviews.load(Ordering::SeqCst), 2);
        // The permits are back: the next token is reviewed; the two kept
        // answers are reused, the 18 refusals were not kept.
        fake.slow.store(false, Ordering::SeqCst);
        assert_eq!(
            access.token_user("good").await.unwrap().unwrap().name,
            "alice"
        );
        for i in 0..20 {
            assert_eq!(
                access.token_user(&format!("made-up-{i}")).await.unwrap(),
                None
            );
        }
        assert_eq!(fake.token_reviews.load(Ordering::SeqCst), 2 + 1 + 18);
    })
    .await
}

fn pods(verb: &str) -> Attributes {
    Attributes::Resource {
        verb: verb.into(),
        group: String::new(),
        version: "v1".into(),
        resource: "pods".into(),
        subresource: String::new(),
        namespace: "a".into(),
        name: String::new(),
    }
}

#[tokio::test]
async fn a_burst_of_identical_asks_makes_one_review() {
    within(30, async {
        let (fake, access) = access(AccessConfig::default()).await;
        let asks = (0..50).map(|_| {
            let access = access.clone();
            tokio::spawn(async move { access.token_user("good").await.unwrap() })
        });
        for user in futures::future::join_all(asks).await {
            assert_eq!(user.unwrap().unwrap().name, "alice");
        }
        assert_eq!(fake.token_reviews.load(Ordering::SeqCst), 1);
        let alice = access.token_user("good").await.unwrap().unwrap();
        let decisions = (0..50).map(|_| {
            let (access, alice) = (access.clone(), alice.clone());
            tokio::spawn(async move { access.decide(&alice, &pods("list")).await.unwrap() })
        });
        for d in futures::future::join_all(decisions).await {
            assert!(d.unwrap().allowed);
        }
        assert_eq!(fake.access_reviews.load(Ordering::SeqCst), 1);
        assert_eq!(fake.token_reviews.load(Ordering::SeqCst), 1);
        // A rejected token is kept too (as the apiserver keeps it).
        assert_eq!(access.token_user("bad").await.unwrap(), None);
        assert_eq!(access.token_user("bad").await.unwrap(), None);
        assert_eq!(fake.token_reviews.load(Ordering::SeqCst), 2);
    })
    .await
}

#[tokio::test]
async fn allowed_and_refused_decisions_are_kept_for_their_own_ttls() {
    within(30, async {
        let (fake, access) = access(AccessConfig {
            allowed_ttl: Duration::from_millis(3000),
            denied_ttl: Duration::from_millis(300),
            ..AccessConfig::default()
        })
        .await;
        let alice = UserInfo::authenticated("alice".into(), String::new(), vec![]);
        let reviews = || fake.access_reviews.load(Ordering::SeqCst);
        assert!(access.decide(&alice, &pods("list")).await.unwrap().allowed);
        let refused = access.decide(&alice, &pods("watch")).await.unwrap();
        assert_eq!((refused.allowed, refused.reason.as_str()), (false, "no"));
        assert_eq!(reviews(), 2);
        tokio::time::sleep(Duration::from_millis(600)).await;
        // The refusal has expired, the allowance has not.
        assert!(access.decide(&alice, &pods("list")).await.unwrap().allowed);
        assert_eq!(reviews(), 2);
        assert!(!access.decide(&alice, &pods("watch")).await.unwrap().allowed);
        assert_eq!(reviews(), 3);
        tokio::time::sleep(Duration::from_millis(2600)).await;
        assert!(access.decide(&alice, &pods("list")).await.unwrap().allowed);
        assert_eq!(reviews(), 4);
        // Another user's decision is its own.
        let bob = UserInfo::authenticated("bob".into(), String::new(), vec![]);
        assert!(!access.decide(&bob, &pods("list")).await.unwrap().allowed);
        assert_eq!(reviews(), 5);
    })
    .await
}

#[tokio::test]
async fn a_review_that_fails_is_an_error_and_is_asked_again() {
    within(30, async {
        let (fake, access) = access(AccessConfig::default()).await;
        fake.failing.store(true, Ordering::SeqCst);
        let alice = UserInfo::authenticated("alice".into(), String::new(), vec![]);
        let e = access.decide(&alice, &pods("list")).await.unwrap_err();
        assert!(e.client_text().contains("500"), "{}", e.client_text());
        assert!(access.token_user("good").await.is_err());
        fake.failing.store(false, Ordering::SeqCst);
        assert!(access.decide(&alice, &pods("list")).await.unwrap().allowed);
        assert!(access.token_user("good").await.unwrap().is_some());
        assert_eq!(fake.access_reviews.load(Ordering::SeqCst), 2);
        assert_eq!(fake.token_reviews.load(Ordering::SeqCst), 2);
    })
    .await
}
