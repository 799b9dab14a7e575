//! Language servers against `tests/fake_lsp.py` (real LSP framing): diagnostics after `edit` and
//! `write`, the `lsp` tool's operations, lazy start, reuse, and the process killed on drop.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use opencode_tool_registry::Lsp;
use opencode_tool_registry::LspServer;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::tools::NoEnv;
use serde_json::json;

use super::support::Env;

fn fake_server(pids: &Path) -> LspServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_lsp.py");
    LspServer {
        id: "fake".into(),
        command: vec!["python3".into(), script.display().to_string()],
        extensions: vec![".rs".into()],
        env: [("FAKE_LSP_PIDS".to_owned(), pids.display().to_string())].into(),
        initialization: None,
    }
}

fn started(pids: &Path) -> Vec<i32> {
    std::fs::read_to_string(pids).unwrap_or_default().lines().map(|line| line.parse().unwrap()).collect()
}

/// An environment with the filesystem tools and the fake server; returns the pid file too.
fn env_with_lsp() -> (Env, Arc<Lsp>, PathBuf) {
    let env = Env::new();
    opencode_tool_registry::tools::register_filesystem_and_shell(&env.registry, Arc::new(NoEnv)).unwrap();
    let pids = env.data.join("pids");
    let lsp = Arc::new(Lsp::new(&env.project, vec![fake_server(&pids)]));
    opencode_tool_registry::tools::lsp::register(&env.registry, Arc::clone(&lsp)).unwrap();
    (env, lsp, pids)
}

async fn call(env: &Env, tool: &str, input: serde_json::Value) -> Settlement {
    let ctx = env.ctx("build");
    env.registry.execute(&ToolCall { call_id: ctx.call_id.clone(), name: tool.into(), input }, &ctx).await.unwrap()
}

#[tokio::test]
async fn edit_and_write_report_the_files_errors_from_a_lazily_started_reused_server() {
    let (env, lsp, pids) = env_with_lsp();
    let done = call(&env, "write", json!({"filePath": "notes.txt", "content": "ERROR here\n"})).await;
    assert_eq!(done.text, "Wrote file successfully.", "no server for .txt files");
    assert!(started(&pids).is_empty(), "nothing started before a handled file is touched");
    assert_eq!(lsp.running().await, 0);

    let done = call(&env, "write", json!({"filePath": "src/main.rs", "content": "fn main() {\n    ok();\n}\n"})).await;
    assert_eq!(done.text, "Wrote file successfully.", "clean files add nothing");
    assert_eq!(started(&pids).len(), 1);

    let done =
        call(&env, "edit", json!({"filePath": "src/main.rs", "oldString": "ok();", "newString": "ERROR;\n    WARN;"}))
            .await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    let file = env.project.join("src/main.rs").display().to_string();
    assert_eq!(
        done.text,
        format!(
            "Edit applied successfully.\n\nLSP errors detected in this file, please fix:\n<diagnostics file=\"{file}\">\nERROR [2:5] found ERROR\n</diagnostics>"
        )
    );
    let reported = done.metadata["diagnostics"][&file].as_array().unwrap();
    assert_eq!(reported.len(), 2, "warnings are kept in metadata: {reported:?}");
    assert_eq!(started(&pids).len(), 1, "the server is reused");
    let names = env.registry.names();
    assert_eq!(names.iter().filter(|name| *name == "edit").count(), 1, "the wrapped edit replaces the plain one");
}

#[tokio::test]
async fn the_lsp_tool_answers_navigation_and_diagnostics() {
    let (env, _lsp, _pids) = env_with_lsp();
    env.write("lib.rs", "fn alpha() {}\nfn beta() { alpha(); ERROR }\n");
    let diagnostics = call(&env, "lsp", json!({"operation": "diagnostics", "filePath": "lib.rs"})).await;
    assert_eq!(diagnostics.text, "ERROR [2:22] found ERROR");
    assert_eq!(diagnostics.title.as_deref(), Some("diagnostics lib.rs:1:1"));

    let definition =
        call(&env, "lsp", json!({"operation": "goToDefinition", "filePath": "lib.rs", "line": 2, "character": 13}))
            .await;
    let result = &definition.metadata["result"][0];
    assert!(result["uri"].as_str().unwrap().ends_with("/project/lib.rs"), "{result}");
    assert_eq!(result["range"]["start"]["line"], 0);

    let hover =
        call(&env, "lsp", json!({"operation": "hover", "filePath": "lib.rs", "line": 2, "character": 13})).await;
    assert!(hover.text.contains("hover at 1:12 (configured: True)"), "{}", hover.text);

    let symbols = call(&env, "lsp", json!({"operation": "documentSymbol", "filePath": "lib.rs"})).await;
    let names: Vec<&str> =
        symbols.metadata["result"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["alpha", "beta"]);

    let found = call(&env, "lsp", json!({"operation": "workspaceSymbol", "filePath": "lib.rs", "query": "bet"})).await;
    assert_eq!(found.metadata["result"][0]["name"], "beta");

    let none =
        call(&env, "lsp", json!({"operation": "findReferences", "filePath": "lib.rs", "line": 1, "character": 4}))
            .await;
    assert_eq!(none.text, "No results found for findReferences");

    env.write("readme.md", "x");
    let unhandled = call(&env, "lsp", json!({"operation": "hover", "filePath": "readme.md"})).await;
    assert_eq!(unhandled.status, SettlementStatus::Error);
    assert_eq!(unhandled.text, "No LSP server available for this file type.");
}

#[tokio::test]
async fn servers_are_killed_when_the_service_is_dropped() {
    let temp = tempfile::tempdir().unwrap();
    let pids = temp.path().join("pids");
    let file = temp.path().join("a.rs");
    std::fs::write(&file, "fn a() {}\n").unwrap();
    let lsp = Lsp::new(temp.path(), vec![fake_server(&pids)]);
    assert!(lsp.touch(&file, true).await.unwrap().is_empty());
    let pid = started(&pids)[0];
    drop(lsp);
    // The kill is immediate; reaping is asynchronous, so a zombie counts as gone.
    let gone = (0..1000).any(|_| {
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Absent once reaped; state `Z` once killed but not yet reaped.
        let alive =
            !state.is_empty() && state.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z'));
        if alive {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        !alive
    });
    assert!(gone, "server process {pid} survived its client");
}

#[tokio::test]
async fn a_server_that_exits_is_started_again_on_next_use() {
    let temp = tempfile::tempdir().unwrap();
    let pids = temp.path().join("pids");
    let file = temp.path().join("a.rs");
    std::fs::write(&file, "CRASH\n").unwrap();
    let lsp = Lsp::new(temp.path(), vec![fake_server(&pids)]);
    assert!(lsp.touch(&file, true).await.unwrap().is_empty(), "the crash yields no diagnostics");
    std::fs::write(&file, "ERROR\n").unwrap();
    // The first sync after the crash may still reach the dying process; the next one restarts it.
    let mut diagnostics = Vec::new();
    for _ in 0..3 {
        if let Ok(found) = lsp.touch(&file, true).await
            && !found.is_empty()
        {
            diagnostics = found;
            break;
        }
    }
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(started(&pids).len(), 2);
}

#[tokio::test]
async fn without_servers_lsp_is_unavailable_and_a_broken_server_does_not_fail_edits() {
    let env = Env::new();
    opencode_tool_registry::tools::register_filesystem_and_shell(&env.registry, Arc::new(NoEnv)).unwrap();
    let none = Arc::new(Lsp::from_config(&env.project, Some(&json!(false))).unwrap());
    opencode_tool_registry::tools::lsp::register(&env.registry, none).unwrap();
    let missing = call(&env, "lsp", json!({"operation": "diagnostics", "filePath": "a.rs"})).await;
    assert!(missing.text.contains("no language server is configured under `lsp`"), "{}", missing.text);

    let broken = LspServer { command: vec!["/nonexistent/server".into()], ..fake_server(&env.data.join("pids")) };
    opencode_tool_registry::tools::lsp::register(&env.registry, Arc::new(Lsp::new(&env.project, vec![broken])))
        .unwrap();
    let written = call(&env, "write", json!({"filePath": "a.rs", "content": "ERROR\n"})).await;
    assert_eq!(written.status, SettlementStatus::Completed);
    assert_eq!(written.text, "Wrote file successfully.");
    let failed = call(&env, "lsp", json!({"operation": "diagnostics", "filePath": "a.rs"})).await;
    assert_eq!(failed.status, SettlementStatus::Error);
    assert!(failed.text.starts_with("cannot start language server `fake`"), "{}", failed.text);
    assert!(failed.text.contains("installed and on PATH"), "{}", failed.text);
}
