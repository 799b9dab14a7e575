//! The transform pass: byte-identity of defer passes and restarts, the bust taxonomy, the
//! scheduler's triggers, drops and the protected tail.

use opencode_llm::ContentPart;
use opencode_llm::Message;
use opencode_llm::Role;
use opencode_llm::ToolResultValue;
use opencode_magic_context::Decision;
use opencode_magic_context::MagicContextConfig;
use opencode_magic_context::Materialized;
use opencode_magic_context::render::EMPTY_M1;
use pretty_assertions::assert_eq;

use super::sessions;
use super::support::*;

/// Property: over many seeded sessions, every defer pass sends the previous pass's messages
/// byte for byte, followed only by the new tail.
#[test]
fn a_defer_pass_is_byte_identical_to_the_previous_pass() {
    for seed in 0..10 {
        let session = sessions::generate(seed, 30);
        let mut harness = Harness::new(config(48_000));
        let mut previous: Option<Vec<String>> = None;
        let mut defers = 0;
        for request in requests(&session, 20_000, true, true) {
            if request.now_ms % 7 == 0 {
                harness.engine.run_historian(SESSION, request.now_ms).unwrap();
            }
            let (messages, report) = harness.pass(&request.history, request.now_ms, &request.model);
            let current = bytes(&messages);
            if report.decision == Decision::Defer {
                defers += 1;
                let previous = previous.as_ref().unwrap();
                assert_eq!(
                    &current[..previous.len()],
                    &previous[..],
                    "seed {seed}: a defer pass changed earlier bytes"
                );
            }
            if report.historian_due {
                harness.engine.run_historian(SESSION, request.now_ms).unwrap();
            }
            previous = Some(current);
        }
        assert!(defers > 50, "seed {seed}: only {defers} defer passes");
    }
}

/// Property: an engine reopened from the database before every pass sends exactly what a
/// long-lived one sends, executes and HARD folds included.
#[test]
fn a_restart_replays_byte_identical() {
    for seed in 0..5 {
        let session = sessions::generate(seed, 30);
        let mut steady = Harness::new(config(48_000));
        let mut restarted = Harness::new(config(48_000));
        let mut executes = 0;
        for request in requests(&session, 30_000, true, true) {
            restarted.restart();
            let (expected, expected_report) = steady.pass(&request.history, request.now_ms, &request.model);
            let (actual, actual_report) = restarted.pass(&request.history, request.now_ms, &request.model);
            assert_eq!(bytes(&actual), bytes(&expected), "seed {seed}: restart changed the request");
            assert_eq!(actual_report, expected_report);
            executes += usize::from(expected_report.decision == Decision::Execute);
            if expected_report.historian_due {
                steady.engine.run_historian(SESSION, request.now_ms).unwrap();
                restarted.engine.run_historian(SESSION, request.now_ms).unwrap();
            }
        }
        assert!(executes >= 2, "seed {seed}: the replay never executed");
    }
}

/// Property: new compartments, memories and notes move watermarks; with the cache alive and no
/// pressure none of them makes a pass execute or change a byte already sent.
#[test]
fn no_bust_is_caused_by_a_watermark_moving_alone() {
    for seed in 0..6 {
        let session = sessions::generate(seed, 25);
        let mut harness = Harness::new(config(2_000_000));
        let mut previous: Option<Vec<String>> = None;
        for (index, request) in requests(&session, 10_000, false, false).into_iter().enumerate() {
            let (messages, report) = harness.pass(&request.history, request.now_ms, &request.model);
            let current = bytes(&messages);
            if let Some(previous) = &previous {
                assert_eq!(report.decision, Decision::Defer, "seed {seed} pass {index}: {}", report.reason);
                assert_eq!(&current[..previous.len()], &previous[..], "seed {seed} pass {index}");
            }
            harness.engine.run_historian(SESSION, request.now_ms).unwrap();
            let fact = format!("fact {index} of seed {seed}");
            harness.engine.write_memory(PROJECT, "CONFIG_VALUES", &fact, request.now_ms).unwrap();
            harness.engine.add_note(SESSION, &fact, request.now_ms).unwrap();
            previous = Some(current);
        }
    }
}

/// A few whole turns of history and the time after them.
fn history(turns: usize) -> Vec<Message> {
    sessions::history(&sessions::generate(3, turns.max(1)), turns)
}

#[test]
fn the_first_pass_renders_both_slots_ahead_of_the_tagged_history() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(2);
    let (messages, report) = harness.pass(&raw, 1_000, MODEL);
    assert_eq!(
        (report.decision, report.materialized, report.reason.as_str()),
        (Decision::Execute, Materialized::Hard, "first_render")
    );
    assert_eq!(messages.len(), raw.len() + 2);
    assert!(text(&messages[0]).starts_with("<session-history>"));
    assert_eq!(text(&messages[1]), EMPTY_M1);
    assert!(messages[..2].iter().all(|slot| slot.role == Role::User && slot.content[0].cache_hint().is_some()));
    assert_eq!(text(&messages[2]), format!("§1§ {}", text(&raw[0])));
}

#[test]
fn soft_re_renders_m1_and_keeps_m0_byte_identical() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(8);
    let (first, _) = harness.pass(&raw, 1_000, MODEL);
    assert!(harness.engine.run_historian(SESSION, 2_000).unwrap() > 0);
    assert!(harness.engine.flush(SESSION).unwrap());
    let (second, report) = harness.pass(&raw, 3_000, MODEL);
    assert_eq!(
        (report.decision, report.materialized, report.reason.as_str()),
        (Decision::Execute, Materialized::Soft, "flush")
    );
    assert_eq!(bytes(&second[..1]), bytes(&first[..1]));
    assert!(text(&second[1]).contains("## 0-"), "{}", text(&second[1]));
    assert!(second.len() < first.len(), "the compartments' messages left the request");
}

#[test]
fn hard_folds_m0_when_the_cache_is_already_dead() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(8);
    harness.pass(&raw, 1_000, MODEL);
    harness.engine.run_historian(SESSION, 2_000).unwrap();
    // Idle past the baseline's lifetime: the whole cache is gone, folding is free.
    let (idle, report) = harness.pass(&raw, 1_000 + 3_601_000, MODEL);
    assert_eq!((report.materialized, report.reason.as_str()), (Materialized::Hard, "ttl_expired"));
    assert!(text(&idle[0]).contains("## 0-"));
    assert_eq!(text(&idle[1]), EMPTY_M1);
    let (_, switched) = harness.pass(&raw, 3_700_000, "anthropic/claude-opus-4-1");
    assert_eq!((switched.materialized, switched.reason.as_str()), (Materialized::Hard, "model_switch"));
}

#[test]
fn after_a_pause_within_the_baselines_lifetime_m0_stays_and_the_dead_tail_is_folded() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(8);
    let (first, _) = harness.pass(&raw, 1_000, MODEL);
    assert_eq!(first[0].content[0].cache_hint().and_then(|hint| hint.ttl_seconds), Some(3_600));
    assert_eq!(first[1].content[0].cache_hint().and_then(|hint| hint.ttl_seconds), None);
    // Ten minutes idle: the five-minute entries after m[0] are gone, m[0]'s hour-long one is not.
    let (idle, report) = harness.pass(&raw, 1_000 + 600_000, MODEL);
    assert_eq!(
        (report.decision, report.materialized, report.reason.as_str()),
        (Decision::Execute, Materialized::Soft, "tail_expired")
    );
    assert_eq!(bytes(&idle[..1]), bytes(&first[..1]), "m[0] is replayed byte for byte");
    assert!(text(&idle[1]).contains("## 0-"), "the eligible history was folded into m[1]: {}", text(&idle[1]));
    assert!(idle.len() < first.len());
}

#[test]
fn hard_folds_m0_on_a_live_cache_only_when_its_content_changed() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(3);
    let (id, _) = harness.engine.write_memory(PROJECT, "CONSTRAINTS", "never log tokens", 500).unwrap();
    let (first, _) = harness.pass(&raw, 1_000, MODEL);
    assert!(text(&first[0]).contains("never log tokens"));
    // A new memory is additive: a flush shows it in m[1] and leaves m[0] alone.
    harness.engine.write_memory(PROJECT, "NAMING", "handlers end in _handler", 1_500).unwrap();
    harness.engine.flush(SESSION).unwrap();
    let (soft, report) = harness.pass(&raw, 2_000, MODEL);
    assert_eq!(report.materialized, Materialized::Soft);
    assert_eq!(bytes(&soft[..1]), bytes(&first[..1]));
    assert!(text(&soft[1]).contains("handlers end in _handler"));
    // Archiving one is not: m[0] must stop showing it, so the next executing pass folds.
    assert!(harness.engine.archive_memory(PROJECT, id).unwrap());
    let (_, unchanged) = harness.pass(&raw, 3_000, MODEL);
    assert_eq!(unchanged.decision, Decision::Defer, "the epoch moving alone does not execute");
    harness.engine.flush(SESSION).unwrap();
    let (hard, report) = harness.pass(&raw, 4_000, MODEL);
    assert_eq!((report.materialized, report.reason.as_str()), (Materialized::Hard, "flush+m0_changed"));
    assert!(!text(&hard[0]).contains("never log tokens"));
}

/// Big tool outputs until the window is nearly full, ending on a tool result (mid tool loop).
fn pressure_history(outputs: usize) -> Vec<Message> {
    let mut raw = vec![Message::user("Read every module and summarise the error handling.")];
    for index in 0..outputs {
        let id = format!("call_{index}");
        raw.push(Message::assistant(vec![ContentPart::ToolCall {
            id: id.clone(),
            name: "read".into(),
            input: serde_json::json!({"filePath": format!("src/m{index}.rs")}),
            provider_executed: false,
            provider_metadata: None,
        }]));
        raw.push(Message::tool_result(id, "read", ToolResultValue::Text(format!("{index} {}", "x".repeat(8_000)))));
    }
    raw
}

#[test]
fn pressure_waits_for_the_turn_start_and_then_reclaims_well_below_the_threshold() {
    let mut harness = Harness::new(config(40_000));
    let mut raw = pressure_history(14);
    harness.pass(&raw[..3], 1_000, MODEL);
    let (_, mid_loop) = harness.pass(&raw, 2_000, MODEL);
    assert!(mid_loop.usage_tokens * 100 / 40_000 >= 65, "{mid_loop:?}");
    assert_eq!(mid_loop.decision, Decision::Defer, "mid tool loop the execute waits");
    raw.push(Message::assistant(vec![ContentPart::text("Summary follows.")]));
    raw.push(Message::user("Thanks. Now fix the first one."));
    let (messages, turn_start) = harness.pass(&raw, 3_000, MODEL);
    assert_eq!((turn_start.decision, turn_start.reason.as_str()), (Decision::Execute, "pressure"));
    assert!(turn_start.usage_tokens <= 40_000 * 40 / 100, "{turn_start:?}");
    let dropped = messages.iter().flat_map(|m| &m.content).filter(|part| {
        matches!(part, ContentPart::ToolResult { result: ToolResultValue::Text(text), .. } if text.starts_with("[dropped §"))
    });
    assert_eq!(dropped.count(), turn_start.dropped_now);
}

#[test]
fn past_the_force_line_drops_run_even_mid_tool_loop() {
    let mut harness = Harness::new(config(40_000));
    let raw = pressure_history(18);
    harness.pass(&raw[..3], 1_000, MODEL);
    let (_, report) = harness.pass(&raw, 2_000, MODEL);
    assert_eq!((report.decision, report.reason.as_str()), (Decision::Execute, "emergency"));
    assert!(report.usage_tokens < 40_000 * 85 / 100, "{report:?}");
}

#[test]
fn a_reduced_tag_becomes_the_one_placeholder_and_keeps_its_tool_call() {
    let mut harness = Harness::new(config(200_000));
    let raw = pressure_history(30);
    harness.pass(&raw, 1_000, MODEL);
    // Tag 1 is the user text; tag 2 the first tool result.
    harness.engine.reduce(SESSION, "2", 1_500).unwrap();
    let (deferred, report) = harness.pass(&raw, 2_000, MODEL);
    assert_eq!(report.decision, Decision::Defer, "a queued drop waits for an executing pass");
    assert!(!text_of_result(&deferred[4]).starts_with("[dropped"));
    harness.engine.flush(SESSION).unwrap();
    let (messages, _) = harness.pass(&raw, 3_000, MODEL);
    assert_eq!(text_of_result(&messages[4]), "[dropped §2§]");
    assert!(matches!(&messages[3].content[0], ContentPart::ToolCall { id, .. } if id == "call_0"));
}

fn text_of_result(message: &Message) -> String {
    match &message.content[0] {
        ContentPart::ToolResult { result, .. } => result.to_text(),
        other => panic!("not a tool result: {other:?}"),
    }
}

#[test]
fn protected_tags_are_never_dropped() {
    let mut harness = Harness::new(config(200_000));
    let raw = pressure_history(30);
    harness.pass(&raw, 1_000, MODEL);
    let newest = (raw.len() / 2 + 1).to_string();
    harness.engine.reduce(SESSION, &newest, 1_500).unwrap();
    harness.engine.flush(SESSION).unwrap();
    let (messages, report) = harness.pass(&raw, 2_000, MODEL);
    assert_eq!(report.dropped_now, 0);
    assert!(!text_of_result(messages.last().unwrap()).starts_with("[dropped"));
    assert_eq!(harness.engine.status(SESSION).unwrap().unwrap().pending, 1, "the drop waits in the queue");
}

#[test]
fn bad_tool_input_is_a_one_line_error_not_a_panic() {
    let mut harness = Harness::new(config(200_000));
    harness.pass(&history(1), 1_000, MODEL);
    let error = harness.engine.reduce(SESSION, "999", 2_000).unwrap_err();
    assert!(error.to_string().starts_with("no tag §999§ in this session (tags are 1..="), "{error}");
    assert_eq!(harness.engine.expand(SESSION, 5, 2, 100).unwrap_err().to_string(), "end 2 is before start 5");
    assert!(harness.engine.reduce("ses_unknown", "1", 0).is_err());
}

#[test]
fn a_rewritten_history_starts_over() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(8);
    harness.pass(&raw, 1_000, MODEL);
    harness.engine.run_historian(SESSION, 1_500).unwrap();
    harness.engine.flush(SESSION).unwrap();
    let (managed, _) = harness.pass(&raw, 2_000, MODEL);
    assert!(managed.len() < raw.len() + 2, "compartments cover the start");
    let compacted = vec![Message::user("Summary of what happened."), raw.last().unwrap().clone()];
    let (messages, report) = harness.pass(&compacted, 3_000, MODEL);
    assert_eq!((report.materialized, report.reason.as_str()), (Materialized::Hard, "history_rewritten"));
    assert_eq!(text(&messages[2]), "§1§ Summary of what happened.");
    assert_eq!(harness.engine.status(SESSION).unwrap().unwrap().compartments, 0);
}

#[test]
fn a_changed_raw_tail_is_tagged_again_and_nothing_before_it_moves() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(3);
    let mut with_transient = raw.clone();
    with_transient.push(Message::assistant(vec![ContentPart::text("Maximum steps reached: answer now.")]));
    let (first, _) = harness.pass(&with_transient, 1_000, MODEL);
    let mut next = raw.clone();
    next.push(Message::user("Carry on."));
    let (second, report) = harness.pass(&next, 2_000, MODEL);
    assert_eq!(report.decision, Decision::Defer);
    assert_eq!(bytes(&second[..raw.len() + 2]), bytes(&first[..raw.len() + 2]));
    let transient_tag = text(first.last().unwrap());
    let number = transient_tag.split('§').nth(1).unwrap();
    assert_eq!(text(second.last().unwrap()), format!("§{number}§ Carry on."), "the freed tag number is reused");
    harness.restart();
    let (replayed, _) = harness.pass(&next, 3_000, MODEL);
    assert_eq!(bytes(&replayed), bytes(&second), "the truncation was persisted");
}

#[test]
fn search_and_expand_reach_history_that_left_the_request() {
    let mut harness = Harness::new(config(200_000));
    let mut raw = history(6);
    raw.insert(0, Message::user("Remember: the staging database port is 6543."));
    raw.insert(1, Message::assistant(vec![ContentPart::text("Noted.")]));
    harness.pass(&raw, 1_000, MODEL);
    harness.engine.run_historian(SESSION, 1_500).unwrap();
    harness.engine.flush(SESSION).unwrap();
    let (messages, _) = harness.pass(&raw, 2_000, MODEL);
    assert!(!bytes(&messages[2..]).concat().contains("Remember: the staging"));
    let hits = harness.engine.search(SESSION, PROJECT, "staging database port", 5).unwrap();
    assert_eq!((hits[0].source, hits[0].reference), ("message", 0));
    assert!(
        harness
            .engine
            .expand(SESSION, 0, 1, 10_000)
            .unwrap()
            .contains("[0] user: Remember: the staging database port is 6543.")
    );
}

#[test]
fn state_from_a_newer_build_is_refused_with_its_reason() {
    let harness = Harness::new(config(200_000));
    let path = harness.path();
    let conn = rusqlite_connection(&path);
    conn.execute("INSERT INTO schema_migrations VALUES (99, 'future', 0)", []).unwrap();
    drop(conn);
    let error = opencode_magic_context::Store::open(&path).err().unwrap();
    assert_eq!(
        error.to_string(),
        "magic context state: stored value unreadable: schema version 99 is newer than this build understands (3); upgrade opencode"
    );
}

#[test]
fn compartments_written_before_versions_existed_read_their_versions_from_their_text() {
    let mut harness = Harness::new(config(200_000));
    harness.pass(&history(8), 1_000, MODEL);
    harness.engine.run_historian(SESSION, 2_000).unwrap();
    let store = opencode_magic_context::Store::open(&harness.path()).unwrap();
    let written = store.compartments(SESSION).unwrap();
    let conn = rusqlite_connection(&harness.path());
    conn.execute("UPDATE compartments SET p2 = NULL, p3 = NULL, p4 = NULL", []).unwrap();
    let legacy = store.compartments(SESSION).unwrap();
    assert!(!legacy.is_empty());
    assert_eq!(legacy, written, "the digest's versions are what its text derives");
}

fn rusqlite_connection(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn near_the_threshold_a_nudge_names_the_largest_old_outputs_once_per_growth_step() {
    let mut harness = Harness::new(config(40_000));
    let mut raw = pressure_history(10);
    if let Some(ContentPart::ToolResult { result, .. }) = raw[6].content.first_mut() {
        *result = ToolResultValue::Text("y".repeat(16_000));
    }
    harness.pass(&raw[..3], 1_000, MODEL);
    assert_eq!(harness.engine.nudge(SESSION).unwrap(), None, "far below the threshold");
    let (_, report) = harness.pass(&raw, 2_000, MODEL);
    assert!(report.usage_tokens * 100 / 40_000 >= 55, "{report:?}");
    let nudge = harness.engine.nudge(SESSION).unwrap().unwrap();
    assert!(nudge.starts_with("<system-reminder>Context is at "), "{nudge}");
    assert!(nudge.contains("no longer need: §4§ read (4000 tokens), §2§ read (2001 tokens), §3§ read"), "{nudge}");
    assert_eq!(harness.engine.nudge(SESSION).unwrap(), None, "not again until usage grows");
    let mut quiet = Harness::new(MagicContextConfig { ctx_reduce_enabled: false, ..config(40_000) });
    quiet.pass(&raw, 2_000, MODEL);
    assert_eq!(quiet.engine.nudge(SESSION).unwrap(), None, "no nudges without ctx_reduce");
}

fn digested(job: &opencode_magic_context::HistorianJob) -> opencode_magic_context::historian::Answer {
    let compartments = opencode_magic_context::historian::digest(&job.rows, job.next_sequence);
    opencode_magic_context::historian::Answer { compartments, facts: Vec::new() }
}

#[test]
fn a_historian_job_gone_stale_meanwhile_publishes_nothing() {
    let mut harness = Harness::new(config(200_000));
    let raw = history(8);
    harness.pass(&raw, 1_000, MODEL);
    let job = harness.engine.historian_job(SESSION).unwrap().unwrap();
    let digest = digested(&job);
    // The host reverts to the first turn while the historian works.
    let first_turn = raw.iter().skip(1).position(|m| m.role == Role::User).unwrap() + 1;
    harness.pass(&raw[..first_turn], 2_000, MODEL);
    assert_eq!(harness.engine.publish_historian(&job, &digest, 3_000).unwrap(), 0);
    assert_eq!(harness.engine.status(SESSION).unwrap().unwrap().compartments, 0);
    harness.pass(&raw, 4_000, MODEL);
    let fresh = harness.engine.historian_job(SESSION).unwrap().unwrap();
    let digest = digested(&fresh);
    assert!(harness.engine.publish_historian(&fresh, &digest, 5_000).unwrap() > 0);
}
