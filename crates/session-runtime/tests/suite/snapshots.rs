//! Work-tree snapshots around steps in a git project: the step parts carry the trees, a step that
//! wrote a file gets a patch part, and the turn's and session's diffs follow with `session.diff`.

use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Paths;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_tool_registry::Permissions;
use pretty_assertions::assert_eq;
use serde_json::json;

use opencode_mock_provider::git::git;

use super::support::history;
use super::support::text;
use super::support::tool_call;

/// A committed git project, and a runtime with the standard tools (`extra` merged into config).
async fn git_project(
    extra: serde_json::Value,
) -> (
    opencode_mock_provider::MockProvider,
    tempfile::TempDir,
    tempfile::TempDir,
    opencode_session_runtime::SessionRuntime,
    Arc<opencode_session_store::Store>,
) {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("README.md"), "# p\n").unwrap();
    opencode_mock_provider::git::init_committed(project.path());
    let config: Config = serde_json::from_value(mock.opencode_config(extra)).unwrap();
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, store) = super::support::runtime_with_standard_tools(config, Paths::under(data.path()), permissions);
    (mock, project, data, runtime, store)
}

#[tokio::test]
async fn a_step_that_writes_a_file_records_its_trees_its_patch_and_the_turns_diff() {
    let (mock, project, data, runtime, store) = git_project(json!({})).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([
        tool_call("call_1", "write", json!({"filePath": "hello.txt", "content": "hi there\n"})),
        text("Done."),
    ]);
    runtime.run(PromptRequest::text(&session.id, "write hello")).await.unwrap();

    let messages = history(&store, &session.id);
    let kinds = |at: usize| messages[at].parts.iter().map(|p| p.kind.clone()).collect::<Vec<_>>();
    let (first, second) = (kinds(1), kinds(2));
    let PartKind::StepStart { snapshot: Some(before) } = &first[0] else { panic!("{first:?}") };
    let PartKind::StepFinish { snapshot: Some(after), .. } = &first[2] else { panic!("{first:?}") };
    assert_ne!(before, after);
    let hello = project.path().join("hello.txt").to_string_lossy().into_owned();
    assert_eq!(first[3], PartKind::Patch { hash: before.clone(), files: vec![hello] });
    // The answering step changed nothing: it starts and ends on the same tree, with no patch.
    assert!(matches!(&second[0], PartKind::StepStart { snapshot: Some(s) } if s == after), "{second:?}");
    assert!(matches!(second.last().unwrap(), PartKind::StepFinish { snapshot: Some(s), .. } if s == after));
    assert!(!second.iter().any(|p| matches!(p, PartKind::Patch { .. })));

    let MessageInfo::User(user) = &messages[0].info else { panic!() };
    let diffs = &user.summary.as_ref().unwrap().diffs;
    assert_eq!(diffs.len(), 1);
    assert_eq!((diffs[0].file.as_deref(), diffs[0].status.as_deref()), (Some("hello.txt"), Some("added")));
    assert_eq!((diffs[0].additions, diffs[0].deletions), (1, 0));
    assert!(diffs[0].patch.as_deref().unwrap().contains("+hi there\n"));
    let session = store.read(|r| r.session(&session.id)).unwrap().unwrap();
    let summary = session.summary.unwrap();
    assert_eq!((summary.additions, summary.deletions, summary.files), (1, 0, 1));
    let events = store.read(|r| r.events_after(&session.id, 0, 1000)).unwrap();
    let diff = events.iter().find(|e| e.kind == opencode_session_store::EventKind::SessionDiff).unwrap();
    assert_eq!(diff.data["diff"][0]["file"], "hello.txt");

    // The user's repository is as the agent left the files: nothing staged, no commit.
    assert_eq!(git(project.path(), &["status", "--porcelain"]), "?? hello.txt");
    assert!(data.path().join("data/snapshot").is_dir());
}

#[tokio::test]
async fn snapshots_are_off_with_config_snapshot_false() {
    let (mock, project, data, runtime, store) = git_project(json!({"snapshot": false})).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([tool_call("call_1", "write", json!({"filePath": "hello.txt", "content": "hi\n"})), text("Done.")]);
    runtime.run(PromptRequest::text(&session.id, "write hello")).await.unwrap();
    let messages = history(&store, &session.id);
    assert!(messages[1].parts.iter().all(|p| !matches!(p.kind, PartKind::Patch { .. })));
    assert_eq!(messages[1].parts[0].kind, PartKind::StepStart { snapshot: None });
    assert!(!data.path().join("data/snapshot").exists());
}
