//! Messages and parts: paging, usage accumulation, the tool state machine, staged writes, events.

use std::sync::Arc;
use std::sync::Mutex;

use opencode_session_store::INTERRUPTED_TOOL_ERROR;
use opencode_session_store::MessageInfo;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Store;
use opencode_session_store::StoreError;
use opencode_session_store::StoreOptions;
use opencode_session_store::Tokens;
use opencode_session_store::ToolEndTime;
use opencode_session_store::ToolStartTime;
use opencode_session_store::ToolState;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::TempDir;
use super::support::add_project;
use super::support::assistant;
use super::support::session;
use super::support::store;
use super::support::text;
use super::support::texts;
use super::support::turn;
use super::support::user;

#[test]
fn history_pages_backwards_from_the_newest_message() {
    let (_dir, store) = store();
    let s = session(&store);
    for i in 0..7 {
        turn(&store, &s.id, &i.to_string());
    }
    let newest = store.read(|r| r.history(&s.id, None, 4)).unwrap();
    assert_eq!(texts(&newest.messages), vec!["question 5", "answer 5", "question 6", "answer 6"]);
    let older = store.read(|r| r.history(&s.id, newest.older, 4)).unwrap();
    assert_eq!(texts(&older.messages), vec!["question 3", "answer 3", "question 4", "answer 4"]);
    let more = store.read(|r| r.history(&s.id, older.older, 6)).unwrap();
    assert_eq!(more.messages.len(), 6);
    assert_eq!(more.older, None, "an exactly full last page has no older cursor");
    assert_eq!(store.read(|r| r.full_history(&s.id)).unwrap().len(), 14);
    let empty = session(&store);
    let page = store.read(|r| r.history(&empty.id, None, 10)).unwrap();
    assert_eq!((page.messages.len(), page.older), (0, None));
}

#[test]
fn usage_accumulates_per_message_and_per_session() {
    let (_dir, store) = store();
    let s = session(&store);
    let question = user(&s.id);
    let first = assistant(&s.id, question.id(), 0.25, 100);
    let second = assistant(&s.id, question.id(), 0.5, 40);
    store
        .write(|tx| {
            tx.append_message(&question)?;
            tx.append_message(&first)?;
            tx.append_message(&second)
        })
        .unwrap();
    let step = Tokens { input: 10, output: 5, ..Tokens::default() };
    let updated = store.write(|tx| tx.add_message_usage(second.id(), 0.25, &step)).unwrap();
    let MessageInfo::Assistant(updated) = updated else { panic!("assistant expected") };
    assert_eq!((updated.cost, updated.tokens.input, updated.tokens.output), (0.75, 50, 5));

    let totals = store.read(|r| r.session(&s.id)).unwrap().unwrap();
    assert_eq!((totals.cost, totals.tokens.input, totals.tokens.output), (1.0, 150, 5));

    store.write(|tx| tx.remove_message(first.id())).unwrap();
    let totals = store.read(|r| r.session(&s.id)).unwrap().unwrap();
    assert_eq!((totals.cost, totals.tokens.input), (0.75, 50));
}

#[test]
fn tool_parts_only_move_forward() {
    let (_dir, store) = store();
    let s = session(&store);
    let (_, answer) = turn(&store, &s.id, "t");
    let mut part = tool_part(&answer, ToolState::Pending { input: json!({}), raw: String::new() });
    store.write(|tx| tx.upsert_part(&part)).unwrap();
    part.kind = tool_kind(running());
    store.write(|tx| tx.upsert_part(&part)).unwrap();
    part.kind = tool_kind(ToolState::Completed {
        input: json!({"command": "ls"}),
        output: "a\nb".into(),
        title: "ls".into(),
        metadata: json!({}),
        time: ToolEndTime { start: 1, end: 2, compacted: None },
        attachments: None,
    });
    store.write(|tx| tx.upsert_part(&part)).unwrap();
    part.kind = tool_kind(running());
    let err = store.write(|tx| tx.upsert_part(&part)).unwrap_err();
    assert!(matches!(err, StoreError::Conflict(_)), "{err}");
    assert_eq!(err.to_string(), format!("tool part {} cannot go from completed to running", part.id));
}

#[test]
fn tools_left_running_by_a_crash_are_failed_not_replayed() {
    let (_dir, store) = store();
    let s = session(&store);
    let (_, answer) = turn(&store, &s.id, "t");
    let running_part = tool_part(&answer, running());
    let pending_part = tool_part(&answer, ToolState::Pending { input: json!({"x": 1}), raw: "{\"x\":1}".into() });
    store.write(|tx| tx.upsert_part(&running_part).and_then(|()| tx.upsert_part(&pending_part))).unwrap();

    let failed = store.write(|tx| tx.fail_interrupted_tools(&s.id)).unwrap();
    assert_eq!(failed.iter().map(|p| p.id.clone()).collect::<Vec<_>>(), vec![running_part.id, pending_part.id]);
    for part in &failed {
        let PartKind::Tool { state: ToolState::Error { error, .. }, .. } = &part.kind else { panic!("error state") };
        assert_eq!(error, INTERRUPTED_TOOL_ERROR);
    }
    assert!(store.write(|tx| tx.fail_interrupted_tools(&s.id)).unwrap().is_empty());
}

#[test]
fn staged_part_updates_coalesce_into_one_write_and_survive_reopen() {
    let dir = TempDir::new();
    let options = StoreOptions { flush_interval: std::time::Duration::from_secs(3600), ..StoreOptions::default() };
    let store = Store::open_with(dir.db(), options).unwrap();
    add_project(&store);
    let s = session(&store);
    let (_, answer) = turn(&store, &s.id, "t");
    let before = store.read(|r| r.latest_seq(&s.id)).unwrap();
    let mut part = text(&answer, "");
    let mut streamed = String::new();
    for token in 0..200 {
        streamed.push_str(&format!("tok{token} "));
        part.kind =
            PartKind::Text { text: streamed.clone(), synthetic: None, ignored: None, time: None, metadata: None };
        assert!(!store.stage_part(part.clone()).unwrap());
    }
    assert_eq!(store.read(|r| r.message(answer.id())).unwrap().unwrap().parts.len(), 1, "staged, not yet visible");
    store.flush().unwrap();
    let events = store.read(|r| r.events_after(&s.id, before, 100)).unwrap();
    assert_eq!(events.len(), 1, "200 updates of one part commit as one");
    assert_eq!(events[0].kind, opencode_session_store::EventKind::PartUpdated);
    drop(store);

    let reopened = Store::open(dir.db()).unwrap();
    let message = reopened.read(|r| r.message(answer.id())).unwrap().unwrap();
    assert_eq!(texts(std::slice::from_ref(&message)), vec!["answer t".to_owned(), streamed]);
}

#[test]
fn the_event_hook_sees_committed_events_in_order_and_never_rolled_back_ones() {
    let (_dir, store) = store();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    store.add_event_hook(Arc::new(move |events| sink.lock().unwrap().extend(events.iter().map(|e| e.seq))));
    let s = session(&store);
    let failed: Result<(), StoreError> = store.write(|tx| {
        tx.append_message(&user(&s.id))?;
        Err(StoreError::Invalid("abandon".into()))
    });
    assert!(failed.is_err());
    turn(&store, &s.id, "t");
    assert_eq!(*seen.lock().unwrap(), vec![1, 2, 3, 4, 5]);
    let stored: Vec<i64> = store.read(|r| r.events_after(&s.id, 0, 100)).unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(stored, vec![1, 2, 3, 4, 5]);
}

#[test]
fn parts_of_unknown_messages_are_refused() {
    let (_dir, store) = store();
    let s = session(&store);
    let orphan = Part {
        id: id::ascending(IdKind::Part),
        session_id: s.id,
        message_id: "msg_000000000000missing".into(),
        kind: PartKind::StepStart { snapshot: None },
    };
    let err = store.write(|tx| tx.upsert_part(&orphan)).unwrap_err();
    assert_eq!(err.to_string(), "message msg_000000000000missing not found");
}

fn running() -> ToolState {
    ToolState::Running {
        input: json!({"command": "ls"}),
        title: None,
        metadata: None,
        time: ToolStartTime { start: 1 },
    }
}

fn tool_kind(state: ToolState) -> PartKind {
    PartKind::Tool { call_id: "call_1".into(), tool: "bash".into(), state, metadata: None }
}

fn tool_part(message: &MessageInfo, state: ToolState) -> Part {
    Part {
        id: id::ascending(IdKind::Part),
        session_id: message.session_id().into(),
        message_id: message.id().into(),
        kind: tool_kind(state),
    }
}

#[test]
fn a_refused_staged_part_is_reported_by_flush_without_blocking_other_writes() {
    let (_dir, store) = store();
    let s = session(&store);
    let (_, answer) = turn(&store, &s.id, "t");
    let good = text(&answer, "kept");
    let orphan = Part { message_id: "msg_000000000000missing".into(), ..text(&answer, "lost") };
    store.stage_part(orphan).unwrap();
    store.stage_part(good.clone()).unwrap();
    turn(&store, &s.id, "later");
    let err = store.flush().unwrap_err();
    assert_eq!(err.to_string(), "message msg_000000000000missing not found");
    store.flush().unwrap();
    let message = store.read(|r| r.message(answer.id())).unwrap().unwrap();
    assert_eq!(message.parts.last(), Some(&good));
    assert_eq!(store.read(|r| r.full_history(&s.id)).unwrap().len(), 4);
}

#[test]
fn history_reads_the_same_after_the_caches_are_released_and_writes_go_on() {
    let (_dir, store) = store();
    let session = session(&store);
    for label in ["one", "two", "three"] {
        turn(&store, &session.id, label);
    }
    let before = store.read(|r| r.full_history(&session.id)).unwrap();
    store.release_memory();
    assert_eq!(store.read(|r| r.full_history(&session.id)).unwrap(), before);
    turn(&store, &session.id, "four");
    store.release_memory();
    let after = store.read(|r| r.full_history(&session.id)).unwrap();
    assert_eq!(&after[..6], &before[..]);
    assert_eq!(texts(&after[6..]), ["question four", "answer four"]);
}
