//! Shared test helpers: routes pointed at the mock provider, and fixture streams served over real
//! HTTP through the whole client.

use std::path::Path;
use std::path::PathBuf;

use futures_util::StreamExt;
use opencode_llm::LlmClient;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_llm::Route;
use opencode_llm::provider;
use opencode_llm::provider::ProviderConfig;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;

/// The shared fixtures folder, or `None` (after a printed notice) when it is absent outside CI.
pub fn fixtures() -> Option<PathBuf> {
    opencode_mock_provider::require_fixtures()
}

/// The route of `provider_id` (optionally with another protocol), sending to the mock under the
/// same base path the real provider uses, with a literal test key.
pub fn mock_route(mock: &MockProvider, provider_id: &str, protocol: Option<&str>, base_path: Option<&str>) -> Route {
    let config = ProviderConfig {
        api_key: Some("test-key".to_owned()),
        protocol: protocol.map(str::to_owned),
        base_url: Some("http://placeholder.invalid/v1".to_owned()),
        region: Some("us-east-1".to_owned()),
        resource: Some("test".to_owned()),
        sign_in: None,
    };
    let default_base = provider::route(provider_id, &ProviderConfig { base_url: None, ..config.clone() })
        .map(|route| route.endpoint.base_url)
        .unwrap_or_default();
    let path = match base_path {
        Some(path) => path.to_owned(),
        None => reqwest_path(&default_base),
    };
    provider::route(provider_id, &ProviderConfig { base_url: Some(format!("{}{path}", mock.base_url())), ..config })
        .expect("route builds")
}

fn reqwest_path(url: &str) -> String {
    match url.split_once("://").and_then(|(_, rest)| rest.find('/').map(|at| rest[at..].to_owned())) {
        Some(path) => path.trim_end_matches('/').to_owned(),
        None => String::new(),
    }
}

/// A client without retries, so failures surface at once.
pub fn client() -> LlmClient {
    LlmClient::with_options(opencode_llm::ClientOptions {
        retry: opencode_llm::RetryPolicy::none(),
        idle_timeout: std::time::Duration::from_secs(5),
        ..Default::default()
    })
}

/// Streams `request` through the mock serving `response`; returns every event.
pub async fn stream_events(provider_id: &str, protocol: Option<&str>, response: MockResponse) -> Vec<LlmEvent> {
    let mock = MockProvider::start().await.expect("mock starts");
    mock.push(response);
    let route = mock_route(&mock, provider_id, protocol, None);
    let request = LlmRequest::new("test-model").message(opencode_llm::Message::user("hi"));
    let stream = client().stream(&route, &request).await.expect("stream starts");
    stream.collect().await
}

/// Serves a `provider-streams` fixture through the full stack and folds the events.
/// `.chunks.txt` files are framed as one SSE `data:` event per line; other files are sent verbatim.
pub async fn replay_stream_fixture(
    path: &Path,
    provider_id: &str,
    protocol: Option<&str>,
) -> (Vec<LlmEvent>, LlmResponse) {
    let bytes = std::fs::read(path).unwrap_or_else(|err| panic!("read {}: {err}", path.display()));
    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    let response = if name.ends_with(".chunks.txt") {
        let text = String::from_utf8(bytes).expect("chunks are UTF-8");
        MockResponse::sse(text.lines().filter(|line| !line.trim().is_empty()))
    } else if name.ends_with(".bin") {
        MockResponse::body(200, "application/vnd.amazon.eventstream", bytes)
    } else {
        MockResponse::body(200, "text/event-stream", bytes)
    };
    let events = stream_events(provider_id, protocol, response.split_into_chunks(97)).await;
    let folded = LlmResponse::from_events(&events);
    assert_terminal_once(&events);
    (events, folded)
}

/// Exactly one terminal event, and it is the last one.
pub fn assert_terminal_once(events: &[LlmEvent]) {
    let terminals = events.iter().filter(|event| event.is_terminal()).count();
    assert_eq!(terminals, 1, "expected exactly one terminal event in {events:#?}");
    assert!(events.last().is_some_and(LlmEvent::is_terminal), "the terminal event must be last");
}

/// Usage without prompt-cache activity: the whole input is non-cached.
pub fn uncached_usage(input: u64, output: u64) -> opencode_llm::Usage {
    opencode_llm::Usage::from_inclusive(input, 0, 0, output, 0)
}

/// A reasoning part without provider metadata.
pub fn reasoning(text: &str, signature: Option<&str>, encrypted: Option<&str>) -> opencode_llm::ContentPart {
    opencode_llm::ContentPart::Reasoning {
        text: text.to_owned(),
        signature: signature.map(str::to_owned),
        encrypted: encrypted.map(str::to_owned),
        provider_metadata: None,
    }
}
