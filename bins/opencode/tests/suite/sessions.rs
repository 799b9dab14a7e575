//! `opencode session list|show|delete`, `opencode export` and `opencode import`.

use opencode_mock_provider::MockProvider;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Home, stderr, stdout, text, tool_call};

#[test]
fn export_import_round_trip_and_list_show_delete() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    let home = Home::new();
    std::fs::write(home.work().join("a.txt"), "alpha\n").unwrap();
    mock.push_all([tool_call("call_1", "read", json!({"filePath": "a.txt"})), text("It says alpha.")]);
    let run = home.run(&mock, &["--title", "reading", "read a.txt"]).output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));

    let exported = home.with_mock(&mock, &["export"]).output().unwrap();
    assert!(exported.status.success(), "{}", stderr(&exported));
    let original: Value = serde_json::from_str(&stdout(&exported)).unwrap();
    let id = original["info"]["id"].as_str().unwrap().to_owned();
    assert_eq!(original["info"]["title"], "reading");
    let roles: Vec<&str> =
        original["messages"].as_array().unwrap().iter().map(|m| m["info"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "assistant"]);
    let parts: Vec<&str> =
        original["messages"][1]["parts"].as_array().unwrap().iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(parts, ["step-start", "tool", "step-finish"]);

    let list = home.with_mock(&mock, &["session", "list"]).output().unwrap();
    let table = stdout(&list);
    assert!(table.starts_with("ID "), "{table}");
    assert!(table.lines().nth(1).unwrap().starts_with(&id) && table.contains("reading"), "{table}");

    let show = home.with_mock(&mock, &["session", "show", &id]).output().unwrap();
    let transcript = stdout(&show);
    assert!(transcript.starts_with(&format!("{id}  reading\n")), "{transcript}");
    for expected in ["── user\nread a.txt\n", "| read     a.txt\n", "── assistant mock/m\nIt says alpha.\n"] {
        assert!(transcript.contains(expected), "{expected:?} in {transcript}");
    }

    // Import refuses to overwrite; after a delete it restores the same session.
    let file = home.path().join("export.json");
    std::fs::write(&file, stdout(&exported)).unwrap();
    let file = file.to_str().unwrap();
    let conflict = home.with_mock(&mock, &["import", file]).output().unwrap();
    assert_eq!(conflict.status.code(), Some(1));
    assert!(stderr(&conflict).starts_with(&format!("error: session {id} already exists\n")), "{}", stderr(&conflict));
    let delete = home.with_mock(&mock, &["session", "delete", &id]).output().unwrap();
    assert!(delete.status.success(), "{}", stderr(&delete));
    let gone = home.with_mock(&mock, &["session", "show", &id]).output().unwrap();
    assert_eq!(gone.status.code(), Some(1));
    assert!(stderr(&gone).starts_with(&format!("error: no session `{id}`")), "{}", stderr(&gone));
    let import = home.with_mock(&mock, &["import", file]).output().unwrap();
    assert!(import.status.success(), "{}", stderr(&import));
    assert_eq!(stderr(&import), format!("imported session {id} (3 messages)\n"));
    let again = home.with_mock(&mock, &["export", &id]).output().unwrap();
    let restored: Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(restored["messages"], original["messages"]);
    assert_eq!(restored["info"]["title"], original["info"]["title"]);
    assert_eq!(restored["info"]["tokens"], original["info"]["tokens"]);
}

#[test]
fn bad_input_is_a_clear_error() {
    let home = Home::new();
    let file = home.path().join("bad.json");
    std::fs::write(&file, "{\"info\": 1}").unwrap();
    let import = home.opencode(&["import", file.to_str().unwrap()]).output().unwrap();
    assert_eq!(import.status.code(), Some(1));
    assert!(stderr(&import).contains("is not an exported session"), "{}", stderr(&import));
    let export = home.opencode(&["export"]).output().unwrap();
    assert_eq!(export.status.code(), Some(1));
    assert!(stderr(&export).starts_with("error: no session in "), "{}", stderr(&export));
    let delete = home.opencode(&["session", "delete", "ses_missing"]).output().unwrap();
    assert_eq!(delete.status.code(), Some(1));
    assert!(stderr(&delete).starts_with("error: no session `ses_missing`"), "{}", stderr(&delete));
    let list = home.opencode(&["session", "list"]).output().unwrap();
    assert!(list.status.success());
    assert_eq!(stdout(&list), "");
}
