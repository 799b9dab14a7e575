//! Admission: durable before execution, exact retries, conflicts; steer versus queue promotion.

use std::sync::Arc;

use opencode_llm::ToolDefinition;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeError;
use opencode_session_store::Delivery;
use opencode_session_store::StoreError;
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio::sync::Notify;
use tokio::sync::mpsc;

use super::support::harness;
use super::support::requests;
use super::support::text;
use super::support::tool_call;
use super::support::transcript;

/// A `wait` tool that reports when it starts and finishes only when released.
pub fn gated_tool() -> (FnTools, mpsc::UnboundedReceiver<()>, Arc<Notify>) {
    let (started, receiver) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let gate = Arc::clone(&release);
    let tools = FnTools::new().tool(
        ToolDefinition::new("wait", "Wait for the user", json!({"type": "object"})),
        move |_, _| {
            let (started, gate) = (started.clone(), Arc::clone(&gate));
            Box::pin(async move {
                started.send(()).ok();
                gate.notified().await;
                Ok("waited".to_owned())
            })
        },
    );
    (tools, receiver, release)
}

#[tokio::test]
async fn admit_only_is_durable_and_runs_nothing_and_an_exact_retry_is_reconciled() {
    let h = harness(FnTools::new()).await;
    let request = PromptRequest { admit_only: true, ..PromptRequest::text(&h.session.id, "hi").with_id("msg_fixed1") };
    let first = h.runtime.prompt(request.clone()).await.unwrap();
    let again = h.runtime.prompt(request.clone()).await.unwrap();

    assert!(!first.retried);
    assert!(again.retried);
    assert_eq!(again.input, first.input);
    assert_eq!(h.runtime.active(), Vec::<String>::new());
    assert_eq!(h.mock.requests().len(), 0);
    let pending = h.store.read(|r| r.pending_inputs(&h.session.id, None)).unwrap();
    assert_eq!(pending.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), ["msg_fixed1"]);

    let changed = PromptRequest { text: "hello".into(), ..request };
    let err = h.runtime.prompt(changed).await.unwrap_err();
    assert!(matches!(err, RuntimeError::Store(StoreError::Conflict(_))), "{err}");
}

#[tokio::test]
async fn a_steer_admitted_while_a_tool_runs_is_promoted_before_the_next_model_call() {
    let (tools, mut started, release) = gated_tool();
    let h = harness(tools).await;
    h.mock.push_all([tool_call("call_1", "wait", json!({})), text("Done, and noted.")]);
    h.runtime.prompt(PromptRequest::text(&h.session.id, "Start")).await.unwrap();
    started.recv().await.unwrap();
    h.runtime.prompt(PromptRequest::text(&h.session.id, "Also mention the weather")).await.unwrap();
    release.notify_one();

    assert_eq!(h.runtime.wait_idle(&h.session.id).await, Some(DrainOutcome::Completed));
    let requests = requests(&h.mock);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        transcript(&requests[1])[1..],
        ["user: Start", "assistant: wait({})", "tool: waited", "user: Also mention the weather",]
    );
}

#[tokio::test]
async fn a_queued_prompt_waits_until_the_session_would_go_idle() {
    let (tools, mut started, release) = gated_tool();
    let h = harness(tools).await;
    h.mock.push_all([tool_call("call_1", "wait", json!({})), text("First done."), text("Queued done.")]);
    h.runtime.prompt(PromptRequest::text(&h.session.id, "First")).await.unwrap();
    started.recv().await.unwrap();
    let queued = h.runtime.prompt(PromptRequest::text(&h.session.id, "Then this").queued()).await.unwrap();
    assert_eq!(queued.input.delivery, Delivery::Queue);
    release.notify_one();

    assert_eq!(h.runtime.wait_idle(&h.session.id).await, Some(DrainOutcome::Completed));
    let requests = requests(&h.mock);
    assert_eq!(requests.len(), 3, "one request per turn, the queued prompt in its own turn");
    assert!(!transcript(&requests[1]).iter().any(|m| m.contains("Then this")));
    assert_eq!(
        transcript(&requests[2])[1..],
        ["user: First", "assistant: wait({})", "tool: waited", "assistant: First done.", "user: Then this",]
    );
}

#[tokio::test]
async fn different_sessions_run_concurrently_and_wakes_coalesce() {
    let (tools, mut started, release) = gated_tool();
    let h = harness(tools).await;
    let other = h.runtime.create_session(h.project.path(), Default::default()).await.unwrap();
    h.mock.push_all([tool_call("call_1", "wait", json!({})), text("Other answered."), text("First answered.")]);
    h.runtime.prompt(PromptRequest::text(&h.session.id, "First")).await.unwrap();
    started.recv().await.unwrap();
    // The first session is blocked in its tool; the second one still runs to completion.
    let result = h.runtime.run(PromptRequest::text(&other.id, "Other")).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);
    for _ in 0..3 {
        h.runtime.wake(&h.session.id);
    }
    release.notify_one();
    assert_eq!(h.runtime.wait_idle(&h.session.id).await, Some(DrainOutcome::Completed));
    assert_eq!(h.mock.requests().len(), 3, "coalesced wakes found nothing more to do");
}
