//! Recorded OpenAI Responses streams (`provider-streams/openai-responses/`, expected outcomes from
//! its README) served over real HTTP through the whole client with the default `openai` route.

use std::path::PathBuf;

use opencode_llm::ContentPart;
use opencode_llm::ErrorKind;
use opencode_llm::FinishReason;
use opencode_llm::LlmError;
use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_llm::Message;
use opencode_llm::ToolCall;
use opencode_llm::Usage;
use opencode_llm::protocol::Protocol;
use opencode_llm::protocol::openai_responses::OpenAiResponses;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::support;

fn fixture(fixtures: &std::path::Path, name: &str) -> PathBuf {
    fixtures.join("provider-streams/openai-responses").join(name)
}

async fn replay(name: &str) -> Option<LlmResponse> {
    let fixtures = support::fixtures()?;
    let (_, response) = support::replay_stream_fixture(&fixture(&fixtures, name), "openai", None).await;
    Some(response)
}

fn call(id: &str, name: &str, input: Value) -> Vec<ToolCall> {
    vec![ToolCall { id: id.to_owned(), name: name.to_owned(), input }]
}

/// The one reasoning part of a response: (text, encrypted content, `openai.item_id`).
fn reasoning_part(response: &LlmResponse) -> (String, Option<String>, Option<String>) {
    let parts: Vec<_> = response
        .message
        .content
        .iter()
        .filter_map(|part| match part {
            ContentPart::Reasoning { text, encrypted, provider_metadata, .. } => {
                let item_id = provider_metadata
                    .as_ref()
                    .and_then(|meta| meta.get("openai"))
                    .and_then(|openai| openai.get("item_id"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                Some((text.clone(), encrypted.clone(), item_id))
            }
            _ => None,
        })
        .collect();
    assert_eq!(parts.len(), 1, "expected exactly one reasoning part in {:#?}", response.message);
    parts.into_iter().next().unwrap()
}

#[tokio::test]
async fn function_call_raw_sse_without_sequence_numbers() {
    let Some(response) = replay("function-call-raw.sse").await else {
        return;
    };
    assert_eq!(response.error, None);
    assert_eq!(response.text(), "");
    assert_eq!(
        response.tool_calls(),
        call("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", json!({"country": "France"}))
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(Usage::from_inclusive(255, 0, 0, 16, 0)));
    assert_eq!(response.response_id.as_deref(), Some("resp_67e554a155508191900ee113293c4c830794405d35281ae2"));
    assert_eq!(response.model.as_deref(), Some("gpt-4o-2024-08-06"));
}

#[tokio::test]
async fn text_after_function_call_raw_sse() {
    let Some(response) = replay("text-after-function-call-raw.sse").await else {
        return;
    };
    assert_eq!(response.error, None);
    assert_eq!(response.text(), "The capital of France is Paris.");
    assert_eq!(response.tool_calls(), vec![]);
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage::from_inclusive(278, 0, 0, 9, 0)));
}

#[tokio::test]
async fn encrypted_reasoning_then_function_call_keeps_the_final_encrypted_content() {
    let Some(response) = replay("reasoning-encrypted-function-call-raw.sse").await else {
        return;
    };
    assert_eq!(response.error, None);
    assert_eq!(response.tool_calls(), call("call_CWXgs68YprAjp6t0371hiPOI", "final_result", json!({"result": 6666})));
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(Usage::from_inclusive(53, 0, 0, 469, 448)));

    let (text, encrypted, item_id) = reasoning_part(&response);
    assert_eq!(text, "");
    assert_eq!(item_id.as_deref(), Some("rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"));
    // `output_item.added` and `output_item.done` carry different blobs; the finished one wins.
    let encrypted = encrypted.unwrap();
    assert!(encrypted.starts_with("gAAAAABoyXvxI6"), "kept {}", &encrypted[..20]);
    assert_eq!(encrypted.len(), 3896);
    // Reasoning precedes the call, as in the stream.
    assert!(matches!(
        response.message.content.as_slice(),
        [ContentPart::Reasoning { .. }, ContentPart::ToolCall { .. }]
    ));
}

#[tokio::test]
async fn azure_function_call_with_content_filters() {
    let Some(response) = replay("azure-function-call.chunks.txt").await else {
        return;
    };
    assert_eq!(response.error, None);
    assert_eq!(
        response.tool_calls(),
        call("call_H5DxLSFnsGhiROnUiDHmgyc8", "weather", json!({"location": "San Francisco"}))
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(Usage::from_inclusive(45, 0, 0, 24, 0)));
    assert_eq!(response.model.as_deref(), Some("gpt-5.1"));
}

#[tokio::test]
async fn copilot_rotating_item_ids_are_correlated_by_output_index() {
    let Some(response) = replay("copilot-item-id-rotation.chunks.txt").await else {
        return;
    };
    assert_eq!(response.error, None);
    assert_eq!(
        response.text(),
        "There are **3** letter **“r”**s in **“strawberry.”**\n\nBreakdown: **s t r a w b e r r y**  \nYou can see **r** at positions **3, 8, and 9**."
    );
    assert_eq!(response.text().chars().count(), 138);
    // One text part, not one per rotated id.
    let texts = response.message.content.iter().filter(|part| matches!(part, ContentPart::Text { .. })).count();
    assert_eq!(texts, 1);
    let (reasoning, encrypted, _) = reasoning_part(&response);
    assert_eq!(reasoning, "**Counting character occurrences**");
    assert_eq!(encrypted, None);
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage::from_inclusive(19, 0, 0, 105, 44)));
    assert_eq!(response.model.as_deref(), Some("gpt-5.3-codex"));
}

#[tokio::test]
async fn midstream_insufficient_quota_is_a_terminal_quota_error() {
    let Some(response) = replay("midstream-error-insufficient-quota.chunks.txt").await else {
        return;
    };
    assert_eq!(response.text(), "");
    assert_eq!(response.message.content, vec![]);
    assert_eq!(response.finish_reason, Some(FinishReason::Error));
    let mut expected = LlmError::new(
        ErrorKind::QuotaExceeded,
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
    )
    .with_code("insufficient_quota")
    .with_provider("openai");
    expected.retryable = false;
    assert_eq!(response.error, Some(expected));
}

#[tokio::test]
async fn http_400_unsupported_temperature_is_a_typed_invalid_request() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let body = std::fs::read(fixture(&fixtures, "error-400-unsupported-temperature.json")).unwrap();
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::body(400, "application/json", body));
    let route = support::mock_route(&mock, "openai", None, None);
    let mut request = LlmRequest::new("o3-mini").message(Message::user("hi"));
    request.generation.temperature = Some(0.5);
    let error = support::client().stream(&route, &request).await.unwrap_err();
    let mut expected =
        LlmError::invalid_request("Unsupported parameter: 'temperature' is not supported with this model.")
            .with_status(400)
            .with_code("invalid_request_error")
            .with_provider("openai");
    expected.retryable = false;
    assert_eq!(error, expected);
    assert_eq!(mock.requests()[0].body_json().unwrap()["temperature"], json!(0.5));
}

/// The fixture holds four consecutive responses of one tool loop; each is served on its own.
#[tokio::test]
async fn encrypted_summary_tool_loop_streams_and_replays() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let text = std::fs::read_to_string(fixture(&fixtures, "reasoning-encrypted-summary.chunks.txt")).unwrap();
    let mut streams: Vec<Vec<&str>> = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        if line.contains(r#""type":"response.created""#) {
            streams.push(Vec::new());
        }
        streams.last_mut().expect("the fixture starts with response.created").push(line);
    }
    assert_eq!(streams.len(), 4);
    let mut responses = Vec::new();
    for lines in &streams {
        let events = support::stream_events("openai", None, MockResponse::sse(lines).split_into_chunks(97)).await;
        support::assert_terminal_once(&events);
        let response = LlmResponse::from_events(&events);
        assert_eq!(response.error, None);
        responses.push(response);
    }

    let calls: Vec<_> = responses.iter().map(LlmResponse::tool_calls).collect();
    assert_eq!(
        calls,
        vec![
            call("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", json!({"a": 12, "b": 7, "op": "add"})),
            call("call_Q6pW65MUgW9vF59BmItYGos3", "calculator", json!({"a": 19, "b": 3, "op": "multiply"})),
            call("call_Zl5vIMnD7dVAjgU6FkhmiCZh", "calculator", json!({"a": 57, "b": 10, "op": "multiply"})),
            vec![],
        ]
    );
    let usages: Vec<_> = responses.iter().map(|response| response.usage.clone()).collect();
    assert_eq!(
        usages,
        vec![
            Some(Usage::from_inclusive(134, 0, 0, 28, 0)),
            Some(Usage::from_inclusive(221, 0, 0, 26, 0)),
            Some(Usage::from_inclusive(260, 0, 0, 26, 0)),
            Some(Usage::from_inclusive(299, 0, 0, 12, 0)),
        ]
    );
    let finishes: Vec<_> = responses.iter().map(|response| response.finish_reason).collect();
    let tool_calls = Some(FinishReason::ToolCalls);
    assert_eq!(finishes, vec![tool_calls, tool_calls, tool_calls, Some(FinishReason::Stop)]);
    assert_eq!(responses[3].text(), "The final result is **570**.");

    let summary = "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then multiply the result by 3, and finally multiply that by 10, reporting the final product.";
    let (reasoning, encrypted, item_id) = reasoning_part(&responses[0]);
    assert_eq!(reasoning, summary);
    assert_eq!(reasoning.chars().count(), 163);
    assert_eq!(item_id.as_deref(), Some("rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9"));
    let encrypted = encrypted.unwrap();
    assert!(encrypted.starts_with("gAAAAABpPDIVOK"), "kept {}", &encrypted[..20]);
    assert_eq!(encrypted.len(), 1060);

    // The folded assistant turn replays statelessly as reasoning (summary + encrypted content,
    // no id) followed by the call, exactly as the Responses API expects with `store: false`.
    let mut next = LlmRequest::new("gpt-5.1-codex-max").message(Message::user("Compute (12+7)*3*10."));
    next.messages.push(responses[0].message.clone());
    next.options.set("openai", json!({"store": false, "include": ["reasoning.encrypted_content"]}));
    let body = OpenAiResponses.encode(&next).unwrap();
    assert_eq!(
        body["input"].as_array().unwrap()[1..],
        [
            json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}], "encrypted_content": encrypted}),
            json!({"type": "function_call", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "name": "calculator", "arguments": "{\"a\":12,\"b\":7,\"op\":\"add\"}"}),
        ]
    );
}
