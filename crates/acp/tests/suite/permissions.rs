//! Every permission the tools ask is the client's `session/request_permission`.

use agent_client_protocol::v1::schema::{
    PermissionOptionKind, SessionUpdate, StopReason, ToolCallContent, ToolCallStatus,
};
use serde_json::json;

use super::support::*;

fn asking() -> serde_json::Value {
    json!({"permission": {"bash": "ask", "edit": "ask"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_ask_offers_the_four_answers_and_names_the_command() {
    let fixture = Fixture::new(asking()).await;
    fixture.push([
        tool_call("call_1", "bash", json!({"command": "echo approved-run", "description": "Say it"})),
        text("Ran."),
    ]);
    let work = fixture.work.clone();
    let (permissions, output) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            assert_eq!(conn.prompt(&session, "run").await.unwrap().stop_reason, StopReason::EndTurn);
            let output = conn.updates(&session).iter().find_map(|update| match update {
                SessionUpdate::ToolCallUpdate(update) if update.fields.status == Some(ToolCallStatus::Completed) => {
                    update.fields.raw_output.clone()
                }
                _ => None,
            });
            (conn.log.permissions.lock().unwrap().clone(), output)
        })
        .await;
    assert_eq!(permissions.len(), 1);
    let asked = &permissions[0];
    assert_eq!(asked.tool_call.tool_call_id.0.as_ref(), "call_1");
    assert_eq!(asked.tool_call.fields.title.as_deref(), Some("echo approved-run"));
    let kinds: Vec<PermissionOptionKind> = asked.options.iter().map(|option| option.kind).collect();
    assert_eq!(
        kinds,
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways
        ]
    );
    assert!(output.unwrap()["output"].as_str().unwrap().contains("approved-run"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_ask_carries_its_diff_and_a_rejection_keeps_the_file() {
    let fixture = Fixture::new(asking()).await;
    std::fs::write(fixture.work.join("a.txt"), "one\ntwo\n").unwrap();
    let edit = json!({"filePath": "a.txt", "oldString": "two", "newString": "three"});
    fixture.push([tool_call("call_1", "edit", edit), text("Could not edit.")]);
    let work = fixture.work.clone();
    let (permissions, failed) = fixture
        .client(choose(PermissionOptionKind::RejectOnce), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "edit").await.unwrap();
            let failed = conn.updates(&session).iter().any(|update| {
                matches!(update, SessionUpdate::ToolCallUpdate(update) if update.fields.status == Some(ToolCallStatus::Failed))
            });
            (conn.log.permissions.lock().unwrap().clone(), failed)
        })
        .await;
    let content = permissions[0].tool_call.fields.content.clone().unwrap();
    let ToolCallContent::Diff(diff) = &content[0] else { panic!("no diff: {content:?}") };
    assert_eq!(diff.path, fixture.work.join("a.txt"));
    assert_eq!(diff.old_text.as_deref(), Some("one\ntwo\n"));
    assert_eq!(diff.new_text, "one\nthree\n");
    assert!(failed, "the rejected call fails");
    assert_eq!(std::fs::read_to_string(fixture.work.join("a.txt")).unwrap(), "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_always_is_not_asked_again() {
    let fixture = Fixture::new(asking()).await;
    std::fs::write(fixture.work.join("a.txt"), "one\n").unwrap();
    let edit = json!({"filePath": "a.txt", "oldString": "one", "newString": "two"});
    fixture.push([tool_call("call_1", "edit", edit.clone()), tool_call("call_2", "edit", edit), text("Gave up.")]);
    let work = fixture.work.clone();
    let asked = fixture
        .client(choose(PermissionOptionKind::RejectAlways), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "edit twice").await.unwrap();
            conn.log.permissions.lock().unwrap().len()
        })
        .await;
    assert_eq!(asked, 1);
    assert_eq!(std::fs::read_to_string(fixture.work.join("a.txt")).unwrap(), "one\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_approves_the_pattern_and_an_approved_edit_reaches_the_editor() {
    let fixture = Fixture::new(asking()).await;
    std::fs::write(fixture.work.join("a.txt"), "one\n").unwrap();
    fixture.push([
        tool_call("call_1", "edit", json!({"filePath": "a.txt", "oldString": "one", "newString": "two"})),
        tool_call("call_2", "edit", json!({"filePath": "a.txt", "oldString": "two", "newString": "three"})),
        text("Edited."),
    ]);
    let work = fixture.work.clone();
    let (asked, writes) = fixture
        .client(choose(PermissionOptionKind::AllowAlways), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "edit twice").await.unwrap();
            (conn.log.permissions.lock().unwrap().len(), conn.log.writes.lock().unwrap().clone())
        })
        .await;
    assert_eq!(asked, 1);
    // The client advertised its file system: both edits went to its buffer (the second read the
    // first's result from it), and the disk is left to the editor.
    let contents: Vec<&str> = writes.iter().map(|write| write.content.as_str()).collect();
    assert_eq!(contents, ["two\n", "three\n"]);
    assert!(writes.iter().all(|write| write.path == fixture.work.join("a.txt")));
    assert_eq!(std::fs::read_to_string(fixture.work.join("a.txt")).unwrap(), "one\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_are_read_from_the_editors_unsaved_buffer() {
    let fixture = Fixture::new(json!({})).await;
    std::fs::write(fixture.work.join("a.txt"), "saved\n").unwrap();
    fixture.push([tool_call("call_1", "read", json!({"filePath": "a.txt"})), text("Read.")]);
    let work = fixture.work.clone();
    fixture
        .client(choose(PermissionOptionKind::AllowOnce), async move |conn: Conn| {
            conn.log.buffers.lock().unwrap().insert(work.join("a.txt"), "unsaved\n".to_owned());
            let session = conn.start(&work).await;
            conn.prompt(&session, "read a.txt").await.unwrap();
        })
        .await;
    let requests = fixture.mock.requests();
    let second = requests[1].body_json().unwrap().to_string();
    assert!(second.contains("1: unsaved"), "the model saw the buffer: {second}");
    assert!(!second.contains("1: saved"), "{second}");
}
