//! Signed-in routes (reference/llm-protocols.md §11) on the wire: the exact URL, headers and body
//! differences the mock provider records for Claude Pro/Max, the ChatGPT Codex backend and GitHub
//! Copilot, against the API-key requests of the same providers.

use futures_util::StreamExt;
use opencode_llm::ContentPart;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_llm::MediaData;
use opencode_llm::Message;
use opencode_llm::Route;
use opencode_llm::ToolCall;
use opencode_llm::ToolDefinition;
use opencode_llm::ToolResultValue;
use opencode_llm::provider;
use opencode_llm::provider::ProviderConfig;
use opencode_llm::provider::SignIn;
use opencode_mock_provider::Cassette;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_mock_provider::RecordedRequest;
use opencode_mock_provider::canonical_json;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::support;

fn sign_in(token: &str, account: Option<&str>) -> SignIn {
    SignIn { access_token: token.to_owned(), account_id: account.map(str::to_owned), enterprise_url: None }
}

fn route(id: &str, base_url: String, sign_in: Option<SignIn>, api_key: Option<&str>) -> Route {
    let config = ProviderConfig {
        base_url: Some(base_url),
        api_key: api_key.map(str::to_owned),
        sign_in,
        ..ProviderConfig::default()
    };
    provider::route(id, &config).expect("route builds")
}

/// Streams `request` over `route` to `mock` (serving `response`); the folded response and what the
/// mock received.
async fn send(
    mock: &MockProvider,
    route: &Route,
    request: &LlmRequest,
    response: MockResponse,
) -> (LlmResponse, RecordedRequest) {
    mock.push(response);
    let events: Vec<LlmEvent> = support::client().stream(route, request).await.expect("stream starts").collect().await;
    support::assert_terminal_once(&events);
    let folded = LlmResponse::from_events(&events);
    assert_eq!(folded.error, None);
    let recorded = mock.requests().pop().expect("one request");
    (folded, recorded)
}

fn anthropic_request() -> LlmRequest {
    LlmRequest::new("claude-sonnet-4-5")
        .system("You are OpenCode, a coding agent.")
        .tool(ToolDefinition::new("read", "Read a file", json!({"type": "object"})))
        .message(Message::user("read a.txt"))
}

fn anthropic_tool_use(name: &str) -> MockResponse {
    MockResponse::sse([
        json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-5", "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}).to_string(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}).to_string(),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\":\"a.txt\"}"}}).to_string(),
        json!({"type": "content_block_stop", "index": 0}).to_string(),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}).to_string(),
        json!({"type": "message_stop"}).to_string(),
    ])
}

#[tokio::test]
async fn claude_pro_max_sends_a_bearer_token_with_the_oauth_betas_and_claude_code_shape() {
    let mock = MockProvider::start().await.unwrap();
    let route = route("anthropic", format!("{}/v1", mock.base_url()), Some(sign_in("sk-ant-oat-1", None)), None);
    let mut request = anthropic_request();
    request.http.headers.insert("anthropic-beta".into(), "context-1m-2025-08-07".into());
    let (folded, sent) = send(&mock, &route, &request, anthropic_tool_use("mcp_read")).await;

    assert_eq!(sent.path_and_query, "/v1/messages?beta=true");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-ant-oat-1"));
    assert_eq!(sent.header("x-api-key"), None);
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("oauth-2025-04-20,interleaved-thinking-2025-05-14,context-1m-2025-08-07"),
        "the model's beta joins the required ones"
    );
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("user-agent"), Some("claude-cli/2.1.2 (external, cli)"));
    let body = sent.body_json().unwrap();
    let system: Vec<&str> =
        body["system"].as_array().unwrap().iter().map(|block| block["text"].as_str().unwrap()).collect();
    assert_eq!(
        system,
        ["You are Claude Code, Anthropic's official CLI for Claude.", "You are Claude Code, a coding agent."]
    );
    assert_eq!(body["tools"][0]["name"], "mcp_read");
    // The prefix is the wire's business only: the caller sees its own tool name.
    assert_eq!(
        folded.tool_calls(),
        vec![ToolCall { id: "toolu_1".into(), name: "read".into(), input: json!({"path": "a.txt"}) }]
    );
}

#[tokio::test]
async fn claude_pro_max_prefixes_tool_names_in_the_history() {
    let mock = MockProvider::start().await.unwrap();
    let route = route("anthropic", format!("{}/v1", mock.base_url()), Some(sign_in("t", None)), None);
    let request = anthropic_request()
        .message(Message::assistant(vec![ContentPart::ToolCall {
            id: "toolu_1".into(),
            name: "read".into(),
            input: json!({"path": "a.txt"}),
            provider_executed: false,
            provider_metadata: None,
        }]))
        .message(Message::tool_result("toolu_1", "read", ToolResultValue::Text("hello".into())));
    let (_, sent) = send(&mock, &route, &request, anthropic_tool_use("mcp_read")).await;
    let body = sent.body_json().unwrap();
    assert_eq!(body["messages"][1]["content"][0]["name"], "mcp_read");
}

#[tokio::test]
async fn an_anthropic_api_key_keeps_the_plain_request() {
    let mock = MockProvider::start().await.unwrap();
    let route = route("anthropic", format!("{}/v1", mock.base_url()), None, Some("sk-ant-api-1"));
    let (folded, sent) = send(&mock, &route, &anthropic_request(), anthropic_tool_use("read")).await;
    assert_eq!(sent.path_and_query, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-api-1"));
    assert_eq!((sent.header("authorization"), sent.header("anthropic-beta")), (None, None));
    let body = sent.body_json().unwrap();
    assert_eq!(body["system"].as_array().unwrap().len(), 1);
    assert_eq!(body["system"][0]["text"], "You are OpenCode, a coding agent.");
    assert_eq!(body["tools"][0]["name"], "read");
    assert_eq!(folded.tool_calls()[0].name, "read");
}

/// The canonical request of the first step of `native-openai-oauth-tool-loop`, with an output limit
/// the Codex backend must not receive.
fn codex_request() -> LlmRequest {
    let mut request = LlmRequest::new("gpt-5.5")
        .system("Answer using tools when appropriate.\nUse the get_weather tool exactly once to look up Paris, then reply with exactly: Paris is sunny.")
        .tool(ToolDefinition::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": false}),
        ))
        .message(Message::user("What is the weather in Paris?"));
    request.options.set(
        "openai",
        json!({"prompt_cache_key": "session-recorded-openai-oauth-loop", "reasoning_effort": "medium", "reasoning_summary": "auto", "text_verbosity": "low"}),
    );
    request.generation.max_tokens = Some(32_000);
    request
}

#[tokio::test]
async fn chatgpt_sign_in_goes_to_the_codex_backend_with_the_recorded_body() {
    let Some(fixtures) = support::fixtures() else { return };
    let cassette =
        Cassette::load(&fixtures.join("recordings/opencode/session/native-openai-oauth-tool-loop.json")).unwrap();
    let recorded = &cassette.interactions[0];
    let mock = MockProvider::start().await.unwrap();
    let route =
        route("openai", format!("{}/backend-api/codex", mock.base_url()), Some(sign_in("at-1", Some("acct-1"))), None);
    let response = MockResponse::from_recorded(&recorded.response);
    let (folded, sent) = send(&mock, &route, &codex_request(), response).await;

    assert_eq!(sent.path_and_query, "/backend-api/codex/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer at-1"));
    assert_eq!(sent.header("chatgpt-account-id"), Some("acct-1"));
    assert_eq!(sent.header("originator"), Some("opencode"));
    assert_eq!(sent.header("session_id"), Some("session-recorded-openai-oauth-loop"));
    assert!(sent.header("user-agent").is_some_and(|agent| agent.starts_with("opencode/")));
    // `store: false`, `instructions`, the encrypted-reasoning include and no `max_output_tokens`:
    // exactly what the recorded signed-in client sent.
    let expected: Value = serde_json::from_str(&recorded.request.body).unwrap();
    assert_eq!(canonical_json(&sent.body_json().unwrap()), canonical_json(&expected));
    assert_eq!(folded.tool_calls().len(), 1);
    assert_eq!(folded.tool_calls()[0].name, "get_weather");
}

#[tokio::test]
async fn an_openai_api_key_keeps_the_platform_request() {
    let mock = MockProvider::start().await.unwrap();
    let route = route("openai", format!("{}/v1", mock.base_url()), None, Some("sk-1"));
    let (_, sent) = send(&mock, &route, &codex_request(), responses_text("ok")).await;
    assert_eq!(sent.path_and_query, "/v1/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-1"));
    assert_eq!(
        (sent.header("chatgpt-account-id"), sent.header("originator"), sent.header("session_id")),
        (None, None, None)
    );
    let body = sent.body_json().unwrap();
    assert_eq!(body["max_output_tokens"], 32_000);
    assert_eq!((body.get("store"), body.get("instructions")), (None, None));
    assert_eq!(body["input"][0]["role"], "system");
}

#[tokio::test]
async fn copilot_sends_the_github_token_and_its_headers() {
    let Some(fixtures) = support::fixtures() else { return };
    let chunks =
        std::fs::read_to_string(fixtures.join("provider-streams/openai-responses/copilot-item-id-rotation.chunks.txt"))
            .unwrap();
    let mock = MockProvider::start().await.unwrap();
    let mut route = route("github-copilot", mock.base_url(), Some(sign_in("gho_1", None)), None);
    route.protocol = provider::protocol("openai-responses").unwrap();
    let request = LlmRequest::new("gpt-5").message(Message::user("How many r in strawberry?"));
    let response = MockResponse::sse(chunks.lines().filter(|line| !line.trim().is_empty()));
    let (folded, sent) = send(&mock, &route, &request, response).await;

    assert_eq!(sent.path_and_query, "/responses");
    assert_eq!(sent.header("authorization"), Some("Bearer gho_1"));
    assert_eq!(sent.header("openai-intent"), Some("conversation-edits"));
    assert_eq!(sent.header("x-initiator"), Some("user"));
    assert_eq!(sent.header("copilot-vision-request"), None);
    assert!(sent.header("user-agent").is_some_and(|agent| agent.starts_with("opencode/")));
    assert!(folded.text().contains("strawberry"), "{}", folded.text());
}

#[tokio::test]
async fn copilot_marks_agent_turns_and_images() {
    let mock = MockProvider::start().await.unwrap();
    let route = route("github-copilot", mock.base_url(), Some(sign_in("gho_1", None)), None);
    let request = LlmRequest::new("claude-sonnet-4.5")
        .message(Message {
            role: opencode_llm::Role::User,
            content: vec![
                ContentPart::text("what is this?"),
                ContentPart::Media {
                    media_type: "image/png".into(),
                    data: MediaData::Base64("iVBOR".into()),
                    filename: None,
                },
            ],
        })
        .message(Message::assistant(vec![ContentPart::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            input: json!({}),
            provider_executed: false,
            provider_metadata: None,
        }]))
        .message(Message::tool_result("c1", "read", ToolResultValue::Text("x".into())));
    let (_, sent) = send(&mock, &route, &request, MockResponse::chat_text("ok")).await;
    assert_eq!(sent.path_and_query, "/chat/completions");
    assert_eq!(sent.header("x-initiator"), Some("agent"));
    assert_eq!(sent.header("copilot-vision-request"), Some("true"));
}

#[test]
fn copilot_enterprise_uses_its_copilot_api_host() {
    let config = ProviderConfig {
        sign_in: Some(SignIn { enterprise_url: Some("https://github.acme.com/".into()), ..sign_in("t", None) }),
        ..ProviderConfig::default()
    };
    assert_eq!(
        provider::route("github-copilot", &config).unwrap().endpoint.base_url,
        "https://copilot-api.github.acme.com"
    );
    let public = provider::route(
        "github-copilot",
        &ProviderConfig { sign_in: Some(sign_in("t", None)), ..ProviderConfig::default() },
    );
    assert_eq!(public.unwrap().endpoint.base_url, "https://api.githubcopilot.com");
}

/// A minimal Responses stream answering `text`.
fn responses_text(text: &str) -> MockResponse {
    MockResponse::sse([
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}).to_string(),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}).to_string(),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text}).to_string(),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}}).to_string(),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}}}).to_string(),
    ])
}
