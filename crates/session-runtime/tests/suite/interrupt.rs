//! Interrupt targets the active drain; idle and unknown sessions are a no-op; admitted input survives.

use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::INTERRUPTED_TOOL_ERROR;
use opencode_session_store::MessageInfo;
use opencode_session_store::PartKind;
use opencode_session_store::ToolState;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::admission::gated_tool;
use super::support::harness;
use super::support::history;
use super::support::text;
use super::support::tool_call;

#[tokio::test]
async fn interrupting_a_running_tool_settles_it_as_interrupted_and_keeps_later_input() {
    let (tools, mut started, _release) = gated_tool();
    let h = harness(tools).await;
    h.mock.push_all([tool_call("call_1", "wait", json!({})), text("Resumed.")]);
    h.runtime.prompt(PromptRequest::text(&h.session.id, "Start")).await.unwrap();
    started.recv().await.unwrap();
    let later = PromptRequest { admit_only: true, ..PromptRequest::text(&h.session.id, "Later").queued() };
    h.runtime.prompt(later).await.unwrap();

    assert!(h.runtime.interrupt(&h.session.id));
    assert_eq!(h.runtime.wait_idle(&h.session.id).await, Some(DrainOutcome::Interrupted));
    assert_eq!(h.mock.requests().len(), 1);
    let messages = history(&h.store, &h.session.id);
    let MessageInfo::Assistant(assistant) = &messages[1].info else { panic!("assistant expected") };
    assert_eq!(assistant.error.as_ref().unwrap().name, "MessageAbortedError");
    let tool = messages[1].parts.iter().find_map(|p| match &p.kind {
        PartKind::Tool { state, .. } => Some(state.clone()),
        _ => None,
    });
    let Some(ToolState::Error { error, .. }) = tool else { panic!("{tool:?}") };
    assert_eq!(error, INTERRUPTED_TOOL_ERROR);
    let pending = h.store.read(|r| r.pending_inputs(&h.session.id, None)).unwrap();
    assert_eq!(pending.len(), 1, "admitted input survives the interrupt");

    // The next wake runs the surviving input; the interrupted call is replayed as failed, not re-run.
    h.runtime.wake(&h.session.id);
    assert_eq!(h.runtime.wait_idle(&h.session.id).await, Some(DrainOutcome::Completed));
    assert_eq!(h.mock.requests().len(), 2);
}

#[tokio::test]
async fn interrupting_an_idle_or_unknown_session_is_a_no_op() {
    let h = harness(FnTools::new()).await;
    assert!(!h.runtime.interrupt(&h.session.id));
    assert!(!h.runtime.interrupt("ses_unknown"));
    assert_eq!(h.runtime.wait_idle(&h.session.id).await, None);
    h.mock.push(text("Fine."));
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "Still works?")).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);
}

#[tokio::test]
async fn a_held_session_runs_no_turn_until_released_and_a_running_turn_refuses_a_hold() {
    let (tools, mut started, release) = gated_tool();
    let h = harness(tools).await;
    let hold = h.runtime.hold(&h.session.id).unwrap();
    h.mock.push_all([tool_call("call_1", "wait", json!({})), text("Done.")]);
    h.runtime.prompt(PromptRequest::text(&h.session.id, "Start")).await.unwrap();
    tokio::task::yield_now().await;
    assert!(h.mock.requests().is_empty(), "no turn while the session is held");
    drop(hold);
    started.recv().await.unwrap();
    let busy = h.runtime.hold(&h.session.id).unwrap_err();
    assert!(matches!(busy, opencode_session_runtime::RuntimeError::Busy { .. }), "{busy}");
    let message = history(&h.store, &h.session.id)[0].info.id().to_owned();
    let refused = h.runtime.revert(&h.session.id, message, None).await.unwrap_err();
    assert_eq!(refused.to_string(), format!("session {} is busy", h.session.id));
    release.notify_one();
    assert_eq!(h.runtime.wait_idle(&h.session.id).await, Some(DrainOutcome::Completed));
    assert!(h.runtime.hold(&h.session.id).is_ok());
}
