//! Importing OpenCode's history: every part kind and usage unchanged, parents before children,
//! idempotent, resumable, read-only on the source, unmappable rows skipped by id, the older JSON layout.

use std::path::Path;

use opencode_session_store::ImportCounts;
use opencode_session_store::ImportReport;
use opencode_session_store::OpenCodeData;
use opencode_session_store::Store;
use opencode_session_store::StoreError;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::opencode_fixture::OpenCodeDb;
use super::opencode_fixture::assistant_message;
use super::opencode_fixture::user_message;
use super::support::TempDir;

const ROOT: &str = "ses_20dca3310001rootAAAAAAAAA";
const CHILD: &str = "ses_20dca3310002childAAAAAAAA";

/// The 12 part kinds as OpenCode 1.18 writes them (without ids).
fn every_part_kind() -> Vec<Value> {
    vec![
        json!({"type": "step-start", "snapshot": "530a96bf"}),
        json!({"type": "reasoning", "text": "thinking", "time": {"start": 1, "end": 2}, "metadata": {"x": 1}}),
        json!({"type": "text", "text": "hello", "time": {"start": 1, "end": 2}}),
        json!({"type": "tool", "tool": "bash", "callID": "call_1", "state": {"status": "completed",
            "input": {"command": "ls"}, "output": "a\nb\n", "metadata": {"exit": 0, "truncated": false},
            "title": "ls", "time": {"start": 3, "end": 4}}}),
        json!({"type": "tool", "tool": "bash", "callID": "call_2", "state": {"status": "error",
            "input": {"command": "sleep 9"}, "error": "Tool execution aborted", "time": {"start": 5, "end": 6}}}),
        json!({"type": "file", "mime": "text/plain", "filename": "a.txt", "url": "file:///work/a.txt"}),
        json!({"type": "snapshot", "snapshot": "530a96bf"}),
        json!({"type": "patch", "hash": "530a96bf", "files": ["/work/a.txt"]}),
        json!({"type": "agent", "name": "explore"}),
        json!({"type": "compaction", "auto": true}),
        json!({"type": "subtask", "prompt": "look", "description": "Look around", "agent": "general"}),
        json!({"type": "retry", "attempt": 1, "error": {"name": "APIError", "data": {"message": "overloaded"}},
            "time": {"created": 7}}),
        json!({"type": "step-finish", "reason": "stop", "snapshot": "530a96bf", "cost": 0.5,
            "tokens": {"input": 10, "output": 5, "reasoning": 1, "cache": {"read": 2, "write": 3}}}),
    ]
}

/// OpenCode's database with a root session (every part kind) and a child created before its parent.
fn opencode_data(dir: &TempDir) -> OpenCodeDb {
    let db = OpenCodeDb::create(&dir.path().join("opencode.db"));
    db.session(CHILD, Some(ROOT), "Look around (@general subagent)", 500);
    db.session(ROOT, None, "Every part kind", 1000);
    db.message("msg_20dca3310001user", ROOT, 1001, &user_message());
    db.part("prt_20dca3310001aaaa", "msg_20dca3310001user", ROOT, r#"{"type":"text","text":"do it"}"#);
    let mut aborted = assistant_message("msg_20dca3310001user");
    aborted["error"] = json!({"name": "MessageAbortedError", "data": {"message": "The operation was aborted."}});
    db.message("msg_20dca3310002asst", ROOT, 1002, &aborted);
    for (i, part) in every_part_kind().iter().enumerate() {
        db.part(&format!("prt_20dca3310002{i:04}"), "msg_20dca3310002asst", ROOT, &part.to_string());
    }
    db.message("msg_20dca3310003chld", CHILD, 501, &user_message());
    db.part("prt_20dca3310003aaaa", "msg_20dca3310003chld", CHILD, r#"{"type":"text","text":"look"}"#);
    db
}

fn import(data: &Path, store: &Store) -> ImportReport {
    OpenCodeData::open(data).unwrap().import_into(store, &mut |_| {}).unwrap()
}

fn counts(added: usize, present: usize) -> ImportCounts {
    ImportCounts { added, present }
}

/// Everything stored, as JSON, for before/after comparisons.
fn dump(store: &Store) -> Vec<Value> {
    let mut all = Vec::new();
    for id in [ROOT, CHILD] {
        if let Some(session) = store.read(|r| r.session(id)).unwrap() {
            all.push(serde_json::to_value(&session).unwrap());
            for message in store.read(|r| r.full_history(id)).unwrap() {
                all.push(serde_json::to_value(&message).unwrap());
            }
        }
    }
    all
}

#[test]
fn every_part_kind_tool_state_usage_and_child_session_come_across_unchanged() {
    let dir = TempDir::new();
    let _db = opencode_data(&dir);
    let store = Store::open(dir.path().join("ours.db")).unwrap();
    let report = import(dir.path(), &store);
    assert_eq!(report.skipped, vec![]);
    assert_eq!(
        (report.projects, report.sessions, report.messages, report.parts),
        (counts(1, 0), counts(2, 0), counts(3, 0), counts(15, 0))
    );

    let root = store.read(|r| r.session(ROOT)).unwrap().unwrap();
    assert_eq!(
        (root.title.as_str(), root.time.created, root.time.updated, root.cost),
        ("Every part kind", 1000, 2000, 0.25)
    );
    assert_eq!((root.tokens.input, root.tokens.output, root.tokens.cache.read), (1000, 50, 300));
    let child = store.read(|r| r.session(CHILD)).unwrap().unwrap();
    assert_eq!(child.parent_id.as_deref(), Some(ROOT));
    assert_eq!(store.read(|r| r.children(ROOT)).unwrap().len(), 1);

    let history = store.read(|r| r.full_history(ROOT)).unwrap();
    assert_eq!(history.len(), 2);
    let answer = serde_json::to_value(&history[1]).unwrap();
    assert_eq!(answer["info"]["error"]["name"], "MessageAbortedError");
    let parts: Vec<Value> = answer["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let mut p = p.clone();
            let object = p.as_object_mut().unwrap();
            for id in ["id", "sessionID", "messageID"] {
                object.remove(id);
            }
            p
        })
        .collect();
    assert_eq!(parts, every_part_kind());
}

#[test]
fn a_second_import_adds_and_changes_nothing() {
    let dir = TempDir::new();
    let _db = opencode_data(&dir);
    let store = Store::open(dir.path().join("ours.db")).unwrap();
    import(dir.path(), &store);
    let before = dump(&store);
    let again = import(dir.path(), &store);
    assert_eq!((again.sessions, again.messages, again.parts), (counts(0, 2), counts(0, 3), counts(0, 15)));
    assert_eq!(dump(&store), before);
}

#[test]
fn an_interrupted_import_continues_where_it_stopped() {
    let dir = TempDir::new();
    let db = opencode_data(&dir);
    let store = Store::open(dir.path().join("ours.db")).unwrap();
    import(dir.path(), &store);
    // What a kill after the first commit leaves: some sessions stored whole, the rest not at all.
    store.write(|tx| tx.remove_session(ROOT)).unwrap();
    let expected_after = {
        let fresh = Store::open(dir.path().join("fresh.db")).unwrap();
        import(dir.path(), &fresh);
        dump(&fresh)
    };
    let resumed = import(dir.path(), &store);
    assert_eq!((resumed.sessions, resumed.messages), (counts(2, 0), counts(3, 0)));
    assert_eq!(dump(&store), expected_after);
    // OpenCode used meanwhile: only the new message comes over.
    db.message("msg_20dca3310009late", ROOT, 3000, &user_message());
    let later = import(dir.path(), &store);
    assert_eq!((later.messages, later.parts), (counts(1, 3), counts(0, 15)));
}

#[test]
fn rows_that_do_not_map_are_reported_by_id_and_skipped() {
    let dir = TempDir::new();
    let db = opencode_data(&dir);
    db.part("prt_20dca3310002zzz1", "msg_20dca3310002asst", ROOT, "{not json");
    db.part("prt_20dca3310002zzz2", "msg_20dca3310002asst", ROOT, r#"{"type":"hologram"}"#);
    db.message("msg_20dca3310004bad", ROOT, 1004, &json!({"role": "user"}));
    db.part("prt_20dca3310004aaaa", "msg_20dca3310004bad", ROOT, r#"{"type":"text","text":"lost"}"#);
    db.part("prt_20dca3310005orph", "msg_20dca3310005gone", ROOT, r#"{"type":"text","text":"orphan"}"#);
    let store = Store::open(dir.path().join("ours.db")).unwrap();
    let report = import(dir.path(), &store);
    let skipped: Vec<(&str, &str)> = report.skipped.iter().map(|s| (s.kind, s.id.as_str())).collect();
    assert_eq!(
        skipped,
        vec![
            ("part", "prt_20dca3310005orph"),
            ("part", "prt_20dca3310002zzz1"),
            ("part", "prt_20dca3310002zzz2"),
            ("message", "msg_20dca3310004bad"),
            ("part", "prt_20dca3310004aaaa"),
        ]
    );
    assert!(report.skipped.iter().all(|s| !s.reason.is_empty()));
    assert_eq!((report.sessions, report.messages, report.parts), (counts(2, 0), counts(3, 0), counts(15, 0)));
}

#[test]
fn the_source_database_and_its_log_are_never_written() {
    let dir = TempDir::new();
    let db = opencode_data(&dir);
    let files = ["opencode.db", "opencode.db-wal"];
    let read = || files.map(|f| std::fs::read(dir.path().join(f)).unwrap());
    let before = read();
    let store = Store::open(dir.path().join("ours.db")).unwrap();
    import(dir.path(), &store);
    import(dir.path(), &store);
    assert!(!before[1].is_empty(), "the rows are still in OpenCode's write-ahead log");
    assert!(read() == before, "OpenCode's files are byte for byte the same");
    drop(db);
}

#[test]
fn the_older_json_storage_layout_is_imported_too() {
    let dir = TempDir::new();
    let storage = dir.path().join("storage");
    let write = |path: &str, json: Value| {
        let file = storage.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, json.to_string()).unwrap();
    };
    write(
        "project/global.json",
        json!({"id": "global", "worktree": "/", "time": {"created": 1, "updated": 1}, "sandboxes": []}),
    );
    write(
        &format!("session/global/{ROOT}.json"),
        json!({"id": ROOT, "projectID": "global", "directory": "/old", "title": "From 0.x", "version": "0.15.0",
            "time": {"created": 10, "updated": 20}}),
    );
    let mut user = user_message();
    user["id"] = json!("msg_1old");
    user["sessionID"] = json!(ROOT);
    write(&format!("message/{ROOT}/msg_1old.json"), user);
    write(
        "part/msg_1old/prt_1old.json",
        json!({"id": "prt_1old", "sessionID": ROOT, "messageID": "msg_1old", "type": "text", "text": "old times"}),
    );
    let mut answer = assistant_message("msg_1old");
    answer.as_object_mut().unwrap().remove("agent");
    write(&format!("message/{ROOT}/msg_2old.json"), answer);
    let store = Store::open(dir.path().join("ours.db")).unwrap();
    let report = import(dir.path(), &store);
    assert_eq!(report.skipped, vec![]);
    assert_eq!((report.sessions, report.messages, report.parts), (counts(1, 0), counts(2, 0), counts(1, 0)));
    let session = store.read(|r| r.session(ROOT)).unwrap().unwrap();
    assert_eq!((session.title.as_str(), session.directory.as_str(), session.time.updated), ("From 0.x", "/old", 20));
    let history = store.read(|r| r.full_history(ROOT)).unwrap();
    assert_eq!(serde_json::to_value(&history[0].parts[0]).unwrap()["text"], "old times");
    assert_eq!(
        serde_json::to_value(&history[1].info).unwrap()["agent"],
        "build",
        "an old message's mode names its agent"
    );
}

#[test]
fn a_file_that_is_not_opencodes_database_is_refused_in_one_line() {
    let dir = TempDir::new();
    let missing = OpenCodeData::open(dir.path()).err().unwrap();
    assert!(matches!(missing, StoreError::ImportSource { .. }), "{missing}");
    assert!(missing.to_string().contains("no OpenCode data here"), "{missing}");
    drop(Store::open(dir.path().join("opencode.db")).unwrap());
    let ours = OpenCodeData::open(dir.path()).err().unwrap();
    assert!(ours.to_string().contains("not an OpenCode 1.x database"), "{ours}");
    assert_eq!(ours.to_string().lines().count(), 1);
}
