use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::directory_query;
use super::start;

/// Reads server-sent events from a response body.
pub(super) struct Events {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buffer: String,
}

impl Events {
    pub(super) async fn open(http: &reqwest::Client, url: &str) -> Self {
        let response = http.get(url).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self { body: Box::pin(response.bytes_stream()), buffer: String::new() }
    }

    /// The next event's fields (`data` parsed as JSON). Guarded against a silent hang.
    pub(super) async fn next(&mut self) -> (Option<String>, Value) {
        tokio::time::timeout(Duration::from_secs(30), self.read()).await.expect("no event within 30 s")
    }

    async fn read(&mut self) -> (Option<String>, Value) {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let field =
                    |name: &str| block.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim_start().to_owned()));
                let Some(data) = field("data:") else { continue };
                return (field("event:"), serde_json::from_str(&data).unwrap());
            }
            let chunk = self.body.next().await.expect("stream ended").unwrap();
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

#[tokio::test]
async fn the_event_stream_starts_with_server_connected() {
    let t = start().await;
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    let (_, first) = events.next().await;
    assert_eq!(first["type"], "server.connected");
    assert_eq!(first["properties"], json!({}));
    assert!(first["id"].as_str().unwrap().starts_with("evt_"));
}

#[tokio::test]
async fn events_are_filtered_to_the_instance_directory() {
    let t = start().await;
    let (a, b) = (t.git_project("alpha"), t.git_project("beta"));
    let mut events = Events::open(&t.http, &t.at(&format!("/event?{}", directory_query(&a)))).await;
    assert_eq!(events.next().await.1["type"], "server.connected");

    let (_, in_b) = t.post(&format!("/session?{}", directory_query(&b)), json!({ "title": "b" })).await;
    let (_, in_a) = t.post(&format!("/session?{}", directory_query(&a)), json!({ "title": "a" })).await;
    let (_, created) = events.next().await;
    assert_eq!(created["type"], "session.created");
    assert_eq!(created["properties"]["info"], in_a);
    assert_eq!(created["properties"]["sessionID"], in_a["id"]);
    assert_ne!(in_a["id"], in_b["id"]);
}

#[tokio::test]
async fn a_prompt_streams_message_and_part_events_and_status() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let id = session["id"].as_str().unwrap();
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    events.next().await;
    t.post(&format!("/session/{id}/message"), json!({ "parts": [{ "type": "text", "text": "hi" }] })).await;
    let mut seen = Vec::new();
    while !seen.contains(&"session.idle".to_owned()) || !seen.contains(&"message.part.updated".to_owned()) {
        seen.push(events.next().await.1["type"].as_str().unwrap().to_owned());
    }
    for expected in ["session.status", "message.updated", "message.part.delta"] {
        assert!(seen.iter().any(|s| s == expected), "{expected} missing from {seen:?}");
    }
}

#[tokio::test]
async fn session_event_streams_replay_after_a_sequence_number_then_tail() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({ "title": "replay" })).await;
    let id = session["id"].as_str().unwrap();
    t.patch(&format!("/session/{id}"), json!({ "title": "renamed" })).await;

    let mut all = Events::open(&t.http, &t.at(&format!("/api/session/{id}/event?after=0"))).await;
    let (kind, first) = all.next().await;
    assert_eq!((kind.as_deref(), first["seq"].as_i64()), (Some("session.created"), Some(1)));
    let (kind, second) = all.next().await;
    assert_eq!((kind.as_deref(), second["seq"].as_i64()), (Some("session.updated"), Some(2)));

    // Reconnecting after 1 resumes at 2; new events follow live.
    let mut resumed = Events::open(&t.http, &t.at(&format!("/api/session/{id}/event?after=1"))).await;
    assert_eq!(resumed.next().await.1["seq"], 2);
    t.patch(&format!("/session/{id}"), json!({ "title": "again" })).await;
    let (kind, live) = resumed.next().await;
    assert_eq!((kind.as_deref(), live["seq"].as_i64()), (Some("session.updated"), Some(3)));
    assert_eq!(all.next().await.1["seq"], 3);
}

#[tokio::test]
async fn deleting_a_session_publishes_session_deleted() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let id = session["id"].as_str().unwrap();
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    events.next().await;
    t.delete(&format!("/session/{id}")).await;
    let (_, deleted) = events.next().await;
    assert_eq!(deleted["type"], "session.deleted");
    assert_eq!(deleted["properties"]["info"]["id"], id);
}

#[tokio::test]
async fn shutdown_ends_open_event_streams() {
    let t = start().await;
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    events.next().await;
    let super::TestServer { server, .. } = t;
    server.shutdown().await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(30), events.body.next()).await.expect("stream kept open");
    assert!(end.is_none() || end.is_some_and(|chunk| chunk.is_err()));
}
