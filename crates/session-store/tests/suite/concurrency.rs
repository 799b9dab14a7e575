//! Concurrency: five processes write at once (four sessions, two writers on one of them); no write is
//! lost and no "database is locked" reaches them.
//!
//! The writers are this test binary re-invoked on this one test with `WRITER_ENV` set.

use std::process::Command;
use std::process::Stdio;

use opencode_session_store::NewSession;
use opencode_session_store::Store;

use super::support::PROJECT;
use super::support::TempDir;
use super::support::add_project;
use super::support::turn;

const WRITER_ENV: &str = "SESSION_STORE_WRITER";
const TEST_NAME: &str = "suite::concurrency::five_processes_write_at_once_without_lost_writes_or_busy_errors";
const TURNS: usize = 150;

#[test]
fn five_processes_write_at_once_without_lost_writes_or_busy_errors() {
    if let Ok(spec) = std::env::var(WRITER_ENV) {
        let (path, session) = spec.split_once('|').unwrap();
        let store = Store::open(path).unwrap();
        for i in 0..TURNS {
            turn(&store, session, &format!("{}-{i}", std::process::id()));
        }
        return;
    }
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    add_project(&store);
    let sessions: Vec<String> =
        (0..4).map(|_| store.write(|tx| tx.create_session(NewSession::new(PROJECT, "/w"))).unwrap().id).collect();
    let writers: Vec<_> = sessions
        .iter()
        .chain(std::iter::once(&sessions[0]))
        .map(|session| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", TEST_NAME, "--nocapture", "--test-threads", "1"])
                .env(WRITER_ENV, format!("{}|{session}", dir.db().display()))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for writer in writers {
        let output = writer.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "a writer failed: {stderr}");
        assert!(!stderr.contains("locked"), "{stderr}");
    }
    for (i, session) in sessions.iter().enumerate() {
        let expected = if i == 0 { 2 * TURNS } else { TURNS };
        let messages = store.read(|r| r.full_history(session)).unwrap();
        assert_eq!(messages.len(), 2 * expected, "session {i}");
        let events = store.read(|r| r.events_after(session, 0, 100_000)).unwrap();
        // session.created, then per turn: 2 messages + 2 parts.
        assert_eq!(events.len(), 1 + 4 * expected, "session {i}");
        assert!(events.iter().enumerate().all(|(n, e)| e.seq == n as i64 + 1), "event sequence has gaps");
    }
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

/// Writers on several threads: the event hook sees every commit's events in commit order (their
/// sequence numbers only grow), so a subscriber never sees a later state before an earlier one.
#[test]
fn concurrent_writers_publish_events_in_commit_order() {
    let (_dir, store) = super::support::store();
    let store = std::sync::Arc::new(store);
    let session = super::support::session(&store);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = std::sync::Arc::clone(&seen);
    store.add_event_hook(std::sync::Arc::new(move |events| {
        record.lock().unwrap().extend(events.iter().map(|event| event.seq));
    }));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (store, id) = (std::sync::Arc::clone(&store), session.id.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    store.write(|tx| tx.touch_session(&id)).unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 200);
    assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "published out of commit order: {seen:?}");
}
