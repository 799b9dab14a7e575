//! Anthropic Messages stream fixtures (`provider-streams/anthropic/`) replayed through the whole
//! client, checked against the outcomes listed in the fixtures README, plus a scripted mid-stream
//! `error` event (no recorded one exists).

use std::path::PathBuf;

use opencode_llm::ContentPart;
use opencode_llm::ErrorKind;
use opencode_llm::FinishReason;
use opencode_llm::LlmEvent;
use opencode_llm::LlmResponse;
use opencode_llm::ToolCall;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::support;

/// The 332-character signature of `thinking-signature.chunks.txt`, as sent.
const CLEAR_THINKING_SIGNATURE: &str = "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB";

/// The 504-character signature of `thinking-raw.sse`, as sent.
const RAW_THINKING_SIGNATURE: &str = "EvMCCkYICxgCKkCHP2cSuEdcJK/0rFwqES/ecn+VurRpNTwI4XNyM0vnNfGsc9OmE8YYHauwBZ/uaRpmlEn2I4/kszHlcpptO82JEgyRMSbPkJYaegxYF3AaDHZbSm9EzZ6CM+YtliIw3iNVP/ilYrfoneo8S2+ad/5xSC62nKbk6joLtKmqXgXwYFJRpjIUjM2V7EGReOPRKtoBKfNHVmdNf7SeMhHalX/ObSeJ1G/NjDyGQAsDjyHGd7uY1r5gAIn3Cpdv5r+gHYJmWT+w2uiKZsBDRoSf4O3Km0l752EhPD4InEhqpCKyqhbUZ3dt5+JVKQHk2iyTBhQMB/XBYgZTstIpRqQRXU5ypcrydgnqj3mD1G9C7YC0ZTCNvFluAx0OL8q+cQwufgfqKquLEf2+XMYzhx9jYkVFEpnf/s1nx6gNBATKfF3Dmrs2r4tWu2QJB+FjlRuDp/8dxUxgJbmyhGxb7XsYeb1vgb7wwzDvP/UhjfQYAQ==";

fn fixture(name: &str) -> Option<PathBuf> {
    let fixtures = support::fixtures()?;
    Some(fixtures.join("provider-streams/anthropic").join(name))
}

async fn replay(name: &str) -> Option<(Vec<LlmEvent>, LlmResponse)> {
    let path = fixture(name)?;
    Some(support::replay_stream_fixture(&path, "anthropic", None).await)
}

use super::support::reasoning;
use super::support::uncached_usage;

/// Every `data` of one content-block type in a raw SSE fixture, read independently of the decoder.
fn redacted_data(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter(|event| event["content_block"]["type"] == "redacted_thinking")
        .map(|event| event["content_block"]["data"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn text_stream_with_usage_split_across_start_and_delta() {
    let Some((_, response)) = replay("text.chunks.txt").await else {
        return;
    };
    let text =
        "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?";
    assert_eq!(response.message.content, vec![ContentPart::text(text)]);
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(uncached_usage(12, 30)));
    assert_eq!(response.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
    assert_eq!(response.response_id.as_deref(), Some("msg_01QC4g3HwBThD4BaNtBckFDJ"));
    assert_eq!(response.error, None);
}

#[tokio::test]
async fn thinking_keeps_its_signature_byte_exact() {
    let Some((events, response)) = replay("thinking-signature.chunks.txt").await else {
        return;
    };
    let thinking = "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185";
    assert_eq!(thinking.chars().count(), 75);
    assert_eq!(CLEAR_THINKING_SIGNATURE.len(), 332);
    assert_eq!(
        response.message.content,
        vec![reasoning(thinking, Some(CLEAR_THINKING_SIGNATURE), None), ContentPart::text("925 ÷ 5 = 185")]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(uncached_usage(69, 53)));
    // The reasoning block closes (with its signature) before the text block opens.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ReasoningEnd { .. } => Some("reasoning-end"),
            LlmEvent::TextStart { .. } => Some("text-start"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["reasoning-end", "text-start"]);
}

#[tokio::test]
async fn raw_thinking_sse_with_padded_data_lines() {
    let Some((_, response)) = replay("thinking-raw.sse").await else {
        return;
    };
    let [ContentPart::Reasoning { text: thinking, signature, encrypted: None, .. }, ContentPart::Text { text, .. }] =
        response.message.content.as_slice()
    else {
        panic!("expected thinking then text, got {:#?}", response.message.content);
    };
    assert!(thinking.starts_with("This is a straightforward question about pedestrian safety."));
    assert_eq!(thinking.chars().count(), 202);
    assert_eq!(signature.as_deref(), Some(RAW_THINKING_SIGNATURE));
    assert!(text.starts_with("Here are the basic steps for safely crossing the street:"));
    assert_eq!(text.chars().count(), 1021);
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(uncached_usage(43, 282)));
    assert_eq!(response.model.as_deref(), Some("claude-sonnet-4-20250514"));
}

#[tokio::test]
async fn redacted_thinking_data_is_kept_verbatim() {
    let Some(path) = fixture("redacted-thinking-raw.sse") else {
        return;
    };
    let (_, response) = support::replay_stream_fixture(&path, "anthropic", None).await;
    let data = redacted_data(&path);
    assert_eq!(data.iter().map(String::len).collect::<Vec<_>>(), [744, 296]);
    let [first, second, ContentPart::Text { text, .. }] = response.message.content.as_slice() else {
        panic!("expected two redacted blocks then text, got {:#?}", response.message.content);
    };
    assert_eq!(first, &reasoning("", None, Some(&data[0])));
    assert_eq!(second, &reasoning("", None, Some(&data[1])));
    assert!(text.starts_with("I notice that you've sent what appears to be some kind of test string"));
    assert_eq!(text.chars().count(), 359);
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(uncached_usage(92, 189)));
}

#[tokio::test]
async fn tool_use_input_is_assembled_from_json_deltas() {
    let Some((events, response)) = replay("tool-use-args.chunks.txt").await else {
        return;
    };
    assert_eq!(
        response.tool_calls(),
        vec![ToolCall {
            id: "toolu_01KFbKqPYSuAKujiL6mTfzYA".into(),
            name: "json".into(),
            input: json!({"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}),
        }]
    );
    assert_eq!(response.text(), "");
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(uncached_usage(849, 47)));
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ToolInputDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, r#"{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}"#);
}

#[tokio::test]
async fn tool_use_with_only_empty_input_deltas_gets_an_empty_object() {
    let Some((_, response)) = replay("text-then-tool-no-args.chunks.txt").await else {
        return;
    };
    assert_eq!(response.text(), "I'll update the issue list for you.");
    assert_eq!(
        response.tool_calls(),
        vec![ToolCall {
            id: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP".into(),
            name: "updateIssueList".into(),
            input: json!({})
        }]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(uncached_usage(565, 48)));
}

#[tokio::test]
async fn refusal_without_content_is_a_content_filter_finish() {
    let Some((_, response)) = replay("refusal.chunks.txt").await else {
        return;
    };
    assert_eq!(response.message.content, vec![]);
    assert_eq!(response.finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(response.usage, Some(uncached_usage(18, 5)));
    assert_eq!(response.error, None);
    let details = response.provider_metadata.as_ref().map(|meta| meta["anthropic"]["stop_details"]["category"].clone());
    assert_eq!(details, Some(json!("cyber")));
}

#[tokio::test]
async fn later_message_delta_input_tokens_win() {
    let Some((_, response)) = replay("message-delta-input-tokens.chunks.txt").await else {
        return;
    };
    assert_eq!(response.text(), "pong");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(uncached_usage(61, 2)));
}

#[tokio::test]
async fn mid_stream_overloaded_error_is_a_retryable_terminal_error() {
    let body = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-test\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    let response = MockResponse::body(200, "text/event-stream", body);
    let events = support::stream_events("anthropic", None, response).await;
    support::assert_terminal_once(&events);
    let folded = LlmResponse::from_events(&events);
    assert_eq!(folded.text(), "Hel");
    let Some(LlmEvent::Error { error }) = events.last() else { panic!("expected an error terminal, got {events:#?}") };
    assert_eq!(
        (error.kind, error.retryable, error.code.as_deref(), error.provider.as_deref(), error.message.as_str()),
        (ErrorKind::ProviderInternal, true, Some("overloaded_error"), Some("anthropic"), "Overloaded")
    );
}
