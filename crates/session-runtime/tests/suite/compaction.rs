//! Compaction: automatic when the request would not fit, after an overflow (once), and manual;
//! each starts a new Context Epoch whose history begins at the checkpoint.

use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::MessageInfo;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Limits;
use super::support::harness_with;
use super::support::overflow;
use super::support::requests;
use super::support::text;
use super::support::transcript;

const SUMMARY: &str = "## Objective\nKeep talking.";

fn tiny() -> Limits {
    Limits { context: 3_000, output: 200, reserved: 200, keep: 1_000 }
}

#[tokio::test]
async fn a_request_over_the_tiny_context_limit_is_compacted_into_a_new_epoch_first() {
    let h = harness_with(FnTools::new(), tiny(), json!({})).await;
    h.mock.push_all([text("ok"), text(SUMMARY), text("Continuing.")]);
    let first = h.runtime.run(PromptRequest::text(&h.session.id, "a".repeat(4_000))).await.unwrap();
    assert_eq!(first.outcome, DrainOutcome::Completed);
    let second = h.runtime.run(PromptRequest::text(&h.session.id, "b".repeat(7_000))).await.unwrap();
    assert_eq!(second.outcome, DrainOutcome::Completed);

    let bodies: Vec<serde_json::Value> = h.mock.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 3, "turn, summary, turn: one request each");
    let summary = transcript(bodies[1]["messages"].as_array().unwrap());
    assert_eq!(summary.len(), 2, "system and the one summary prompt");
    assert!(summary[1].starts_with("user: Create a new anchored summary from the conversation history."));
    assert!(bodies[1].get("tools").is_none());
    let after = transcript(bodies[2]["messages"].as_array().unwrap());
    assert_eq!(after.len(), 2, "only the checkpoint remains in projected history: {after:?}");
    assert!(after[1].starts_with("user: <conversation-checkpoint>"));
    assert!(after[1].contains(SUMMARY));
    assert!(after[1].ends_with(&format!("{}\n</recent-context>\n</conversation-checkpoint>", "b".repeat(100))));

    let epoch = h.store.read(|r| r.active_epoch(&h.session.id)).unwrap().unwrap();
    assert_eq!(epoch.epoch, 2);
    let messages = h.store.read(|r| r.messages(&h.session.id, None, 100)).unwrap().messages;
    let checkpoint = messages.iter().find(|m| m.seq == epoch.history_from).unwrap();
    assert!(checkpoint.parts.iter().any(|p| p.kind.type_name() == "compaction"));
}

#[tokio::test]
async fn an_overflow_before_any_output_compacts_once_and_retries_the_turn_once() {
    let limits = Limits { keep: 5, ..Limits::default() };
    let h = harness_with(FnTools::new(), limits, json!({})).await;
    h.mock.push_all([text("ok"), overflow(), text(SUMMARY), text("Recovered.")]);
    h.runtime.run(PromptRequest::text(&h.session.id, "first question")).await.unwrap();
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "second question")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let requests = requests(&h.mock);
    assert_eq!(requests.len(), 4);
    assert!(transcript(&requests[2])[1].starts_with("user: Create a new anchored summary"));
    assert!(transcript(&requests[3])[1].starts_with("user: <conversation-checkpoint>"));
    let messages = h.store.read(|r| r.messages(&h.session.id, None, 100)).unwrap().messages;
    let errors = messages.iter().filter(|m| matches!(&m.info, MessageInfo::Assistant(a) if a.error.is_some())).count();
    assert_eq!(errors, 0, "the attempt without output left no failed message behind");
}

#[tokio::test]
async fn a_second_overflow_after_compaction_fails_with_the_provider_message() {
    let limits = Limits { keep: 5, ..Limits::default() };
    let h = harness_with(FnTools::new(), limits, json!({})).await;
    h.mock.push_all([text("ok"), overflow(), text(SUMMARY), overflow()]);
    h.runtime.run(PromptRequest::text(&h.session.id, "first question")).await.unwrap();
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "second question")).await.unwrap();

    let DrainOutcome::Failed { message, .. } = result.outcome else { panic!("{:?}", result.outcome) };
    assert!(message.contains("maximum context length"), "{message}");
    assert_eq!(h.mock.requests().len(), 4, "compacted once, retried once, no more");
    let messages = h.store.read(|r| r.messages(&h.session.id, None, 100)).unwrap().messages;
    let MessageInfo::Assistant(last) = &messages.last().unwrap().info else { panic!("assistant expected") };
    let error = last.error.as_ref().unwrap();
    assert_eq!(error.name, "APIError");
    assert!(error.data["message"].as_str().unwrap().contains("maximum context length"));
}

#[tokio::test]
async fn manual_compaction_starts_a_new_epoch() {
    let limits = Limits { keep: 5, ..Limits::default() };
    let h = harness_with(FnTools::new(), limits, json!({})).await;
    h.mock.push_all([text("ok"), text(SUMMARY)]);
    h.runtime.run(PromptRequest::text(&h.session.id, "remember 42")).await.unwrap();
    let outcome = h.runtime.compact(&h.session.id).await;

    assert_eq!(outcome, Some(DrainOutcome::Completed));
    assert_eq!(h.mock.requests().len(), 2);
    assert_eq!(h.store.read(|r| r.active_epoch(&h.session.id)).unwrap().unwrap().epoch, 2);
}

/// `/compact` on a session shorter than the kept tail summarises all of it, as the user asked.
#[tokio::test]
async fn manual_compaction_of_a_short_session_summarises_all_of_it() {
    let h = harness_with(FnTools::new(), Limits::default(), json!({})).await;
    h.mock.push_all([text("ok"), text(SUMMARY)]);
    h.runtime.run(PromptRequest::text(&h.session.id, "remember 42")).await.unwrap();
    let outcome = h.runtime.compact(&h.session.id).await;

    assert_eq!(outcome, Some(DrainOutcome::Completed));
    let summary_request = h.mock.requests()[1].body_json().unwrap().to_string();
    assert!(summary_request.contains("remember 42"), "{summary_request}");
    assert_eq!(h.store.read(|r| r.active_epoch(&h.session.id)).unwrap().unwrap().epoch, 2);
}
