//! Admitted input, promotion, context epochs, Mid-Conversation System Messages, permissions, event replay.

use opencode_session_store::Delivery;
use opencode_session_store::MessageInfo;
use opencode_session_store::NewEpoch;
use opencode_session_store::PermissionReply;
use opencode_session_store::PermissionRequest;
use opencode_session_store::StoreError;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::PROJECT;
use super::support::session;
use super::support::store;
use super::support::text;
use super::support::texts;
use super::support::turn;
use super::support::user;

#[test]
fn an_exact_retry_returns_the_original_admission_and_anything_else_conflicts() {
    let (_dir, store) = store();
    let s = session(&store);
    let other = session(&store);
    let id = Some("msg_0000000000aaretryretryre".to_owned());
    let prompt = json!({"text": "fix the build"});
    let first = store.write(|tx| tx.admit_input(&s.id, id.clone(), prompt.clone(), Delivery::Steer)).unwrap();
    assert!(!first.retried);
    let events_after_first = store.read(|r| r.latest_seq(&s.id)).unwrap();

    let retry = store.write(|tx| tx.admit_input(&s.id, id.clone(), prompt.clone(), Delivery::Steer)).unwrap();
    assert!(retry.retried);
    assert_eq!(retry.input, first.input);
    assert_eq!(store.read(|r| r.latest_seq(&s.id)).unwrap(), events_after_first, "a retry writes nothing");

    for (session_id, prompt, delivery) in [
        (&s.id, json!({"text": "something else"}), Delivery::Steer),
        (&s.id, prompt.clone(), Delivery::Queue),
        (&other.id, prompt, Delivery::Steer),
    ] {
        let err = store.write(|tx| tx.admit_input(session_id, id.clone(), prompt, delivery)).unwrap_err();
        assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    }
    assert_eq!(store.read(|r| r.pending_inputs(&s.id, None)).unwrap(), vec![first.input]);
}

#[test]
fn promotion_turns_an_admitted_prompt_into_history_exactly_once() {
    let (_dir, store) = store();
    let s = session(&store);
    let steer = store.write(|tx| tx.admit_input(&s.id, None, json!({"text": "a"}), Delivery::Steer)).unwrap().input;
    let queued = store.write(|tx| tx.admit_input(&s.id, None, json!({"text": "b"}), Delivery::Queue)).unwrap().input;
    assert_eq!(store.read(|r| r.pending_inputs(&s.id, Some(Delivery::Queue))).unwrap(), vec![queued.clone()]);
    assert!(store.read(|r| r.history(&s.id, None, 10)).unwrap().messages.is_empty(), "admitted is not history");

    let message = user(&s.id);
    let part = text(&message, "a");
    let seq = store.write(|tx| tx.promote_input(&steer.id, message.clone(), vec![part])).unwrap();
    let promoted = store.read(|r| r.input(&steer.id)).unwrap().unwrap();
    assert_eq!(promoted.promoted_seq, Some(seq));
    let history = store.read(|r| r.history(&s.id, None, 10)).unwrap().messages;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].info.id(), steer.id, "the visible message keeps the prompt's id");
    assert_eq!(history[0].parts[0].message_id, steer.id);
    assert_eq!(store.read(|r| r.pending_inputs(&s.id, None)).unwrap(), vec![queued]);

    let err = store.write(|tx| tx.promote_input(&steer.id, user(&s.id), vec![])).unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    // The admitted id cannot be admitted again as a different prompt either.
    let err = store.write(|tx| tx.admit_input(&s.id, Some(steer.id.clone()), json!({"text": "z"}), Delivery::Steer));
    assert!(matches!(err, Err(StoreError::Conflict(_))));
}

#[test]
fn a_context_update_and_its_system_message_commit_together_and_are_fenced_by_epoch() {
    let (_dir, store) = store();
    let s = session(&store);
    let epoch = store.write(|tx| tx.start_epoch(&s.id, epoch("baseline one", json!({"core/date": "Mon"})))).unwrap();
    assert_eq!((epoch.epoch, epoch.begins_at, epoch.history_from), (1, 1, 0));
    turn(&store, &s.id, "one");

    let message = store
        .write(|tx| tx.admit_system_message(&s.id, 1, "Today's date is now: Tue", &json!({"core/date": "Tue"})))
        .unwrap();
    let active = store.read(|r| r.active_epoch(&s.id)).unwrap().unwrap();
    assert_eq!(active.snapshot, json!({"core/date": "Tue"}));
    assert_eq!(active.baseline, "baseline one", "the baseline never changes within an epoch");
    let history = store.read(|r| r.history(&s.id, None, 10)).unwrap().messages;
    assert_eq!(history.last().unwrap().info, MessageInfo::System(message));

    let stale = store.write(|tx| tx.admit_system_message(&s.id, 7, "late", &json!({"core/date": "Wed"})));
    assert!(matches!(stale, Err(StoreError::Conflict(_))));
    assert_eq!(store.read(|r| r.active_epoch(&s.id)).unwrap().unwrap().snapshot, json!({"core/date": "Tue"}));
    assert_eq!(store.read(|r| r.messages(&s.id, None, 10)).unwrap().messages.len(), 3, "nothing half-written");
}

#[test]
fn a_model_switch_epoch_keeps_the_conversation_and_compaction_cuts_it() {
    let (_dir, store) = store();
    let s = session(&store);
    store.write(|tx| tx.start_epoch(&s.id, epoch("b1", json!({})))).unwrap();
    turn(&store, &s.id, "one");
    store.write(|tx| tx.admit_system_message(&s.id, 1, "update in epoch 1", &json!({}))).unwrap();
    turn(&store, &s.id, "two");

    let switched = store.write(|tx| tx.start_epoch(&s.id, epoch("b2", json!({})))).unwrap();
    assert_eq!(switched.epoch, 2);
    let history = store.read(|r| r.full_history(&s.id)).unwrap();
    assert_eq!(texts(&history), vec!["question one", "answer one", "question two", "answer two"]);
    assert!(history.iter().all(|m| !matches!(m.info, MessageInfo::System(_))), "old system messages leave history");

    let (summary_question, _) = turn(&store, &s.id, "summary");
    let compacted = NewEpoch { history_from_message: Some(summary_question.id().into()), ..epoch("b3", json!({})) };
    store.write(|tx| tx.start_epoch(&s.id, compacted)).unwrap();
    assert_eq!(texts(&store.read(|r| r.full_history(&s.id)).unwrap()), vec!["question summary", "answer summary"]);
    assert_eq!(store.read(|r| r.messages(&s.id, None, 100)).unwrap().messages.len(), 7, "all of it stays durable");

    store.write(|tx| tx.end_epoch(&s.id)).unwrap();
    assert_eq!(store.read(|r| r.active_epoch(&s.id)).unwrap(), None);
}

#[test]
fn events_replay_after_any_sequence_number_without_gaps() {
    let (_dir, store) = store();
    let s = session(&store);
    for i in 0..5 {
        turn(&store, &s.id, &i.to_string());
    }
    let all = store.read(|r| r.events_after(&s.id, 0, 1000)).unwrap();
    assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=21).collect::<Vec<_>>());
    assert_eq!(all[0].kind, opencode_session_store::EventKind::SessionCreated);
    let tail = store.read(|r| r.events_after(&s.id, 17, 1000)).unwrap();
    assert_eq!(tail, all[17..].to_vec());
    let limited = store.read(|r| r.events_after(&s.id, 3, 2)).unwrap();
    assert_eq!(limited, all[3..5].to_vec());
    assert!(store.read(|r| r.events_after(&s.id, 21, 10)).unwrap().is_empty());
}

#[test]
fn permission_requests_keep_their_agent_and_always_saves_approvals() {
    let (_dir, store) = store();
    let s = session(&store);
    let request = PermissionRequest {
        id: "per_0000000000011".into(),
        session_id: s.id.clone(),
        permission: "bash".into(),
        patterns: vec!["git status".into()],
        metadata: json!({}),
        always: vec!["git *".into()],
        tool: None,
    };
    store.write(|tx| tx.ask_permission(&request, "plan")).unwrap();
    let pending = store.read(|r| r.pending_permissions(&s.id)).unwrap();
    assert_eq!((pending.len(), pending[0].agent.as_str()), (1, "plan"));

    let answered = store.write(|tx| tx.reply_permission(&request.id, PermissionReply::Always, PROJECT)).unwrap();
    assert_eq!(answered.reply, Some(PermissionReply::Always));
    assert!(store.read(|r| r.pending_permissions(&s.id)).unwrap().is_empty());
    let saved = store.read(|r| r.saved_approvals(PROJECT)).unwrap();
    assert_eq!(
        saved.iter().map(|a| (a.action.as_str(), a.resource.as_str())).collect::<Vec<_>>(),
        vec![("bash", "git *")]
    );
    let again = store.write(|tx| tx.reply_permission(&request.id, PermissionReply::Once, PROJECT));
    assert!(matches!(again, Err(StoreError::Conflict(_))));
}

fn epoch(baseline: &str, snapshot: serde_json::Value) -> NewEpoch {
    NewEpoch {
        baseline: baseline.into(),
        baseline_parts: vec![("core/environment".into(), baseline.into())],
        snapshot,
        agent: "build".into(),
        history_from_message: None,
    }
}
