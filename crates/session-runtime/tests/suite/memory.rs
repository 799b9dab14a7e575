//! Memory bounds leave what a provider sees unchanged: a session whose projected history was
//! evicted (by the budget, between turns or inside a tool loop, or explicitly) sends byte for byte
//! the requests it would have sent warm, so the provider's prompt cache never notices; and idle
//! Locations and histories are released by the background sweep and rebuilt by the next turn.

use std::path::Path;
use std::time::Duration;

use opencode_mock_provider::MockProvider;
use opencode_session_runtime::MemoryOptions;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::SessionRuntime;
use opencode_session_store::NewSession;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::loop_::file_tools;
use super::support::Limits;
use super::support::requests;
use super::support::runtime_with_memory;
use super::support::text;
use super::support::tool_call;
use super::support::transcript;

/// The prompts of the conversation, each with the mock's answers to its provider turns.
fn script() -> Vec<(&'static str, Vec<opencode_mock_provider::MockResponse>)> {
    vec![
        ("Read a.txt", vec![tool_call("call_1", "read", json!({"path": "a.txt"})), text("It says alpha.")]),
        ("And b.txt?", vec![tool_call("call_2", "read", json!({"path": "b.txt"})), text("It says beta.")]),
        ("Thanks", vec![text("You are welcome.")]),
        (
            "Both again",
            vec![
                tool_call("call_3", "read", json!({"path": "a.txt"})),
                tool_call("call_4", "read", json!({"path": "b.txt"})),
                text("alpha and beta."),
            ],
        ),
    ]
}

/// One runtime playing [`script`] on the session `id` in `project`, calling `between` before each
/// prompt; the raw bodies of every request its provider received.
async fn play(
    project: &Path,
    id: &str,
    memory: MemoryOptions,
    between: impl Fn(&SessionRuntime),
) -> (Vec<String>, SessionRuntime, MockProvider, tempfile::TempDir) {
    let mock = MockProvider::start().await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let runtime = runtime_with_memory(&mock, data.path(), file_tools(), Limits::default(), json!({}), memory);
    let new = NewSession { id: Some(id.to_owned()), ..NewSession::default() };
    let session = runtime.create_session(project, new).await.unwrap();
    assert_eq!(session.id, id);
    for (prompt, answers) in script() {
        mock.push_all(answers);
        between(&runtime);
        runtime.run(PromptRequest::text(id, prompt)).await.unwrap();
    }
    let bodies = mock.requests().iter().map(|r| String::from_utf8(r.body.to_vec()).unwrap()).collect();
    (bodies, runtime, mock, data)
}

#[tokio::test]
async fn an_evicted_session_sends_byte_identical_requests_to_a_warm_one() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha").unwrap();
    std::fs::write(project.path().join("b.txt"), "beta").unwrap();
    let id = opencode_session_store::id::descending(opencode_session_store::id::IdKind::Session);

    // Warm: everything stays cached.
    let (warm, runtime, ..) = play(project.path(), &id, MemoryOptions::default(), |_| {}).await;
    let held = runtime.memory().history;
    assert_eq!((held.sessions, held.evicted), (1, 0), "the warm session was served from memory");
    assert_eq!(warm.len(), 8, "one request per provider turn");

    // Evicted before every prompt, as a long idle time or a crowded budget would.
    let (evicted, runtime, ..) = play(project.path(), &id, MemoryOptions::default(), |runtime| {
        runtime.evict_histories();
    })
    .await;
    assert_eq!(runtime.memory().history.evicted, 3, "evicted before each prompt but the first");
    assert_eq!(evicted, warm);

    // No budget: nothing is kept between provider turns, even inside a tool loop.
    let none = MemoryOptions { history_budget: 0, ..MemoryOptions::default() };
    let (reloaded, runtime, ..) = play(project.path(), &id, none, |_| {}).await;
    let held = runtime.memory().history;
    assert_eq!(held.sessions, 0);
    assert!(held.evicted >= 8, "every provider turn reloaded: {held:?}");
    assert_eq!(reloaded, warm);
}

#[tokio::test]
async fn idle_histories_and_locations_are_released_and_the_next_turn_rebuilds_them() {
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("a.txt"), "alpha").unwrap();
    let id = opencode_session_store::id::descending(opencode_session_store::id::IdKind::Session);
    let quick = MemoryOptions {
        session_idle: Some(Duration::from_millis(1)),
        location_idle: Some(Duration::from_millis(1)),
        ..MemoryOptions::default()
    };
    let mock = MockProvider::start().await.unwrap();
    let data = tempfile::tempdir().unwrap();
    let runtime = runtime_with_memory(&mock, data.path(), file_tools(), Limits::default(), json!({}), quick);
    let new = NewSession { id: Some(id.clone()), ..NewSession::default() };
    runtime.create_session(project.path(), new).await.unwrap();
    mock.push_all([tool_call("call_1", "read", json!({"path": "a.txt"})), text("alpha.")]);
    runtime.run(PromptRequest::text(&id, "Read a.txt")).await.unwrap();

    // The background sweep (every 250 ms here) drops both; waiting is bounded.
    let mut released = false;
    for _ in 0..200 {
        let memory = runtime.memory();
        if memory.history.sessions == 0 && memory.locations == 0 {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(released, "released: {:?}", runtime.memory());
    assert!(runtime.open_locations().is_empty());

    mock.push_all([text("Still alpha.")]);
    runtime.run(PromptRequest::text(&id, "Again?")).await.unwrap();
    let last = requests(&mock).pop().unwrap();
    assert_eq!(
        transcript(&last)[1..],
        [
            "user: Read a.txt".to_owned(),
            r#"assistant: read({"path":"a.txt"})"#.to_owned(),
            "tool: alpha".to_owned(),
            "assistant: alpha.".to_owned(),
            "user: Again?".to_owned(),
        ]
    );
    // The Location was opened again for that turn, with its tools: the tool list is unchanged.
    let bodies = mock.requests();
    let tools = |index: usize| bodies[index].body_json().unwrap()["tools"].clone();
    assert_eq!(tools(2), tools(0));
}
