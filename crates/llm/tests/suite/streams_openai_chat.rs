//! Recorded Chat Completions streams (OpenAI and compatible providers) through the full stack.

use opencode_llm::ContentPart;
use opencode_llm::ErrorKind;
use opencode_llm::FinishReason;
use opencode_llm::ToolCall;
use opencode_llm::Usage;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support;

fn call(id: &str, name: &str, input: serde_json::Value) -> Vec<ToolCall> {
    vec![ToolCall { id: id.into(), name: name.into(), input }]
}

async fn replay(name: &str, provider: &str) -> (Vec<opencode_llm::LlmEvent>, opencode_llm::LlmResponse) {
    let fixtures = support::fixtures().expect("checked by the caller");
    let path = fixtures.join("provider-streams/openai-chat").join(name);
    let protocol = if provider == "openai" { Some("openai-chat") } else { None };
    support::replay_stream_fixture(&path, provider, protocol).await
}

#[tokio::test]
async fn openai_tool_call_with_usage_chunk() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("openai-tool-call-raw.sse", "openai").await;
    assert_eq!(response.tool_calls(), call("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", json!({"country": "UK"})));
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(Usage::from_inclusive(53, 0, 0, 15, 0)));
    assert_eq!(response.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
}

#[tokio::test]
async fn openai_text_after_tool() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("openai-text-after-tool-raw.sse", "openai").await;
    assert_eq!(response.text(), "The capital of the UK is London.");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage::from_inclusive(78, 0, 0, 9, 0)));
}

#[tokio::test]
async fn compatible_tool_call_at_index_one() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("compat-tool-call-index1.sse", "openrouter").await;
    assert_eq!(response.text(), "Reading it.");
    assert_eq!(response.tool_calls(), call("toolu_sanitized", "read_file", json!({"path": "a.txt"})));
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, None);
}

#[tokio::test]
async fn deepseek_reasoning_content_and_cache_hits() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("deepseek-reasoning-content.chunks.txt", "deepseek").await;
    assert!(response.reasoning().starts_with("We need to count the number of the letter \"r\""));
    assert_eq!(response.reasoning().chars().count(), 606);
    assert_eq!(response.text(), "The word \"strawberry\" contains three \"r\"s.");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage::from_inclusive(18, 0, 0, 219, 205)));
    assert!(matches!(response.message.content[0], ContentPart::Reasoning { .. }), "reasoning comes first");
}

#[tokio::test]
async fn xai_reasoning_outside_completion_tokens() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("xai-reasoning-tool-call.chunks.txt", "xai").await;
    assert_eq!(response.reasoning(), "First, the user is");
    assert_eq!(response.tool_calls(), call("call_55117580", "weather", json!({"location": "San Francisco"})));
    let usage = response.usage.expect("usage");
    assert_eq!((usage.input_tokens, usage.cache_read_input_tokens, usage.non_cached_input_tokens), (291, 290, 1));
    assert_eq!((usage.output_tokens, usage.reasoning_tokens, usage.total_tokens), (222, 196, 513));
}

#[tokio::test]
async fn groq_usage_from_x_groq_envelope() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("groq-tool-call-x-groq-usage.chunks.txt", "groq").await;
    assert_eq!(response.tool_calls(), call("tk85n1k4m", "weather", json!({})));
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(Usage::from_inclusive(210, 0, 0, 15, 0)));
}

#[tokio::test]
async fn openrouter_reasoning_details_are_kept_for_replay() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("openrouter-reasoning-details.sse", "openrouter").await;
    assert_eq!(response.reasoning(), "This is a simple arithmetic question. 2+2 equals 4.");
    assert_eq!(response.text(), "2 + 2 = 4");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage::from_inclusive(43, 0, 0, 36, 13)));
    let ContentPart::Reasoning { provider_metadata: Some(meta), .. } = &response.message.content[0] else {
        panic!("expected reasoning with metadata: {:#?}", response.message.content);
    };
    let details = meta["openai_compatible"]["reasoning_details"].as_array().expect("details");
    assert_eq!(details.len(), 1, "fragments of one entry are merged: {details:#?}");
    assert_eq!(details[0]["text"], json!("This is a simple arithmetic question. 2+2 equals 4."));
    assert!(details[0]["signature"].as_str().is_some_and(|sig| sig.starts_with("Et0BCkgI")));
}

#[tokio::test]
async fn openrouter_midstream_error_ends_the_turn_with_an_error() {
    if support::fixtures().is_none() {
        return;
    }
    let (_, response) = replay("openrouter-midstream-error.sse", "openrouter").await;
    assert_eq!(response.reasoning(), "We need to respond to a greeting. The user");
    assert_eq!(response.text(), "");
    let error = response.error.expect("error");
    assert_eq!(
        (error.kind, error.status, error.message.as_str()),
        (ErrorKind::InvalidRequest, Some(400), "Token limit reached")
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Error));
}

#[tokio::test]
async fn unsupported_parameter_400_is_terminal_invalid_request() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let body =
        std::fs::read(fixtures.join("provider-streams/openai-chat/error-400-unsupported-parameter.json")).unwrap();
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    mock.push(MockResponse::body(400, "application/json", body));
    let route = support::mock_route(&mock, "openai", Some("openai-chat"), None);
    let request = opencode_llm::LlmRequest::new("o3").message(opencode_llm::Message::user("hi"));
    let error = support::client().generate(&route, &request).await.unwrap_err();
    assert_eq!(
        (error.kind, error.retryable, error.code.as_deref()),
        (ErrorKind::InvalidRequest, false, Some("unsupported_parameter"))
    );
    assert!(error.message.starts_with("Unsupported parameter: 'max_tokens' is not supported with this model."));
}

#[tokio::test]
async fn reasoning_effort_switches_to_max_completion_tokens() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let route = support::mock_route(&mock, "openai", Some("openai-chat"), None);
    let mut request = opencode_llm::LlmRequest::new("o3").message(opencode_llm::Message::user("hi"));
    request.generation.max_tokens = Some(1000);
    request.options.set("openai", json!({"reasoning_effort": "high", "prompt_cache_key": "ses_1"}));
    let body = support::client().prepare(&route, &request).unwrap().body_json().unwrap();
    assert_eq!((&body["max_completion_tokens"], &body["reasoning_effort"]), (&json!(1000), &json!("high")));
    assert_eq!((body.get("max_tokens"), &body["prompt_cache_key"]), (None, &json!("ses_1")));

    request.options.set("openai", json!({"reasoning_efort": "high"}));
    let error = support::client().prepare(&route, &request).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidRequest);
    assert!(error.message.contains("reasoning_efort"), "{}", error.message);
}

#[tokio::test]
async fn system_updates_are_native_on_openai_and_wrapped_on_compatible_providers() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let request = opencode_llm::LlmRequest::new("m")
        .system("base")
        .message(opencode_llm::Message::user("hi"))
        .message(opencode_llm::Message::system_update("Today is <Monday>"));
    let openai = support::mock_route(&mock, "openai", Some("openai-chat"), None);
    let body = support::client().prepare(&openai, &request).unwrap().body_json().unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "base"},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "Today is <Monday>"},
        ])
    );
    let groq = support::mock_route(&mock, "groq", None, None);
    let body = support::client().prepare(&groq, &request).unwrap().body_json().unwrap();
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": [
            {"type": "text", "text": "hi"},
            {"type": "text", "text": "<system-update>\nToday is &lt;Monday&gt;\n</system-update>"},
        ]})
    );
}
