//! Crash safety: a writer process is SIGKILLed at random points while it appends turns, many times;
//! after each kill the database is intact, holds no partial turn, and holds every acknowledged turn.
//!
//! The writer is this test binary re-invoked on this one test with `CRASH_CHILD_ENV` set.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::io::Write;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Store;
use opencode_session_store::Tokens;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;

use super::support::PROJECT;
use super::support::TempDir;
use super::support::add_project;
use super::support::assistant;
use super::support::text;
use super::support::texts;
use super::support::user;

const CRASH_CHILD_ENV: &str = "SESSION_STORE_CRASH_CHILD";
const TEST_NAME: &str = "suite::crash::a_writer_killed_at_random_points_loses_no_acknowledged_turn";
const SESSION: &str = "ses_7fffffffffffcrashcrashcr";
const ROUNDS: u64 = 40;
const STREAMED_TOKENS: usize = 30;

#[test]
fn a_writer_killed_at_random_points_loses_no_acknowledged_turn() {
    if let Ok(spec) = std::env::var(CRASH_CHILD_ENV) {
        run_writer(&spec);
        return;
    }
    let dir = TempDir::new();
    let mut acknowledged = BTreeSet::new();
    for round in 0..ROUNDS {
        let (acks, status) = run_and_kill(&dir, round);
        assert!(status.code().is_none(), "round {round}: the writer should have been killed, not exit ({status})");
        acknowledged.extend(acks);

        let store = Store::open(dir.db()).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok", "round {round}");
        let committed = committed_turns(&store);
        let missing: Vec<_> = acknowledged.difference(&committed).collect();
        assert!(missing.is_empty(), "round {round}: acknowledged turns lost: {missing:?}");
    }
    assert!(acknowledged.len() >= 10, "too few turns acknowledged to mean anything: {}", acknowledged.len());
}

/// Starts a writer for `round`, kills it after a random delay, returns the turns it acknowledged.
fn run_and_kill(dir: &TempDir, round: u64) -> (Vec<u64>, std::process::ExitStatus) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
        .env(CRASH_CHILD_ENV, format!("{}|{round}", dir.db().display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(turn) = line.strip_prefix("ACK ") {
                tx.send(turn.parse::<u64>().unwrap()).ok();
            }
        }
    });
    // Rounds alternate between killing early (during start-up, open, migrations) and later (mid-stream).
    let delay = if round.is_multiple_of(2) { fastrand::u64(0..30) } else { fastrand::u64(30..150) };
    std::thread::sleep(Duration::from_millis(delay));
    child.kill().unwrap();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    (rx.try_iter().collect(), status)
}

/// Every turn in the database, after checking each one is complete.
fn committed_turns(store: &Store) -> BTreeSet<u64> {
    let Some(_) = store.read(|r| r.session(SESSION)).unwrap() else { return BTreeSet::new() };
    let messages = store.read(|r| r.full_history(SESSION)).unwrap();
    let mut turns = BTreeSet::new();
    for pair in messages.chunks(2) {
        let [question, answer] = pair else { panic!("a turn without its answer: {:?}", pair[0].info) };
        let (MessageInfo::User(_), MessageInfo::Assistant(a)) = (&question.info, &answer.info) else {
            panic!("turn out of order: {:?}", texts(pair))
        };
        assert_eq!(a.parent_id, question.info.id());
        let label = texts(std::slice::from_ref(question))[0].strip_prefix("question ").unwrap().to_owned();
        let answer_texts = texts(std::slice::from_ref(answer));
        assert_eq!(answer_texts[0], format!("answer {label}"), "partial turn");
        assert!(answer.parts.iter().any(|p| matches!(p.kind, PartKind::StepFinish { .. })), "turn {label} unfinished");
        turns.insert(label.parse().unwrap());
    }
    turns
}

/// The writer: appends turns forever, acknowledging each once its transaction (and streamed part) is
/// committed and flushed.
fn run_writer(spec: &str) {
    let (path, round) = spec.rsplit_once('|').unwrap();
    let round: u64 = round.parse().unwrap();
    let store = Store::open(path).unwrap();
    add_project(&store);
    store
        .write(|tx| tx.create_session(NewSession { id: Some(SESSION.into()), ..NewSession::new(PROJECT, "/w") }))
        .unwrap();
    let mut stdout = std::io::stdout();
    for i in 0.. {
        let label = round * 1_000_000 + i;
        let answer = store
            .write(|tx| {
                let question = user(SESSION);
                tx.append_message(&question)?;
                tx.upsert_part(&text(&question, &format!("question {label}")))?;
                let answer = assistant(SESSION, question.id(), 0.001, 10);
                tx.append_message(&answer)?;
                tx.upsert_part(&text(&answer, &format!("answer {label}")))?;
                tx.upsert_part(&step_finish(&answer))?;
                Ok(answer)
            })
            .unwrap();
        // A streamed part: coalesced updates, then a durable flush.
        let mut streamed = text(&answer, "");
        let mut body = String::new();
        for token in 0..STREAMED_TOKENS {
            body.push_str(&format!("t{token} "));
            streamed.kind =
                PartKind::Text { text: body.clone(), synthetic: None, ignored: None, time: None, metadata: None };
            store.stage_part(streamed.clone()).unwrap();
        }
        store.flush().unwrap();
        writeln!(stdout, "ACK {label}").unwrap();
        stdout.flush().unwrap();
    }
}

fn step_finish(message: &MessageInfo) -> Part {
    Part {
        id: id::ascending(IdKind::Part),
        session_id: message.session_id().into(),
        message_id: message.id().into(),
        kind: PartKind::StepFinish { reason: "stop".into(), snapshot: None, cost: 0.001, tokens: Tokens::default() },
    }
}
