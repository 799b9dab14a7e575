//! Transport behaviour over real HTTP: retries, rate limits, timeouts, broken streams and bad
//! input. Every failure is a typed error; nothing panics or hangs.

use std::time::Duration;

use futures_util::StreamExt;
use opencode_llm::ClientOptions;
use opencode_llm::ErrorKind;
use opencode_llm::LlmClient;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::RetryPolicy;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support;

const TEXT_CHUNK: &str =
    r#"{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}"#;
const STOP_CHUNK: &str = r#"{"id":"c1","model":"gpt-test","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
const USAGE_CHUNK: &str =
    r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#;

fn ok_stream() -> MockResponse {
    MockResponse::sse([TEXT_CHUNK, STOP_CHUNK, USAGE_CHUNK, "[DONE]"])
}

fn fast_retry_client(max_retries: u32, idle: Duration) -> LlmClient {
    LlmClient::with_options(ClientOptions {
        retry: RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(2),
        },
        idle_timeout: idle,
        ..Default::default()
    })
}

fn request() -> LlmRequest {
    LlmRequest::new("gpt-test").message(Message::user("hi"))
}

async fn started(mock: &MockProvider) -> opencode_llm::Route {
    support::mock_route(mock, "openai", Some("openai-chat"), None)
}

#[tokio::test]
async fn retries_server_errors_then_streams() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::json(503, &json!({"error": {"message": "overloaded"}})));
    mock.push(MockResponse::json(500, &json!({"error": {"message": "boom"}})));
    mock.push(ok_stream());
    let route = started(&mock).await;
    let response = fast_retry_client(2, Duration::from_secs(5)).generate(&route, &request()).await.unwrap();
    assert_eq!(response.text(), "Hello");
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn retries_are_bounded() {
    let mock = MockProvider::start().await.unwrap();
    for _ in 0..3 {
        mock.push(MockResponse::json(500, &json!({"error": {"message": "still failing"}})));
    }
    let route = started(&mock).await;
    let error = fast_retry_client(1, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!((error.kind, error.status, error.retryable), (ErrorKind::ProviderInternal, Some(500), true));
    assert_eq!(mock.requests().len(), 2, "one attempt plus one retry");
}

#[tokio::test]
async fn rate_limit_honours_retry_after_ms() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(
        MockResponse::json(429, &json!({"error": {"message": "Rate limit reached"}})).header("retry-after-ms", "300"),
    );
    mock.push(ok_stream());
    let route = started(&mock).await;
    let started_at = std::time::Instant::now();
    let response = fast_retry_client(2, Duration::from_secs(5)).generate(&route, &request()).await.unwrap();
    assert_eq!(response.text(), "Hello");
    assert!(started_at.elapsed() >= Duration::from_millis(300), "waited {:?}", started_at.elapsed());
}

#[tokio::test]
async fn quota_errors_are_not_retried() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::json(
        429,
        &json!({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}),
    ));
    let route = started(&mock).await;
    let error = fast_retry_client(2, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!((error.kind, error.retryable), (ErrorKind::QuotaExceeded, false));
    assert_eq!(error.message, "You exceeded your current quota");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn stalled_stream_times_out_with_a_terminal_error() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::sse([TEXT_CHUNK]).then_stall());
    let route = started(&mock).await;
    let client = fast_retry_client(0, Duration::from_millis(200));
    let events: Vec<LlmEvent> = client.stream(&route, &request()).await.unwrap().collect().await;
    support::assert_terminal_once(&events);
    let Some(LlmEvent::Error { error }) = events.last() else { panic!("expected an error, got {events:#?}") };
    assert_eq!((error.kind, error.retryable), (ErrorKind::Timeout, true));
    assert!(events.iter().any(|event| matches!(event, LlmEvent::TextDelta { text, .. } if text == "Hello")));
}

#[tokio::test]
async fn disconnect_mid_stream_is_a_transport_error() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::sse([TEXT_CHUNK]).then_disconnect());
    let route = started(&mock).await;
    let events: Vec<LlmEvent> =
        fast_retry_client(0, Duration::from_secs(5)).stream(&route, &request()).await.unwrap().collect().await;
    support::assert_terminal_once(&events);
    let Some(LlmEvent::Error { error }) = events.last() else { panic!("expected an error, got {events:#?}") };
    assert_eq!(error.kind, ErrorKind::Transport);
}

#[tokio::test]
async fn stream_ending_without_finish_is_an_error() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::sse([TEXT_CHUNK]));
    let route = started(&mock).await;
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Transport);
    assert!(error.message.contains("before finishing"), "{}", error.message);
}

#[tokio::test]
async fn malformed_chunk_is_invalid_provider_output() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::sse([TEXT_CHUNK, r#"{"choices":[{"delta":{"content":"#]));
    let route = started(&mock).await;
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidProviderOutput);
    assert!(error.message.contains("invalid openai-chat stream event"), "{}", error.message);
}

#[tokio::test]
async fn garbage_bytes_are_invalid_provider_output() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::body(
        200,
        "text/event-stream",
        vec![0xff, 0xfe, b'\n', b'd', b'a', b't', b'a', b':', b'\x01', b'\n', b'\n'],
    ));
    let route = started(&mock).await;
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidProviderOutput);
}

#[tokio::test]
async fn html_error_page_is_reported_readably() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::body(200, "text/html", "<html><body>Gateway login required</body></html>"));
    let route = started(&mock).await;
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidProviderOutput);
    assert!(error.message.contains("got `text/html`"), "{}", error.message);
}

#[tokio::test]
async fn ok_status_with_an_error_body_is_classified() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::json(200, &json!({"error": {"code": 401, "message": "No auth credentials found"}})));
    let route = started(&mock).await;
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!((error.kind, error.status), (ErrorKind::Authentication, Some(401)));
    assert_eq!(error.message, "No auth credentials found");
}

#[tokio::test]
async fn secrets_are_redacted_from_errors() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::json(401, &json!({"error": {"message": "Incorrect API key provided: test-key"}})));
    let route = started(&mock).await;
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!(error.message, "Incorrect API key provided: <redacted>");
    assert_eq!(mock.requests()[0].header("authorization"), Some("Bearer test-key"));
}

#[tokio::test]
async fn missing_key_names_the_environment_variable() {
    let mock = MockProvider::start().await.unwrap();
    let route = started(&mock).await.with_auth(opencode_llm::Auth::bearer_env("OPENCODE_TEST_SURELY_UNSET_KEY"));
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::Authentication);
    assert!(error.message.contains("OPENCODE_TEST_SURELY_UNSET_KEY"), "{}", error.message);
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn connection_refused_is_a_retryable_transport_error() {
    let route = opencode_llm::provider::route(
        "openai",
        &opencode_llm::provider::ProviderConfig {
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some("k".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let error = fast_retry_client(0, Duration::from_secs(5)).generate(&route, &request()).await.unwrap_err();
    assert_eq!((error.kind, error.retryable), (ErrorKind::Transport, true));
}

#[tokio::test]
async fn http_overlay_cannot_overwrite_protocol_fields() {
    let mock = MockProvider::start().await.unwrap();
    let route = started(&mock).await;
    let mut request = request();
    request.http.body.insert("model".into(), json!("other"));
    let error = support::client().prepare(&route, &request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidRequest);

    let mut request = self::request();
    request.http.body.insert("user".into(), json!("u-1"));
    request.http.headers.insert("x-trace".into(), "t".into());
    let prepared = support::client().prepare(&route, &request).unwrap();
    assert_eq!(prepared.body_json().unwrap()["user"], json!("u-1"));
    assert_eq!(prepared.header("x-trace"), Some("t"));

    let mut request = self::request();
    request.http.headers.insert("Authorization".into(), "Bearer stolen".into());
    assert_eq!(support::client().prepare(&route, &request).unwrap_err().kind, ErrorKind::InvalidRequest);
}
