//! Opening, migrations, newer schemas and damaged files.

use opencode_session_store::NewSession;
use opencode_session_store::Store;
use opencode_session_store::StoreError;

use super::support::PROJECT;
use super::support::TempDir;
use super::support::add_project;
use super::support::texts;

#[test]
fn a_new_database_is_created_at_the_latest_schema_and_reopens() {
    let dir = TempDir::new();
    let nested = dir.path().join("data/opencode/opencode.db");
    let store = Store::open(&nested).unwrap();
    assert_eq!(store.schema_version().unwrap(), Store::latest_schema_version());
    drop(store);
    let reopened = Store::open(&nested).unwrap();
    assert_eq!(reopened.schema_version().unwrap(), Store::latest_schema_version());
    assert_eq!(reopened.integrity_check().unwrap(), "ok");
}

#[test]
fn a_version_1_database_with_history_migrates_and_keeps_it() {
    let dir = TempDir::new();
    Store::create_at_version(dir.db(), 1).unwrap();
    // Rows as the first schema version wrote them, with plain SQL: no code of later versions involved.
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    conn.execute_batch(
        r#"
        INSERT INTO project (id, worktree, time_created, time_updated, data) VALUES ('prj_test', '/w', 1, 1,
          '{"id":"prj_test","worktree":"/w","time":{"created":1,"updated":1},"sandboxes":[]}');
        INSERT INTO session (id, project_id, directory, title, time_created, time_updated, data) VALUES
          ('ses_fffffffffff0aaaaaaaaaaaaaa', 'prj_test', '/w', 'Old', 1, 1,
           '{"id":"ses_fffffffffff0aaaaaaaaaaaaaa","slug":"old","projectID":"prj_test","directory":"/w","title":"Old","version":"1.0.0","time":{"created":1,"updated":1}}');
        INSERT INTO message (id, session_id, seq, role, time_created, data) VALUES
          ('msg_000000000001aaaaaaaaaaaaaa', 'ses_fffffffffff0aaaaaaaaaaaaaa', 1, 'user', 1,
           '{"role":"user","id":"msg_000000000001aaaaaaaaaaaaaa","sessionID":"ses_fffffffffff0aaaaaaaaaaaaaa","time":{"created":1},"agent":"build","model":{"providerID":"p","modelID":"m"}}');
        INSERT INTO part (id, message_id, session_id, message_seq, position, type, data) VALUES
          ('prt_000000000001aaaaaaaaaaaaaa', 'msg_000000000001aaaaaaaaaaaaaa', 'ses_fffffffffff0aaaaaaaaaaaaaa', 1, 0, 'text',
           '{"id":"prt_000000000001aaaaaaaaaaaaaa","sessionID":"ses_fffffffffff0aaaaaaaaaaaaaa","messageID":"msg_000000000001aaaaaaaaaaaaaa","type":"text","text":"hello from v1"}');
        "#,
    )
    .unwrap();
    drop(conn);

    let store = Store::open(dir.db()).unwrap();
    assert_eq!(store.schema_version().unwrap(), 2);
    let history = store.read(|r| r.history("ses_fffffffffff0aaaaaaaaaaaaaa", None, 10)).unwrap();
    assert_eq!(texts(&history.messages), vec!["hello from v1"]);
    // The tables version 2 added work on the migrated database.
    let admission = store
        .write(|tx| {
            tx.admit_input(
                "ses_fffffffffff0aaaaaaaaaaaaaa",
                None,
                serde_json::json!({"text": "next"}),
                opencode_session_store::Delivery::Steer,
            )
        })
        .unwrap();
    assert!(!admission.retried);
    assert_eq!(store.integrity_check().unwrap(), "ok");
}

#[test]
fn a_database_from_a_newer_program_is_refused_and_left_alone() {
    let dir = TempDir::new();
    drop(Store::open(dir.db()).unwrap());
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    conn.execute("INSERT INTO schema_migration (version, time_applied) VALUES (99, 0)", []).unwrap();
    drop(conn);

    let err = Store::open(dir.db()).err().expect("a newer schema must be refused");
    assert!(matches!(err, StoreError::NewerSchema { found: 99, known: 2, .. }), "{err}");
    assert!(err.to_string().contains(&dir.db().display().to_string()));
    assert!(err.hint().contains("upgrade"));
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    let max: i64 = conn.query_row("SELECT MAX(version) FROM schema_migration", [], |r| r.get(0)).unwrap();
    assert_eq!(max, 99);
}

#[test]
fn a_corrupt_file_is_reported_with_its_path_and_never_overwritten() {
    let dir = TempDir::new();
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(dir.db(), &garbage).unwrap();

    let err = Store::open(dir.db()).err().expect("garbage must not open");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains(&dir.db().display().to_string()), "{err}");
    assert!(err.hint().contains("move the file aside"));
    assert_eq!(std::fs::read(dir.db()).unwrap(), garbage);
}

#[test]
fn two_stores_on_one_file_see_each_others_writes() {
    let dir = TempDir::new();
    let first = Store::open(dir.db()).unwrap();
    add_project(&first);
    let second = Store::open(dir.db()).unwrap();
    let session = second.write(|tx| tx.create_session(NewSession::new(PROJECT, "/work/project"))).unwrap();
    let seen = first.read(|r| r.session(&session.id)).unwrap();
    assert_eq!(seen, Some(session));
}

#[test]
fn another_programs_database_is_refused_before_anything_is_written() {
    let dir = TempDir::new();
    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE project (id TEXT PRIMARY KEY, worktree TEXT NOT NULL);
         CREATE TABLE session (id TEXT PRIMARY KEY);
         INSERT INTO project VALUES ('global', '/');",
    )
    .unwrap();
    // Left open, as a running program would: its latest writes are still in the write-ahead log.
    let before = (std::fs::read(dir.db()).unwrap(), std::fs::read(dir.db().with_extension("db-wal")).ok());
    let err = Store::open(dir.db()).err().expect("refused");
    assert!(matches!(err, StoreError::Foreign { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("is not this program's session database"), "{message}");
    assert!(message.contains("project, session"), "{message}");
    assert!(!message.contains("CREATE"), "{message}");
    let after = (std::fs::read(dir.db()).unwrap(), std::fs::read(dir.db().with_extension("db-wal")).ok());
    assert!(before == after, "the other program's files changed");
    drop(conn);
}
