//! Bedrock ConverseStream through the whole stack: the AWS event-stream test vectors, the recorded
//! binary captures, the decoded chunk fixtures re-framed as binary, in-band exceptions, and SigV4
//! signing checked on the request the mock received.

use std::path::Path;
use std::path::PathBuf;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::Hmac;
use hmac::Mac;
use opencode_llm::Auth;
use opencode_llm::ContentPart;
use opencode_llm::ErrorKind;
use opencode_llm::FinishReason;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::LlmResponse;
use opencode_llm::Message;
use opencode_llm::Secret;
use opencode_llm::SigV4Credentials;
use opencode_llm::framing::HeaderValue;
use opencode_llm::framing::event_stream::decode_message;
use opencode_llm::protocol::Protocol;
use opencode_llm::protocol::bedrock_converse::BedrockConverse;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;
use sha2::Digest;
use sha2::Sha256;

use super::support;

const PROVIDER: &str = "amazon-bedrock";
const PROTOCOL: Option<&str> = Some("bedrock-converse");
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

fn bedrock_fixture(fixtures: &Path, name: &str) -> PathBuf {
    fixtures.join("provider-streams/bedrock").join(name)
}

use super::support::reasoning;
use super::support::uncached_usage as usage;

fn tool_call(id: &str, name: &str, input: Value) -> ContentPart {
    ContentPart::ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        input,
        provider_executed: false,
        provider_metadata: None,
    }
}

/// Encodes one event-stream frame with string headers.
fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut encoded_headers = Vec::new();
    for (name, value) in headers {
        encoded_headers.push(u8::try_from(name.len()).unwrap());
        encoded_headers.extend_from_slice(name.as_bytes());
        encoded_headers.push(7);
        encoded_headers.extend_from_slice(&u16::try_from(value.len()).unwrap().to_be_bytes());
        encoded_headers.extend_from_slice(value.as_bytes());
    }
    let total = 12 + encoded_headers.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap().to_be_bytes());
    out.extend_from_slice(&u32::try_from(encoded_headers.len()).unwrap().to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&encoded_headers);
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}

/// A ConverseStream event frame, headed as Bedrock heads them.
fn event_frame(event_type: &str, payload: &Value) -> Vec<u8> {
    let headers = [(":event-type", event_type), (":content-type", "application/json"), (":message-type", "event")];
    frame(&headers, payload.to_string().as_bytes())
}

fn exception_frame(exception_type: &str, message: &str) -> Vec<u8> {
    let headers =
        [(":exception-type", exception_type), (":content-type", "application/json"), (":message-type", "exception")];
    frame(&headers, json!({"message": message}).to_string().as_bytes())
}

/// Serves `frames` as one binary body, re-split into small chunks, through the full client.
async fn stream_frames(frames: Vec<Vec<u8>>) -> (Vec<LlmEvent>, LlmResponse) {
    let body: Vec<u8> = frames.concat();
    let response = MockResponse::body(200, EVENT_STREAM, body).split_into_chunks(13);
    let events = support::stream_events(PROVIDER, PROTOCOL, response).await;
    support::assert_terminal_once(&events);
    let folded = LlmResponse::from_events(&events);
    (events, folded)
}

/// Re-frames a `*.decoded.chunks.txt` fixture (`{"<eventType>": payload}` per line) as binary.
fn reframe_decoded_chunks(path: &Path) -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            let (event_type, payload) = value.as_object().unwrap().iter().next().unwrap();
            event_frame(event_type, payload)
        })
        .collect()
}

fn terminal_error(events: &[LlmEvent]) -> &opencode_llm::LlmError {
    match events.last() {
        Some(LlmEvent::Error { error }) => error,
        other => panic!("expected a terminal error, got {other:#?}"),
    }
}

// ---- AWS event-stream vectors -------------------------------------------------------------------

fn vector_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A header of a decoded vector: `type` codes as in the event-stream spec, strings and byte
/// arrays in base64.
fn expected_header(header: &Value) -> (String, HeaderValue) {
    let name = header["name"].as_str().unwrap().to_owned();
    let value = &header["value"];
    let bytes = || BASE64.decode(value.as_str().unwrap()).unwrap();
    let value = match header["type"].as_u64().unwrap() {
        0 => HeaderValue::Bool(true),
        1 => HeaderValue::Bool(false),
        2 => HeaderValue::Byte(i8::try_from(value.as_i64().unwrap()).unwrap()),
        3 => HeaderValue::Int16(i16::try_from(value.as_i64().unwrap()).unwrap()),
        4 => HeaderValue::Int32(i32::try_from(value.as_i64().unwrap()).unwrap()),
        5 => HeaderValue::Int64(value.as_i64().unwrap()),
        6 => HeaderValue::Bytes(bytes()),
        7 => HeaderValue::String(String::from_utf8(bytes()).unwrap()),
        8 => HeaderValue::Timestamp(value.as_i64().unwrap()),
        9 => HeaderValue::Uuid(bytes().try_into().unwrap()),
        other => panic!("unknown header type {other}"),
    };
    (name, value)
}

/// A CRC as the vectors write it (some as signed 32-bit integers).
fn crc(value: &Value) -> u32 {
    value.as_i64().unwrap() as u32
}

#[test]
fn positive_event_stream_vectors_decode_to_their_headers_and_payload() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let root = bedrock_fixture(&fixtures, "eventstream-vectors");
    let names = vector_names(&root.join("encoded/positive"));
    assert_eq!(names, ["all_headers", "empty_message", "int32_header", "payload_no_headers", "payload_one_str_header"]);
    for name in &names {
        let encoded = std::fs::read(root.join("encoded/positive").join(name)).unwrap();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("decoded/positive").join(name)).unwrap()).unwrap();
        let (message, used) = decode_message(&encoded).unwrap_or_else(|err| panic!("{name}: {err}"));

        assert_eq!(used as u64, expected["total_length"].as_u64().unwrap(), "{name}: total length");
        assert_eq!(used, encoded.len(), "{name}: one whole frame");
        let headers: Vec<(String, HeaderValue)> =
            expected["headers"].as_array().unwrap().iter().map(expected_header).collect();
        assert_eq!(message.headers, headers, "{name}: headers");
        let payload = BASE64.decode(expected["payload"].as_str().unwrap()).unwrap();
        assert_eq!(message.payload.to_vec(), payload, "{name}: payload");
        // The vector's own prelude fields describe the bytes we decoded.
        let be = |at: usize| u32::from_be_bytes(encoded[at..at + 4].try_into().unwrap());
        assert_eq!(u64::from(be(4)), expected["headers_length"].as_u64().unwrap(), "{name}: headers length");
        assert_eq!(be(8), crc(&expected["prelude_crc"]), "{name}: prelude crc");
        assert_eq!(be(encoded.len() - 4), crc(&expected["message_crc"]), "{name}: message crc");
    }
}

#[test]
fn negative_event_stream_vectors_are_rejected_with_the_expected_message() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let root = bedrock_fixture(&fixtures, "eventstream-vectors");
    let names = vector_names(&root.join("encoded/negative"));
    assert_eq!(names, ["corrupted_header_len", "corrupted_headers", "corrupted_length", "corrupted_payload"]);
    for name in &names {
        let encoded = std::fs::read(root.join("encoded/negative").join(name)).unwrap();
        let expected = std::fs::read_to_string(root.join("decoded/negative").join(name)).unwrap();
        let error = decode_message(&encoded).expect_err(name);
        assert_eq!(error.to_string(), expected.trim(), "{name}");
    }
}

// ---- Recorded binary captures --------------------------------------------------------------------

#[tokio::test]
async fn text_capture_streams_text_and_usage() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let path = bedrock_fixture(&fixtures, "text.eventstream.bin");
    let (events, response) = support::replay_stream_fixture(&path, PROVIDER, PROTOCOL).await;
    let text = "The capital of France is Paris. Paris is not only the capital city but also the most populous city \
                in France, and it is a major center for culture, commerce, fashion, and international diplomacy. \
                Known for its historical landmarks, such as the Eiffel Tower, the Louvre Museum, and Notre-Dame \
                Cathedral, Paris is often referred to as \"The City of Light\" or \"The City of Love.\"";
    assert_eq!(text.chars().count(), 375);
    assert_eq!(response.message.content, vec![ContentPart::text(text)]);
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(usage(13, 82)));
    assert_eq!(response.provider_metadata, Some(json!({"bedrock": {"latency_ms": 522}}).as_object().unwrap().clone()));
    let deltas = events.iter().filter(|event| matches!(event, LlmEvent::TextDelta { .. })).count();
    // 33 frames: messageStart, 29 contentBlockDelta, contentBlockStop, messageStop, metadata.
    assert_eq!(deltas, 29, "one delta per contentBlockDelta frame");
}

#[tokio::test]
async fn reasoning_capture_keeps_the_signature() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let path = bedrock_fixture(&fixtures, "reasoning-signature.eventstream.bin");
    let (_, response) = support::replay_stream_fixture(&path, PROVIDER, PROTOCOL).await;
    let thinking = "The user has greeted me with a simple \"Hello\". I should respond in a friendly and welcoming \
                    manner. This is a straightforward greeting, so I'll respond warmly and ask how I can help them today.";
    let signature = "Eu0CCkgIBxABGAIqQJDccbDQkr81n7QjZ0Fi43umSvw0YvnGkMPEpaGAa2btYHyWw06KhwckvsnKzpKcxiRJT35meoG4/pdrTUiy2UIS\
                     DPDaEWfOl3+HlRVsCxoMzfiqBp252RMvpmEyIjCbQ97Ac9Epkr5mgxeu1vGtJg+fDWIg0UnpMM8NYknhhvJmsXpYrfquwGL1ZnlBslUq\
                     0gHtbAAPwlWPmiQXU7gDQCDW9IdMVyw42b4f5MrAlpWkPWOJc9H+yYv0TpP/jY72SD1opqwkWnBgkzbi7A2jPmEFzIMQSO1KDXha5ADq\
                     Q3cLYMmVdNTSH9wlM7G7/JJ2/cqowqkwD6/q1AnYzcPte9iC67fY1LYN0NMCOSABFojP1rmkv9YBEulx5Y6eQpeVXBQiIqcGoCmWSump\
                     GBskS1KxGerUmzUB0JmJnTENv4x3fSGSUSEPqMiz6Ebao8sVkb1wCWuZEXWJGtiQLMIm1o471iEYAQ==";
    assert_eq!((thinking.len(), signature.len()), (193, 496));
    assert_eq!(
        response.message.content,
        vec![
            reasoning(thinking, Some(signature), None),
            ContentPart::text("Hello! It's nice to meet you. How can I help you today?"),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(usage(36, 73)));
}

#[tokio::test]
async fn tool_call_capture_accumulates_the_input() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let path = bedrock_fixture(&fixtures, "tool-call.eventstream.bin");
    let (events, response) = support::replay_stream_fixture(&path, PROVIDER, PROTOCOL).await;
    let text = "<thinking> To find the temperature of the capital of France, I need to first determine the capital of \
                France and then get the current temperature in that city. The capital of France is Paris. I will use \
                the \"get_temperature\" tool to find the current temperature in Paris.</thinking>\n";
    assert_eq!(text.chars().count(), 283);
    assert_eq!(
        response.message.content,
        vec![
            ContentPart::text(text),
            tool_call("tooluse_lAG_zP8QRHmSYOwZzzaCqA", "get_temperature", json!({"city": "Paris"})),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(response.usage, Some(usage(471, 91)));
    assert!(events.contains(&LlmEvent::ToolInputStart {
        id: "tooluse_lAG_zP8QRHmSYOwZzzaCqA".into(),
        name: "get_temperature".into()
    }));
    assert!(events.contains(&LlmEvent::ToolInputDelta {
        id: "tooluse_lAG_zP8QRHmSYOwZzzaCqA".into(),
        text: r#"{"city":"Paris"}"#.into()
    }));
}

#[tokio::test]
async fn redacted_reasoning_capture_keeps_each_blob() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let path = bedrock_fixture(&fixtures, "redacted-reasoning.eventstream.bin");
    let (_, response) = support::replay_stream_fixture(&path, PROVIDER, PROTOCOL).await;
    let [first, second, ContentPart::Text { text, .. }] = &response.message.content[..] else {
        panic!("expected two redacted reasoning parts then text: {:#?}", response.message.content)
    };
    for (part, (len, prefix, suffix)) in [first, second]
        .into_iter()
        .zip([(1080, "RXRrRUNrZ0lCeEFC", "cDhuc0JnQg=="), (752, "RXFBRENrZ0lCeEFC", "ZUo4SVlBUT09")])
    {
        let ContentPart::Reasoning { text, signature: None, encrypted: Some(blob), .. } = part else {
            panic!("expected redacted reasoning: {part:#?}")
        };
        assert_eq!((text.as_str(), blob.len()), ("", len));
        assert!(blob.starts_with(prefix) && blob.ends_with(suffix), "{blob}");
    }
    assert_eq!(text.chars().count(), 359);
    assert!(text.starts_with("I notice you've sent what appears to be some kind of command or trigger string"));
    assert!(text.ends_with("What would you like to talk about today?"));
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(usage(92, 253)));
}

/// What a capture folds to encodes back byte-exact: signatures and redacted blobs replay.
#[tokio::test]
async fn folded_reasoning_replays_in_the_next_request() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    for name in ["reasoning-signature.eventstream.bin", "redacted-reasoning.eventstream.bin"] {
        let (_, response) = support::replay_stream_fixture(&bedrock_fixture(&fixtures, name), PROVIDER, PROTOCOL).await;
        let request = LlmRequest::new("m")
            .message(Message::user("Hello"))
            .message(response.message.clone())
            .message(Message::user("Again"));
        let body = BedrockConverse.encode(&request).unwrap();
        let expected: Vec<Value> = response
            .message
            .content
            .iter()
            .map(|part| match part {
                ContentPart::Reasoning { text, signature: Some(signature), .. } => {
                    json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}})
                }
                ContentPart::Reasoning { encrypted: Some(blob), .. } => {
                    json!({"reasoningContent": {"redactedContent": blob}})
                }
                ContentPart::Text { text, .. } => json!({"text": text}),
                other => panic!("unexpected part {other:#?}"),
            })
            .collect();
        assert_eq!(body["messages"][1], json!({"role": "assistant", "content": expected}), "{name}");
    }
}

// ---- Decoded chunk fixtures, re-framed -----------------------------------------------------------

#[tokio::test]
async fn decoded_text_chunks_stream_text() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let frames = reframe_decoded_chunks(&bedrock_fixture(&fixtures, "text.decoded.chunks.txt"));
    let (_, response) = stream_frames(frames).await;
    assert_eq!(
        response.message.content,
        vec![ContentPart::text(
            "Let me count the \"r\"s in \"strawberry\":\n\ns-t-**r**-a-w-b-e-**r**-**r**-y\n\nThere are **3** r's in \"strawberry.\""
        )]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(usage(22, 55)));
}

#[tokio::test]
async fn decoded_reasoning_chunks_keep_the_signature() {
    let Some(fixtures) = support::fixtures() else {
        return;
    };
    let frames = reframe_decoded_chunks(&bedrock_fixture(&fixtures, "reasoning-signature.decoded.chunks.txt"));
    let (_, response) = stream_frames(frames).await;
    let thinking = "Let me count the r's in \"strawberry\":\n\ns-t-r-a-w-b-e-r-r-y\n\nr appears at positions 3, 8, and 9.\n\nSo there are 3 r's.";
    let signature = "Ep0CCkgICxABGAIqQOWPB6/PmA5SW9jC6FvaNq3E+U9ev4FMWcFWuAho+VGLCtazKc5WDjQ5i0MuxsY0o5pKDSVWVKii8KJDusXH4eAS\
                     DK7jyzuk8iij7fJNihoMxHO9haYzt48R36HVIjCb/EmIFrJLIXShqN6DN//T6vZBtO9qj1QhNWJa3CGm8VZoq80S2/Ok4U0aVaIDiZcq\
                     ggHC2b8BHuv8BHZrmsR0wjU1ynansBGMdfjnG+iIv8R5lPpRmYGhSVwNybwP3aQZ6o8Dr48Rau8TJfdsArW+r7bvL7bPs4f5nnlp2vG7\
                     WkMzWwABHK3fdM44zZ1GZQaWyECNWR2GfY6dXiklo94vgpFTPuZ97mfiN3LY6uYyBwL8RkDaGAE=";
    assert_eq!((thinking.len(), signature.len()), (116, 388));
    assert_eq!(
        response.message.content,
        vec![
            reasoning(thinking, Some(signature), None),
            ContentPart::text("There are **3** r's in \"strawberry\":\n\n1. st**r**awbe**r****r**y"),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(response.usage, Some(usage(51, 94)));
}

// ---- In-band failures ----------------------------------------------------------------------------

#[tokio::test]
async fn throttling_exception_mid_stream_is_a_terminal_rate_limit_error() {
    let frames = vec![
        event_frame("messageStart", &json!({"role": "assistant", "p": "abc"})),
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "Hel"}})),
        exception_frame("throttlingException", "Too many tokens, please wait before trying again."),
        // Nothing after the exception may turn the response into a success.
        event_frame("messageStop", &json!({"stopReason": "end_turn"})),
        event_frame("metadata", &json!({"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}})),
    ];
    let (events, response) = stream_frames(frames).await;
    assert!(events.contains(&LlmEvent::TextDelta { id: "text-0".into(), text: "Hel".into() }));
    let error = terminal_error(&events);
    assert_eq!(
        (error.kind, error.retryable, error.code.as_deref(), error.provider.as_deref(), error.message.as_str()),
        (
            ErrorKind::RateLimit,
            true,
            Some("throttlingException"),
            Some(PROVIDER),
            "Too many tokens, please wait before trying again."
        )
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Error));
}

#[tokio::test]
async fn stream_exceptions_are_classified_by_type() {
    let cases = [
        ("internalServerException", "Internal server error", ErrorKind::ProviderInternal, true),
        ("serviceUnavailableException", "Bedrock is unavailable", ErrorKind::ProviderInternal, true),
        ("modelStreamErrorException", "The model stream failed", ErrorKind::ProviderInternal, true),
        ("validationException", "Input is too long for requested model.", ErrorKind::ContextOverflow, false),
        ("validationException", "messages.0.content is blank", ErrorKind::InvalidRequest, false),
    ];
    for (exception_type, message, kind, retryable) in cases {
        let frames =
            vec![event_frame("messageStart", &json!({"role": "assistant"})), exception_frame(exception_type, message)];
        let (events, _) = stream_frames(frames).await;
        let error = terminal_error(&events);
        assert_eq!(
            (error.kind, error.retryable, error.message.as_str()),
            (kind, retryable, message),
            "{exception_type}"
        );
    }
}

#[tokio::test]
async fn finish_is_flushed_when_metadata_never_arrives() {
    let frames = vec![
        event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}})),
        event_frame("contentBlockStop", &json!({"contentBlockIndex": 0})),
        event_frame("messageStop", &json!({"stopReason": "max_tokens"})),
    ];
    let (_, response) = stream_frames(frames).await;
    assert_eq!(
        (response.text(), response.finish_reason, response.usage),
        ("Hi".to_owned(), Some(FinishReason::Length), None)
    );
}

#[tokio::test]
async fn stream_ending_before_message_stop_is_an_error() {
    let frames = vec![event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}))];
    let (events, _) = stream_frames(frames).await;
    assert_eq!(terminal_error(&events).kind, ErrorKind::Transport);
}

// ---- SigV4 ------------------------------------------------------------------------------------------

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn hmac_sha256(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The route signs with SigV4; the signature on the request the mock received verifies against
/// the headers and body bytes that actually arrived.
#[tokio::test]
async fn sigv4_signs_the_request_that_is_sent() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::body(
        200,
        EVENT_STREAM,
        [
            event_frame("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": "Hello"}})),
            event_frame("messageStop", &json!({"stopReason": "end_turn"})),
            event_frame("metadata", &json!({"usage": {"inputTokens": 5, "outputTokens": 1, "totalTokens": 6}})),
        ]
        .concat(),
    ));
    let credentials = SigV4Credentials {
        access_key_id: Secret::Value("AKID".to_owned()),
        secret_access_key: Secret::Value("SECRETKEY".to_owned()),
        session_token: None,
        region: "us-east-1".to_owned(),
        service: "bedrock".to_owned(),
    };
    let route = support::mock_route(&mock, PROVIDER, PROTOCOL, None).with_auth(Auth::AwsSigV4(credentials));
    let request = LlmRequest::new("us.amazon.nova-micro-v1:0").message(Message::user("hi"));
    let response = support::client().generate(&route, &request).await.unwrap();
    assert_eq!((response.text(), response.usage), ("Hello".to_owned(), Some(usage(5, 1))));

    let sent = &mock.requests()[0];
    assert_eq!(sent.path_and_query, "/model/us.amazon.nova-micro-v1%3A0/converse-stream");
    let amz_date = sent.header("x-amz-date").unwrap();
    assert!(
        amz_date.len() == 16 && amz_date.as_bytes()[8] == b'T' && amz_date.ends_with('Z'),
        "x-amz-date `{amz_date}`"
    );
    let authorization = sent.header("authorization").unwrap();
    let scope = format!("{}/us-east-1/bedrock/aws4_request", &amz_date[..8]);
    let prefix = format!("AWS4-HMAC-SHA256 Credential=AKID/{scope}, SignedHeaders=");
    assert!(authorization.starts_with(&prefix), "{authorization}");
    let (signed_headers, signature) =
        authorization[prefix.len()..].split_once(", Signature=").expect("signed headers and signature");
    for required in ["content-type", "host", "x-amz-date"] {
        assert!(signed_headers.split(';').any(|name| name == required), "{required} is not signed: {signed_headers}");
    }

    // Recompute the signature from what arrived (AWS "Create a signed AWS API request"): the
    // canonical URI of a non-S3 service is the path encoded once more.
    let canonical_headers: String =
        signed_headers.split(';').map(|name| format!("{name}:{}\n", sent.header(name).unwrap().trim())).collect();
    let canonical_request = format!(
        "POST\n/model/us.amazon.nova-micro-v1%253A0/converse-stream\n\n{canonical_headers}\n{signed_headers}\n{}",
        hex(&Sha256::digest(&sent.body))
    );
    let string_to_sign =
        format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex(&Sha256::digest(canonical_request.as_bytes())));
    let mut key = hmac_sha256(b"AWS4SECRETKEY", &amz_date[..8]);
    for part in ["us-east-1", "bedrock", "aws4_request"] {
        key = hmac_sha256(&key, part);
    }
    assert_eq!(signature, hex(&hmac_sha256(&key, &string_to_sign)));
}
