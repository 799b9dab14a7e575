//! The client against real servers: ours (in-process, the session runtime over a mock provider) and
//! OpenCode 1.18.34's own (`opencode serve` from npm, offline), doing the same things.

mod opencode;
mod ours;

use opencode_client::Client;
use opencode_client::Event;
use opencode_client::EventStream;
use opencode_client::Message;
use opencode_client::PartKind;
use opencode_client::StreamItem;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use serde_json::json;

const GUARD: std::time::Duration = std::time::Duration::from_secs(30);

/// The next event of the stream (skipping connection notices).
pub async fn next_event(events: &mut EventStream) -> Event {
    loop {
        match tokio::time::timeout(GUARD, events.next()).await.expect("an event within 30 s") {
            Some(StreamItem::Event { event, .. }) => return event,
            Some(_) => {}
            None => panic!("the event stream ended"),
        }
    }
}

/// A mock whose every answer is `answer`, after one `bash ls` tool call for the first request that
/// offers tools.
pub async fn mock_with_tool_call(answer: &'static str) -> MockProvider {
    let mock = MockProvider::start().await.unwrap();
    let called = std::sync::atomic::AtomicBool::new(false);
    mock.respond_with(move |request| {
        let body = request.body_json().unwrap_or_default();
        let offers_bash =
            body["tools"].as_array().is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == "bash"));
        let last_is_tool = body["messages"].as_array().and_then(|m| m.last()).is_some_and(|m| m["role"] == "tool");
        if offers_bash && !last_is_tool && !called.swap(true, std::sync::atomic::Ordering::SeqCst) {
            MockResponse::chat_tool_calls(
                &[("call_1", "bash", json!({"command": "ls", "description": "List files"}))],
                None,
            )
        } else {
            MockResponse::chat_text(answer)
        }
    });
    mock
}

/// One prompt with a tool call, followed on the event stream into a transcript kept with
/// `opencode_client::apply`; returns it beside the transcript the server reports afterwards.
pub async fn prompt_and_follow(client: &Client, answer: &str) -> (Vec<Message>, Vec<Message>) {
    let mut events = client.events();
    assert_eq!(next_event(&mut events).await, Event::Connected);
    let session = client.create_session(Some("client test")).await.unwrap();
    let mut followed = client.messages(&session.id).await.unwrap();
    client.prompt_async(&session.id, "list the files here").await.unwrap();
    loop {
        let event = next_event(&mut events).await;
        if event.session_id() != Some(session.id.as_str()) {
            continue;
        }
        opencode_client::apply(&mut followed, &event);
        if event.is_idle(&session.id) {
            break;
        }
    }
    let fetched = client.messages(&session.id).await.unwrap();
    let answered =
        fetched.iter().flat_map(|m| &m.parts).any(|p| matches!(&p.kind, PartKind::Text { text, .. } if text == answer));
    assert!(answered, "the answer is in the transcript: {fetched:#?}");
    (followed, fetched)
}

/// What a transcript shows: role, texts and tool calls with their status and output.
pub fn shown(messages: &[Message]) -> Vec<String> {
    let mut lines = Vec::new();
    for message in messages {
        for part in &message.parts {
            match &part.kind {
                PartKind::Text { text, .. } => lines.push(format!("{:?}: {text}", message.info.role)),
                PartKind::Tool { tool, state, .. } => {
                    let output = state.output.as_deref().unwrap_or("").lines().count();
                    lines.push(format!("tool {tool} {:?} ({output} lines)", state.status));
                }
                _ => {}
            }
        }
    }
    lines
}
