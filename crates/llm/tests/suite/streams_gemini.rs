//! Recorded Gemini streams (`provider-streams/gemini/`) replayed through the whole client, checked
//! against the outcomes listed in the fixtures README.

use std::path::Path;

use opencode_llm::ContentPart;
use opencode_llm::ErrorKind;
use opencode_llm::FinishReason;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_llm::Message;
use opencode_llm::ToolCall;
use opencode_llm::Usage;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::support;

async fn replay(fixtures: &Path, name: &str) -> (Vec<LlmEvent>, LlmResponse) {
    support::replay_stream_fixture(&fixtures.join("provider-streams/gemini").join(name), "google", None).await
}

/// The `google.thought_signature` metadata of a part.
fn signature(metadata: Option<&opencode_llm::ProviderMetadata>) -> Option<&str> {
    metadata?.get("google")?.get("thought_signature")?.as_str()
}

/// The `thoughtSignature` fields of a fixture, in order of appearance.
fn recorded_signatures(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.strip_prefix("data: ").unwrap_or(line).trim();
        let Ok(chunk) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for part in chunk["candidates"][0]["content"]["parts"].as_array().into_iter().flatten() {
            if let Some(signature) = part["thoughtSignature"].as_str() {
                out.push(signature.to_owned());
            }
        }
    }
    out
}

#[tokio::test]
async fn text_raw() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let (_, response) = replay(&fixtures, "text-raw.sse").await;
    assert_eq!(response.error, None);
    assert_eq!(response.text(), "The capital of France is Paris.\n");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(Usage::from_inclusive(13, 0, 0, 8, 0)));
    assert_eq!(response.usage.as_ref().map(|usage| usage.total_tokens), Some(21));
    assert_eq!(response.model.as_deref(), Some("gemini-2.0-flash-exp"));
    assert_eq!(response.response_id.as_deref(), Some("w1peaMz6INOvnvgPgYfPiQY"));
}

#[tokio::test]
async fn thought_parts_raw() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let (events, response) = replay(&fixtures, "thought-parts-raw.sse").await;
    assert_eq!(response.error, None);
    let reasoning = response.reasoning();
    assert_eq!(reasoning.chars().count(), 1575);
    assert!(reasoning.starts_with("**Clarifying User Goals**"));
    let text = response.text();
    assert_eq!(text.chars().count(), 1938);
    assert!(text.starts_with("This is a great question! Safely crossing the street"));
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.unwrap();
    assert_eq!(usage, Usage::from_inclusive(34, 0, 0, 469 + 787, 787));
    assert_eq!(usage.total_tokens, 1290);
    assert_eq!(response.model.as_deref(), Some("gemini-2.5-pro"));

    // One reasoning part then one text part; the only signature arrived on the answer's first
    // part and stays with the text.
    let [ContentPart::Reasoning { provider_metadata: reasoning_meta, .. }, ContentPart::Text { provider_metadata, .. }] =
        response.message.content.as_slice()
    else {
        panic!("expected reasoning then text, got {:#?}", response.message.content);
    };
    assert_eq!(*reasoning_meta, None);
    let path = fixtures.join("provider-streams/gemini/thought-parts-raw.sse");
    assert_eq!(signature(provider_metadata.as_ref()), Some(recorded_signatures(&path)[0].as_str()));
    // Reasoning closes before the text opens.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ReasoningStart { .. } => Some("reasoning-start"),
            LlmEvent::ReasoningEnd { .. } => Some("reasoning-end"),
            LlmEvent::TextStart { .. } => Some("text-start"),
            LlmEvent::TextEnd { .. } => Some("text-end"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["reasoning-start", "reasoning-end", "text-start", "text-end"]);
}

#[tokio::test]
async fn function_call_thought_signature_raw() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let name = "function-call-thought-signature-raw.sse";
    let (_, response) = replay(&fixtures, name).await;
    assert_eq!(response.error, None);
    assert_eq!(
        response.tool_calls(),
        vec![ToolCall { id: "call_QUVVadTSNJ6_qtsPvN7J8Q0_0".into(), name: "get_country".into(), input: json!({}) }]
    );
    // STOP with a call is a tool-call finish.
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    let usage = response.usage.clone().unwrap();
    assert_eq!(usage, Usage::from_inclusive(29, 0, 0, 10 + 202, 202));
    assert_eq!(usage.total_tokens, 241);
    assert_eq!(response.model.as_deref(), Some("gemini-3-pro-preview"));

    // The signature is on the call part, and is echoed back on that part.
    let expected = recorded_signatures(&fixtures.join("provider-streams/gemini").join(name));
    let [ContentPart::ToolCall { provider_metadata, .. }] = response.message.content.as_slice() else {
        panic!("expected one tool call, got {:#?}", response.message.content);
    };
    assert_eq!(signature(provider_metadata.as_ref()), Some(expected[0].as_str()));
    let protocol = opencode_llm::protocol::by_id("gemini").unwrap();
    let body = protocol.encode(&LlmRequest::new("gemini-3-pro-preview").message(response.message)).unwrap();
    assert_eq!(
        body["contents"],
        json!([{"role": "model", "parts": [
            {"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": expected[0]},
        ]}])
    );
}

#[tokio::test]
async fn text_thought_signature_on_an_empty_final_part() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let name = "text-thought-signature.chunks.txt";
    let (_, response) = replay(&fixtures, name).await;
    assert_eq!(response.error, None);
    let expected = recorded_signatures(&fixtures.join("provider-streams/gemini").join(name));
    assert_eq!(expected.len(), 1);
    assert_eq!(
        response.message.content,
        vec![ContentPart::Text {
            text: "There are **3** \"r\"s in strawberry.\n\nst**r**awbe**rr**y".into(),
            cache: None,
            provider_metadata: Some(json!({"google": {"thought_signature": expected[0]}}).as_object().unwrap().clone()),
        }]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.unwrap();
    assert_eq!(usage, Usage::from_inclusive(9, 0, 0, 23 + 185, 185));
    assert_eq!(usage.total_tokens, 217);
}

#[tokio::test]
async fn function_call_chunks() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let name = "function-call.chunks.txt";
    let (_, response) = replay(&fixtures, name).await;
    assert_eq!(response.error, None);
    assert_eq!(
        response.tool_calls(),
        vec![ToolCall {
            id: "call_b36LacjwM668nsEP2tbsgQQ_0".into(),
            name: "weather".into(),
            input: json!({"location": "San Francisco"}),
        }]
    );
    // The trailing unsigned empty text part adds nothing.
    assert_eq!(response.message.content.len(), 1);
    let expected = recorded_signatures(&fixtures.join("provider-streams/gemini").join(name));
    let ContentPart::ToolCall { provider_metadata, .. } = &response.message.content[0] else { unreachable!() };
    assert_eq!(signature(provider_metadata.as_ref()), Some(expected[0].as_str()));
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(Usage::from_inclusive(29, 0, 0, 15 + 45, 45)));
}

#[tokio::test]
async fn function_call_partial_args() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let name = "function-call-partial-args.chunks.txt";
    let (events, response) = replay(&fixtures, name).await;
    assert_eq!(response.error, None);
    assert_eq!(
        response.tool_calls(),
        vec![
            ToolCall {
                id: "call_dqHOab6xGLzWodAPkPuViA4_0".into(),
                name: "getWeather".into(),
                input: json!({"location": "Boston"}),
            },
            ToolCall {
                id: "call_dqHOab6xGLzWodAPkPuViA4_1".into(),
                name: "getWeather".into(),
                input: json!({"location": "San Francisco"}),
            },
        ]
    );
    // The signature of the first chunk stays with the first call only.
    let expected = recorded_signatures(&fixtures.join("provider-streams/gemini").join(name));
    let signatures: Vec<Option<&str>> = response
        .message
        .content
        .iter()
        .map(|part| match part {
            ContentPart::ToolCall { provider_metadata, .. } => signature(provider_metadata.as_ref()),
            _ => panic!("unexpected part {part:?}"),
        })
        .collect();
    assert_eq!(signatures, [Some(expected[0].as_str()), None]);
    // Each streamed call opens an input block that the call closes.
    let starts = events.iter().filter(|event| matches!(event, LlmEvent::ToolInputStart { .. })).count();
    let ends = events.iter().filter(|event| matches!(event, LlmEvent::ToolInputEnd { .. })).count();
    assert_eq!((starts, ends), (2, 2));
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    let usage = response.usage.unwrap();
    assert_eq!(usage, Usage::from_inclusive(26, 0, 0, 23 + 132, 132));
    assert_eq!(usage.total_tokens, 181);
    assert_eq!(response.model.as_deref(), Some("gemini-3.1-pro-preview"));
}

#[tokio::test]
async fn error_429_retry_info() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let body = std::fs::read(fixtures.join("provider-streams/gemini/error-429-retry-info.json")).unwrap();
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::body(429, "application/json", body));
    let route = support::mock_route(&mock, "google", None, None);
    let request = LlmRequest::new("gemini-2.5-flash").message(Message::user("hi"));
    let error = support::client().generate(&route, &request).await.unwrap_err();
    assert_eq!(error.kind, ErrorKind::RateLimit);
    assert!(error.retryable);
    assert_eq!(error.status, Some(429));
    assert_eq!(error.retry_after_ms, Some(34_400));
    assert_eq!(error.message, "You exceeded your current quota, please check your plan.");
    assert_eq!(mock.requests().len(), 1);
}
