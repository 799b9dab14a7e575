//! Integration tests: a real reqwest client against the mock provider.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt as _;
use opencode_mock_provider::{Cassette, MockProvider, MockResponse, canonical_json, require_fixtures};
use serde_json::json;

/// reqwest is built with `rustls-no-provider`: `Client::new()` panics unless a
/// process-wide crypto provider is installed, even for plain `http://`.
fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Reads the body frame by frame: the chunks received, then the error that
/// ended the body (if any).
async fn read_frames(response: reqwest::Response) -> (Vec<Bytes>, Option<reqwest::Error>) {
    let mut stream = response.bytes_stream();
    let mut frames = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(bytes) => frames.push(bytes),
            Err(err) => return (frames, Some(err)),
        }
    }
    (frames, None)
}

fn concat(frames: &[Bytes]) -> Vec<u8> {
    frames.iter().flat_map(|b| b.iter().copied()).collect()
}

#[tokio::test]
async fn serves_scripted_sse() {
    let provider = MockProvider::start().await.unwrap();
    assert!(provider.base_url().starts_with("http://127.0.0.1:"));
    assert!(!provider.base_url().ends_with('/'));
    provider.push(MockResponse::sse([r#"{"a":1}"#, "[DONE]"]));
    assert_eq!(provider.remaining(), 1);

    let response =
        client().post(format!("{}/v1/chat/completions", provider.base_url())).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"].to_str().unwrap(), "text/event-stream");
    assert_eq!(response.text().await.unwrap(), "data: {\"a\":1}\n\ndata: [DONE]\n\n");
    assert_eq!(provider.remaining(), 0);
}

#[tokio::test]
async fn serves_json_and_custom_bodies_in_fifo_order() {
    let provider = MockProvider::start().await.unwrap();
    provider.push_all([
        MockResponse::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "2"),
        MockResponse::body(200, "application/x-ndjson", "{\"x\":1}\n"),
        MockResponse::new(204),
    ]);
    assert_eq!(provider.remaining(), 3);
    let client = client();

    let response = client.get(provider.base_url()).send().await.unwrap();
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["retry-after"], "2");
    assert_eq!(response.headers()["content-length"], "33");
    assert_eq!(response.text().await.unwrap(), r#"{"error":{"message":"slow down"}}"#);

    let response = client.put(format!("{}/other", provider.base_url())).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    assert_eq!(response.text().await.unwrap(), "{\"x\":1}\n");

    let response = client.delete(provider.base_url()).send().await.unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(response.bytes().await.unwrap(), Bytes::new());
    assert_eq!(provider.remaining(), 0);
}

#[tokio::test]
async fn split_chunks_reach_the_client_as_small_frames() {
    let provider = MockProvider::start().await.unwrap();
    let payloads = [r#"{"delta":"Hello"}"#, r#"{"delta":" world"}"#, "[DONE]"];
    let expected: String = payloads.iter().map(|p| format!("data: {p}\n\n")).collect();
    provider.push(MockResponse::sse(payloads).split_into_chunks(5));

    let response = client().post(provider.base_url()).send().await.unwrap();
    let (frames, err) = read_frames(response).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(concat(&frames), expected.as_bytes());
    // Chunked transfer encoding keeps every piece a separate frame.
    assert!(frames.iter().all(|f| f.len() <= 5), "{frames:?}");
    assert_eq!(frames.len(), expected.len().div_ceil(5));
}

#[tokio::test]
async fn delays_pause_the_head_and_the_body() {
    let provider = MockProvider::start().await.unwrap();
    provider.push(
        MockResponse::new(200)
            .delay(Duration::from_millis(200))
            .chunk("first")
            .delay(Duration::from_millis(300))
            .chunk("second"),
    );

    let started = Instant::now();
    let response = client().get(provider.base_url()).send().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));

    let mut stream = response.bytes_stream();
    assert_eq!(stream.next().await.unwrap().unwrap(), "first");
    let first_at = Instant::now();
    assert_eq!(stream.next().await.unwrap().unwrap(), "second");
    assert!(first_at.elapsed() >= Duration::from_millis(250));
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn disconnect_is_an_error_not_a_clean_end() {
    let provider = MockProvider::start().await.unwrap();
    provider.push(MockResponse::sse([r#"{"a":1}"#]).then_disconnect());

    let response = client().post(provider.base_url()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let (frames, err) = read_frames(response).await;
    assert_eq!(concat(&frames), b"data: {\"a\":1}\n\n");
    let err = err.expect("the body must end with an error");
    assert!(err.is_body() || err.is_decode() || err.is_request(), "{err:?}");
}

#[tokio::test]
async fn disconnect_of_a_single_chunk_body_after_split() {
    // Also exercises a disconnect after many small frames.
    let provider = MockProvider::start().await.unwrap();
    provider.push(MockResponse::body(200, "text/plain", "0123456789").split_into_chunks(3).then_disconnect());
    let response = client().get(provider.base_url()).send().await.unwrap();
    let (frames, err) = read_frames(response).await;
    assert_eq!(concat(&frames), b"0123456789");
    assert!(err.is_some());
}

#[tokio::test]
async fn stall_keeps_the_connection_open_until_drop() {
    let provider = MockProvider::start().await.unwrap();
    provider.push(MockResponse::sse(["1"]).then_stall());

    let response = client().post(provider.base_url()).send().await.unwrap();
    let mut stream = response.bytes_stream();
    assert_eq!(stream.next().await.unwrap().unwrap(), "data: 1\n\n");
    let waited = tokio::time::timeout(Duration::from_millis(300), stream.next()).await;
    assert!(waited.is_err(), "expected a stall, got {waited:?}");

    drop(provider);
    let end = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("dropping the server must end the stalled body");
    assert!(matches!(end, Some(Err(_))), "{end:?}");
}

#[tokio::test]
async fn stall_before_any_chunk_still_sends_the_head() {
    let provider = MockProvider::start().await.unwrap();
    provider.push(MockResponse::new(200).then_stall());
    let response =
        tokio::time::timeout(Duration::from_secs(5), client().get(provider.base_url()).send()).await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    assert!(tokio::time::timeout(Duration::from_millis(200), stream.next()).await.is_err());
}

#[tokio::test]
async fn records_requests_in_order() {
    let provider = MockProvider::start().await.unwrap();
    provider.push_all([MockResponse::new(200), MockResponse::new(200)]);
    let client = client();
    let big = "x".repeat(3 * 1024 * 1024);

    client
        .post(format!("{}/v1/messages?beta=true", provider.base_url()))
        .header("X-Api-Key", "secret")
        .header("content-type", "application/json")
        .body(r#"{"model":"m","stream":true}"#)
        .send()
        .await
        .unwrap();
    client.post(format!("{}/upload", provider.base_url())).body(big.clone()).send().await.unwrap();

    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path_and_query, "/v1/messages?beta=true");
    assert_eq!(first.header("x-api-key"), Some("secret"));
    assert_eq!(first.header("X-API-KEY"), Some("secret"));
    assert!(first.headers.iter().any(|(n, _)| n == "x-api-key"));
    assert!(first.headers.iter().all(|(n, _)| *n == n.to_lowercase()));
    assert_eq!(first.header("missing"), None);
    assert_eq!(first.body_json().unwrap(), json!({"model": "m", "stream": true}));
    assert_eq!(requests[1].path_and_query, "/upload");
    assert_eq!(requests[1].body.len(), big.len());
    assert!(requests[1].body_json().is_err());
}

#[tokio::test]
async fn empty_queue_answers_500_and_still_records() {
    let provider = MockProvider::start().await.unwrap();
    let response = client().post(format!("{}/v1/responses?x=1", provider.base_url())).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: serde_json::Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(
        body,
        json!({"error": {"message": "mock provider: no scripted response left for POST /v1/responses?x=1"}})
    );
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(provider.requests()[0].body, "{}");
}

#[tokio::test]
async fn a_responder_answers_once_the_queue_is_empty() {
    let provider = MockProvider::start().await.unwrap();
    provider.push(MockResponse::json(200, &json!({"first": true})));
    provider.respond_with(|request| MockResponse::json(200, &json!({"path": request.path_and_query})));
    for expected in [json!({"first": true}), json!({"path": "/a"}), json!({"path": "/a"})] {
        let response = client().post(format!("{}/a", provider.base_url())).body("{}").send().await.unwrap();
        let body: serde_json::Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        assert_eq!(body, expected);
    }
    assert_eq!(provider.requests().len(), 3);
}

#[tokio::test]
async fn invalid_scripted_header_is_reported() {
    let provider = MockProvider::start().await.unwrap();
    provider.push(MockResponse::new(200).header("bad header", "v"));
    let response = client().get(provider.base_url()).send().await.unwrap();
    assert_eq!(response.status(), 500);
    let text = response.text().await.unwrap();
    assert!(text.contains("invalid scripted header"), "{text}");
}

#[tokio::test]
async fn replays_a_recorded_cassette() {
    let Some(fixtures) = require_fixtures() else {
        return;
    };
    let path = fixtures.join("recordings/llm/openai-chat/streams-text.json");
    let cassette = Cassette::load(&path).unwrap();
    assert_eq!(cassette.name, "openai-chat/streams-text");
    assert!(cassette.tags.iter().any(|t| t == "provider:openai"));
    assert_eq!(cassette.interactions.len(), 1);
    let recorded = &cassette.interactions[0];

    let provider = MockProvider::start().await.unwrap();
    provider.push_all(cassette.responses());

    let url = recorded.request.url.replacen("https://api.openai.com", &provider.base_url(), 1);
    let response = client()
        .post(url)
        .header("content-type", "application/json")
        .body(recorded.request.body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), recorded.response.status);
    assert_eq!(response.headers()["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(response.bytes().await.unwrap(), recorded.response.body);
    assert!(recorded.response.body.ends_with(b"data: [DONE]\n\n"));

    let sent = &provider.requests()[0];
    assert_eq!(sent.path_and_query, "/v1/chat/completions");
    let recorded_body: serde_json::Value = serde_json::from_str(&recorded.request.body).unwrap();
    assert_eq!(canonical_json(&sent.body_json().unwrap()), canonical_json(&recorded_body));
}

#[tokio::test]
async fn replays_a_base64_cassette_byte_for_byte() {
    let Some(fixtures) = require_fixtures() else {
        return;
    };
    let path = fixtures.join("recordings/llm/bedrock-converse/streams-text.json");
    let cassette = Cassette::load(&path).unwrap();
    let recorded = &cassette.interactions[0].response;
    // AWS event-stream frames start with a big-endian total length.
    let total = u32::from_be_bytes(recorded.body[..4].try_into().unwrap());
    assert!(total as usize <= recorded.body.len());

    let provider = MockProvider::start().await.unwrap();
    provider.push_all(cassette.responses());
    let response = client().post(format!("{}/model/x/converse-stream", provider.base_url())).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "application/vnd.amazon.eventstream");
    assert_eq!(response.bytes().await.unwrap(), recorded.body);
}

#[tokio::test]
async fn loads_every_shared_recording() {
    let Some(fixtures) = require_fixtures() else {
        return;
    };
    let mut pending = vec![fixtures.join("recordings")];
    let mut loaded = 0;
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let cassette = Cassette::load(&path).unwrap();
                assert!(!cassette.name.is_empty());
                assert_eq!(cassette.responses().len(), cassette.interactions.len());
                loaded += 1;
            }
        }
    }
    assert!(loaded > 0);
}

#[test]
fn canonical_json_sorts_keys_recursively() {
    let value = json!({
        "z": 1,
        "a": {"y": [ {"b": true, "a": null} ], "x": "s\"q"},
        "m": [3, 1.5, "é"]
    });
    assert_eq!(canonical_json(&value), r#"{"a":{"x":"s\"q","y":[{"a":null,"b":true}]},"m":[3,1.5,"é"],"z":1}"#);
    let reordered: serde_json::Value =
        serde_json::from_str(r#"{"m":[3,1.5,"é"],"a":{"x":"s\"q","y":[{"a":null,"b":true}]},"z":1}"#).unwrap();
    assert_eq!(canonical_json(&value), canonical_json(&reordered));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_multi_thread_runtime() {
    let provider = MockProvider::start().await.unwrap();
    provider.push_all((0..4).map(|i| MockResponse::json(200, &json!({ "i": i }))));
    let client = client();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let body = client.get(provider.base_url()).send().await.unwrap().text().await.unwrap();
        seen.push(body);
    }
    assert_eq!(seen, [r#"{"i":0}"#, r#"{"i":1}"#, r#"{"i":2}"#, r#"{"i":3}"#]);
    assert_eq!(provider.requests().len(), 4);
}
