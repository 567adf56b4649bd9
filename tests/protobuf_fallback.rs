//! Protobuf from the cache in front of the simulator, whose writes keep
//! fields v1.20's types do not have: an object its messages cannot hold
//! sends protobuf reads upstream (the simulator, JSON-only, answers 406),
//! while the rest are still served; a protobuf watch that meets one ends
//! there, and JSON is served as before.

mod common;

use common::*;
use http::Method;
use http_body_util::BodyExt;
use serde_json::json;
use std::time::Duration;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// (status, content type) of a protobuf read through kubecache.
async fn read(url: &str) -> (u16, String) {
    let (code, ct, _) = fetch_with(url, &[("Accept", PROTOBUF)]).await;
    (code, ct)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_without_a_v1_20_message_sends_protobuf_reads_upstream() {
    within(60, async {
        let sim = SimBuilder::new().start().await;
        let p = start_proxy(&sim.url).await;
        let all = "/api/v1/configmaps";
        wait_synced(&p, all, "v1/configmaps").await;
        let list = get(&format!("{}{all}?resourceVersion=0", p.url))
            .await
            .json();
        let first = &list["items"][0]["metadata"];
        let (ns, name) = (
            first["namespace"].as_str().unwrap(),
            first["name"].as_str().unwrap(),
        );
        let cms = format!("/api/v1/namespaces/{ns}/configmaps");
        let served = (200, PROTOBUF.to_string());
        assert_eq!(
            read(&format!("{}{all}?resourceVersion=0", p.url)).await,
            served
        );
        assert_eq!(
            read(&format!("{}{cms}/{name}?resourceVersion=0", p.url)).await,
            served
        );

        // A watch of the state, taken before the odd object exists.
        let resp = request(
            &format!("{}{all}?watch=1&resourceVersion=0", p.url),
            PROTOBUF,
        )
        .await;
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();

        let odd = json!({"metadata": {"name": "odd"}, "data": {"a": "b"}, "newerField": 1});
        let r = send(Method::POST, &format!("{}{cms}", sim.url), Some(odd)).await;
        assert_eq!(r.status, 201, "{}", r.text());
        converged_items(&sim.url, &p, &cms, Duration::from_secs(20)).await;

        // The odd object, and any list holding it, go upstream.
        let upstream = read(&format!("{}{cms}/odd?resourceVersion=0", p.url)).await;
        assert_eq!(upstream.0, 406);
        assert_eq!(
            read(&format!("{}{all}?resourceVersion=0", p.url)).await.0,
            406
        );
        let watch = read(&format!("{}{all}?watch=1&resourceVersion=0", p.url)).await;
        assert_eq!(watch.0, 406);
        // The others are still served, and JSON holds the odd one.
        assert_eq!(
            read(&format!("{}{cms}/{name}?resourceVersion=0", p.url)).await,
            served
        );
        let one = get(&format!("{}{cms}/odd?resourceVersion=0", p.url)).await;
        assert_eq!(one.json()["newerField"], 1);

        // The watch sent the state, then ended at the odd object.
        let mut bytes = Vec::new();
        while let Some(f) = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("the watch ends")
        {
            if let Ok(d) = f.unwrap().into_data() {
                bytes.extend_from_slice(&d);
            }
        }
        let mut frames = 0;
        let mut rest = &bytes[..];
        while rest.len() >= 4 {
            let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
            rest = &rest[4 + n..];
            frames += 1;
        }
        assert!(rest.is_empty());
        assert_eq!(frames, list["items"].as_array().unwrap().len());
    })
    .await;
}
