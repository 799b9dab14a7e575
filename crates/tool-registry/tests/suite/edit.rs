//! `edit` end to end: the replacer chain, CRLF files, ambiguity and the diff metadata.

use std::sync::Arc;

use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::tools::NoEnv;
use serde_json::json;

use super::support::Env;

fn env() -> Env {
    let env = Env::new();
    opencode_tool_registry::tools::register_filesystem_and_shell(&env.registry, Arc::new(NoEnv)).unwrap();
    env
}

async fn edit(env: &Env, input: serde_json::Value) -> Settlement {
    let ctx = env.ctx("build");
    env.registry.execute(&ToolCall { call_id: ctx.call_id.clone(), name: "edit".into(), input }, &ctx).await.unwrap()
}

fn read(env: &Env, path: &str) -> String {
    std::fs::read_to_string(env.project.join(path)).unwrap()
}

#[tokio::test]
async fn crlf_files_keep_their_line_endings() {
    let env = env();
    env.write("win.txt", "first\r\n    second\r\nthird\r\n");
    let done =
        edit(&env, json!({"filePath": "win.txt", "oldString": "second\nthird", "newString": "2nd\nthird\nfourth"}))
            .await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(read(&env, "win.txt"), "first\r\n    2nd\r\nthird\r\nfourth\r\n");
    // A fuzzy (line-trimmed) match keeps them too.
    let done =
        edit(&env, json!({"filePath": "win.txt", "oldString": "  2nd\n  third", "newString": "two\nthree"})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(read(&env, "win.txt"), "first\r\ntwo\r\nthree\r\nfourth\r\n");
    assert!(!done.metadata["diff"].as_str().unwrap().contains('\r'), "the diff is shown with LF");
}

#[tokio::test]
async fn the_result_carries_diff_and_filediff() {
    let env = env();
    env.write("src/lib.rs", "fn a() {\n    one();\n}\n");
    let done =
        edit(&env, json!({"filePath": "src/lib.rs", "oldString": "one();", "newString": "two();\n    three();"})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(done.text, "Edit applied successfully.");
    let diff = done.metadata["diff"].as_str().unwrap();
    assert!(diff.contains("--- src/lib.rs\n+++ src/lib.rs\n@@ -1,3 +1,4 @@\n"), "{diff}");
    assert!(diff.contains("\n-    one();\n+    two();\n+    three();\n"), "{diff}");
    let filediff = &done.metadata["filediff"];
    assert_eq!(filediff["file"], "src/lib.rs");
    assert_eq!(filediff["before"], "fn a() {\n    one();\n}\n");
    assert_eq!(filediff["after"], "fn a() {\n    two();\n    three();\n}\n");
    assert_eq!((filediff["additions"].as_u64(), filediff["deletions"].as_u64()), (Some(2), Some(1)));
}

#[tokio::test]
async fn fuzzy_matches_edit_the_file_and_ambiguity_is_refused() {
    let env = env();
    env.write("a.py", "def f():\n        y = compute(1,   2)  # note\n");
    let done = edit(&env, json!({"filePath": "a.py", "oldString": "compute(1, 2)", "newString": "3"})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(read(&env, "a.py"), "def f():\n        y = 3  # note\n");

    env.write("b.py", "if a:\n    x = 1\nif b:\n    x = 1\n");
    let refused = edit(&env, json!({"filePath": "b.py", "oldString": "  x = 1", "newString": "  x = 2"})).await;
    assert_eq!(refused.status, SettlementStatus::Error);
    assert!(refused.text.starts_with("Found multiple matches for oldString (2 matches)"), "{}", refused.text);
    assert!(refused.text.contains("- line 2: x = 1 (after `if a:`)"), "{}", refused.text);
    assert!(refused.text.contains("- line 4: x = 1 (after `if b:`)"), "{}", refused.text);
    assert_eq!(read(&env, "b.py"), "if a:\n    x = 1\nif b:\n    x = 1\n", "nothing written");
}

#[tokio::test]
async fn an_empty_old_string_creates_the_file_with_a_diff() {
    let env = env();
    let done = edit(&env, json!({"filePath": "new/file.txt", "oldString": "", "newString": "hello\n"})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(read(&env, "new/file.txt"), "hello\n");
    assert_eq!(done.metadata["filediff"]["additions"], 1);
}

/// An editor holding buffers: what it was asked, and what it was given.
#[derive(Default)]
struct Buffers {
    texts: std::sync::Mutex<std::collections::HashMap<std::path::PathBuf, String>>,
    asked: std::sync::Mutex<Vec<std::path::PathBuf>>,
}

impl opencode_tool_registry::EditorFiles for Buffers {
    fn read<'a>(
        &'a self,
        _session: &'a str,
        path: &'a std::path::Path,
    ) -> futures_util::future::BoxFuture<'a, Option<Result<String, String>>> {
        self.asked.lock().unwrap().push(path.to_owned());
        Box::pin(async move { self.texts.lock().unwrap().get(path).cloned().map(Ok) })
    }

    fn write<'a>(
        &'a self,
        _session: &'a str,
        path: &'a std::path::Path,
        content: &'a str,
    ) -> futures_util::future::BoxFuture<'a, Option<Result<(), String>>> {
        self.texts.lock().unwrap().insert(path.to_owned(), content.to_owned());
        Box::pin(async { Some(Ok(())) })
    }
}

#[tokio::test]
async fn with_an_editor_attached_files_are_read_from_its_buffers_and_edits_go_to_it_not_the_disk() {
    let env = env();
    env.write("a.txt", "saved\n");
    let buffers = Arc::new(Buffers::default());
    buffers.texts.lock().unwrap().insert(env.project.join("a.txt"), "unsaved\n".into());
    env.registry.attach_editor(Arc::clone(&buffers) as _);
    let ctx = env.ctx("build");
    let call = |name: &str, input| ToolCall { call_id: ctx.call_id.clone(), name: name.into(), input };

    let shown = env.registry.execute(&call("read", json!({"filePath": "a.txt"})), &ctx).await.unwrap();
    assert!(shown.text.contains("1: unsaved"), "{}", shown.text);
    let done = edit(&env, json!({"filePath": "a.txt", "oldString": "unsaved", "newString": "edited"})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(buffers.texts.lock().unwrap()[&env.project.join("a.txt")], "edited\n");
    assert_eq!(read(&env, "a.txt"), "saved\n", "the disk is the editor's business");

    // A path outside the Location is refused before the editor is asked.
    let mut agent = (*env.agent("build")).clone();
    agent.permission.push(opencode_tool_registry::Rule::new(
        "external_directory",
        "*",
        opencode_config::PermissionAction::Deny,
    ));
    let outside = env.outside.join("secret");
    std::fs::write(&outside, "secret").unwrap();
    let ctx = env.ctx_with(Arc::new(agent));
    let input = json!({"filePath": outside.display().to_string()});
    let refused =
        env.registry.execute(&ToolCall { call_id: ctx.call_id.clone(), name: "read".into(), input }, &ctx).await;
    assert!(refused.map_or(true, |settled| settled.status != SettlementStatus::Completed));
    assert!(!buffers.asked.lock().unwrap().contains(&outside));
}
