//! The in-memory projected history equals what a fresh reload produces: after a multi-turn tool
//! loop, a revert, a compaction, and writes by another process (seen through the event sequence).

use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::to_llm_messages;
use opencode_session_store::MessageInfo;
use opencode_session_store::PartKind;
use opencode_session_store::Revert;
use opencode_session_store::Store;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::loop_::file_tools;
use super::support::Limits;
use super::support::harness;
use super::support::harness_with;
use super::support::requests;
use super::support::text;
use super::support::tool_call;
use super::support::transcript;

/// The cache, served from memory (not reloaded), equals a fresh load and its projection.
async fn assert_cache_is_fresh(runtime: &SessionRuntime, store: &Store, session: &str) {
    let (cached, messages) =
        runtime.cached_history(session).await.unwrap().expect("the projection is served from memory");
    let fresh = store.read(|r| r.full_history(session)).unwrap();
    assert_eq!(cached, fresh);
    assert_eq!(messages, to_llm_messages(&fresh));
}

#[tokio::test]
async fn after_a_multi_turn_tool_loop_the_cache_equals_a_fresh_load() {
    let h = harness(file_tools()).await;
    std::fs::write(h.project.path().join("a.txt"), "alpha").unwrap();
    h.mock.push_all([
        tool_call("call_1", "read", json!({"path": "a.txt"})),
        tool_call("call_2", "write", json!({"path": "a.txt", "content": "beta"})),
        tool_call("call_3", "read", json!({"path": "a.txt"})),
        text("Done."),
        text("Second answer."),
    ]);
    h.runtime.run(PromptRequest::text(&h.session.id, "Edit a.txt")).await.unwrap();
    assert_cache_is_fresh(&h.runtime, &h.store, &h.session.id).await;
    h.runtime.run(PromptRequest::text(&h.session.id, "And again")).await.unwrap();
    assert_cache_is_fresh(&h.runtime, &h.store, &h.session.id).await;

    let last = requests(&h.mock).pop().unwrap();
    assert_eq!(
        transcript(&last)[1..],
        [
            "user: Edit a.txt".to_owned(),
            r#"assistant: read({"path":"a.txt"})"#.to_owned(),
            "tool: alpha".to_owned(),
            r#"assistant: write({"path":"a.txt","content":"beta"})"#.to_owned(),
            format!("tool: wrote {}", h.project.path().join("a.txt").display()),
            r#"assistant: read({"path":"a.txt"})"#.to_owned(),
            "tool: beta".to_owned(),
            "assistant: Done.".to_owned(),
            "user: And again".to_owned(),
        ]
    );
}

#[tokio::test]
async fn a_revert_is_reloaded_and_the_reverted_turn_leaves_the_next_request() {
    let h = harness(FnTools::new()).await;
    h.mock.push_all([text("one"), text("two"), text("three")]);
    h.runtime.run(PromptRequest::text(&h.session.id, "first")).await.unwrap();
    h.runtime.run(PromptRequest::text(&h.session.id, "second")).await.unwrap();
    let second = h
        .store
        .read(|r| r.full_history(&h.session.id))
        .unwrap()
        .into_iter()
        .filter(|m| matches!(m.info, MessageInfo::User(_)))
        .nth(1)
        .unwrap();
    h.store
        .write(|tx| {
            tx.set_revert(
                &h.session.id,
                Revert { message_id: second.info.id().to_owned(), part_id: None, snapshot: None, diff: None },
            )?;
            tx.commit_revert(&h.session.id)
        })
        .unwrap();
    assert_eq!(h.runtime.cached_history(&h.session.id).await.unwrap(), None, "a revert forces a reload");
    h.runtime.run(PromptRequest::text(&h.session.id, "third")).await.unwrap();

    assert_eq!(
        transcript(&requests(&h.mock)[2])[1..],
        ["user: first".to_owned(), "assistant: one".to_owned(), "user: third".to_owned()]
    );
    assert_cache_is_fresh(&h.runtime, &h.store, &h.session.id).await;
}

#[tokio::test]
async fn after_a_compaction_the_cache_equals_a_fresh_load() {
    let limits = Limits { keep: 5, ..Limits::default() };
    let h = harness_with(FnTools::new(), limits, json!({})).await;
    h.mock.push_all([text("ok"), text("## Objective\nremember 42"), text("still 42")]);
    h.runtime.run(PromptRequest::text(&h.session.id, "remember 42")).await.unwrap();
    h.runtime.compact(&h.session.id).await;
    h.runtime.run(PromptRequest::text(&h.session.id, "what number?")).await.unwrap();

    let last = requests(&h.mock).pop().unwrap();
    assert!(transcript(&last)[1].contains("<conversation-checkpoint>"), "{last:?}");
    assert_cache_is_fresh(&h.runtime, &h.store, &h.session.id).await;
}

#[tokio::test]
async fn a_write_by_another_process_is_seen_through_the_event_sequence() {
    let h = harness(FnTools::new()).await;
    h.mock.push_all([text("one"), text("two")]);
    h.runtime.run(PromptRequest::text(&h.session.id, "first")).await.unwrap();
    assert_cache_is_fresh(&h.runtime, &h.store, &h.session.id).await;
    // Another handle on the same database stands in for another process: its commits reach this
    // runtime through the store's event sequence only.
    let other = Store::open(h.store.path()).unwrap();
    let mut user = other
        .read(|r| r.full_history(&h.session.id))
        .unwrap()
        .into_iter()
        .find(|m| matches!(m.info, MessageInfo::User(_)))
        .unwrap();
    let part = &mut user.parts[0];
    if let PartKind::Text { text, .. } = &mut part.kind {
        *text = "first, edited".to_owned();
    }
    other.write(|tx| tx.upsert_part(part)).unwrap();
    h.runtime.run(PromptRequest::text(&h.session.id, "second")).await.unwrap();

    assert_eq!(
        transcript(&requests(&h.mock)[1])[1..],
        ["user: first, edited".to_owned(), "assistant: one".to_owned(), "user: second".to_owned()]
    );
    assert_cache_is_fresh(&h.runtime, &h.store, &h.session.id).await;
}
