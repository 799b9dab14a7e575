#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! Import of OpenCode's history (run with `cargo xtask bench opencode-session-store`, or
//! `cargo bench -p opencode-session-store --bench import`).
//!
//! A synthetic database in OpenCode 1.18's layout: 100 sessions of 50 tool turns each, so 10,000
//! messages and 25,000 parts (a user text; an assistant step-start, completed bash call, text and
//! step-finish), still in OpenCode's write-ahead log as a live OpenCode leaves it. Measured: a first
//! import into an empty store, and a second import of the same data (which adds nothing). Target:
//! 10,000 messages in ≤ 5 s.

#[path = "../tests/suite/opencode_fixture.rs"]
mod opencode_fixture;

use std::time::Duration;
use std::time::Instant;

use opencode_session_store::OpenCodeData;
use opencode_session_store::Store;

use self::opencode_fixture::OpenCodeDb;

const SESSIONS: usize = 100;
const TURNS: usize = 50;
const ROUNDS: usize = 5;

fn main() {
    let dir = std::env::temp_dir().join(format!("session-store-import-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let source = dir.join("opencode");
    std::fs::create_dir_all(&source).expect("source dir");
    let db = write_source(&source);
    println!(
        "import of OpenCode's history (release; {SESSIONS} sessions x {TURNS} turns = {} messages)",
        SESSIONS * TURNS * 2
    );

    let mut first = Vec::new();
    let mut second = Vec::new();
    for round in 0..ROUNDS {
        let target = dir.join(format!("ours-{round}.db"));
        let store = Store::open(&target).expect("store");
        let started = Instant::now();
        let report = OpenCodeData::open(&source).unwrap().import_into(&store, &mut |_| {}).unwrap();
        first.push(started.elapsed());
        assert_eq!(report.messages.added, SESSIONS * TURNS * 2);
        assert_eq!(report.parts.added, SESSIONS * TURNS * 5);
        let started = Instant::now();
        let again = OpenCodeData::open(&source).unwrap().import_into(&store, &mut |_| {}).unwrap();
        second.push(started.elapsed());
        assert_eq!(again.messages.added, 0);
    }
    report("first import (empty store)", &mut first);
    report("second import (nothing new)", &mut second);
    drop(db);
    std::fs::remove_dir_all(&dir).ok();
}

fn write_source(dir: &std::path::Path) -> OpenCodeDb {
    let db = OpenCodeDb::create(&dir.join("opencode.db"));
    db.conn.execute_batch("BEGIN").unwrap();
    for s in 0..SESSIONS {
        let created = 1_795_000_000_000 + i64::try_from(s).unwrap() * 1_000_000;
        let session = format!("ses_{created:012x}bench{s:08}");
        db.session(&session, None, &format!("Session {s}"), created);
        for t in 0..TURNS {
            db.turn(&session, t, created + i64::try_from(t).unwrap() * 100);
        }
    }
    db.conn.execute_batch("COMMIT").unwrap();
    db
}

fn report(label: &str, times: &mut [Duration]) {
    times.sort();
    let median = times[times.len() / 2];
    let messages = (SESSIONS * TURNS * 2) as f64;
    println!(
        "  {label:<30} median {:>7.0} ms  best {:>7.0} ms  ({:.0} messages/s)",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        messages / median.as_secs_f64()
    );
}
