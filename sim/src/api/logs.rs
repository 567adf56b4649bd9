//! A pod's log (`pods/NAME/log`): the simulator runs no containers, so
//! each container's log is a few lines that say so — enough for `kubectl
//! logs` to show it works, and never mistaken for a real one. The
//! apiserver's errors for a missing pod and an unknown or unnamed
//! container; `container`, `tailLines` and `timestamps` honoured.

use super::json::respond;
use crate::SimType;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use kubecache::body::Body;
use kubecache::status::Status;

#[derive(Debug, thiserror::Error)]
pub(crate) enum LogError {
    #[error("pods {0:?} not found")]
    NotFound(String),
    #[error("container {container} is not valid for pod {pod}")]
    NoSuchContainer { pod: String, container: String },
    /// v1.20 names the init containers first, in one list.
    #[error("a container name must be specified for pod {pod}, choose one of: [{}]", .containers.join(" "))]
    ChooseOne {
        pod: String,
        containers: Vec<String>,
    },
}

impl From<&LogError> for Status {
    fn from(e: &LogError) -> Status {
        match e {
            LogError::NotFound(name) => Status::not_found("", "pods", name),
            e => Status::bad_request(e.to_string()),
        }
    }
}

/// Lines each container's simulated log has.
const LINES: usize = 5;

pub(super) fn answer(
    t: &SimType,
    ns: &str,
    name: &str,
    query: Option<&str>,
) -> Result<Response<Body>, LogError> {
    let entry = t
        .store
        .get(&format!("{ns}/{name}"))
        .ok_or_else(|| LogError::NotFound(name.to_string()))?;
    let pod: serde_json::Value =
        serde_json::from_slice(&t.codec.object_bytes(&entry)).unwrap_or_default();
    let names = |field: &str| -> Vec<String> {
        pod["spec"][field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect()
    };
    let containers = names("containers");
    let mut container = None;
    let (mut tail, mut timestamps) = (None, false);
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*k {
            "container" => container = Some(v.into_owned()),
            "tailLines" => tail = v.parse::<usize>().ok(),
            "timestamps" => timestamps = v == "true" || v == "1",
            _ => {}
        }
    }
    let container = match container {
        Some(c) if containers.contains(&c) || names("initContainers").contains(&c) => c,
        Some(c) => {
            return Err(LogError::NoSuchContainer {
                pod: name.to_string(),
                container: c,
            })
        }
        None if containers.len() == 1 => containers[0].clone(),
        None => {
            return Err(LogError::ChooseOne {
                pod: name.to_string(),
                containers: names("initContainers")
                    .into_iter()
                    .chain(containers)
                    .collect(),
            })
        }
    };
    let started = pod["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or("1970-01-01T00:00:00Z")
        .trim_end_matches('Z')
        .to_string();
    let lines: Vec<String> = (1..=LINES)
        .map(|i| {
            let line = format!(
                "kubecache simulator: container {container} of pod {ns}/{name} does not run; this is simulated log line {i} of {LINES}"
            );
            if timestamps {
                format!("{started}.{i:09}Z {line}")
            } else {
                line
            }
        })
        .collect();
    let skip = tail.map_or(0, |n| LINES.saturating_sub(n));
    let mut text = String::new();
    for line in &lines[skip..] {
        text.push_str(line);
        text.push('\n');
    }
    let mut resp = respond(StatusCode::OK, Bytes::from(text));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(resp)
}
