//! Data-driven `edit`/`write`/`apply_patch` scenarios: `tests/scenarios/<name>/` holds `input/`
//! (the project before), `call.json` (tool, input, expected status and text) and `expected/`
//! (the project after). Permission asks are rejected, as a user declining would.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::Reply;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::tools::NoEnv;
use serde::Deserialize;

use super::support::Env;

#[derive(Deserialize)]
struct Call {
    tool: String,
    input: serde_json::Value,
    status: String,
    #[serde(default)]
    text_contains: Option<String>,
}

fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    if !root.exists() {
        return files;
    }
    for entry in ignore::WalkBuilder::new(root).standard_filters(false).build() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() && entry.file_name() != ".keep" {
            let relative = entry.path().strip_prefix(root).unwrap().display().to_string();
            files.insert(relative, std::fs::read_to_string(entry.path()).unwrap());
        }
    }
    files
}

fn copy(from: &Path, to: &Path) {
    for (relative, contents) in tree(from) {
        let path = to.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
}

#[tokio::test]
async fn scenarios() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut names: Vec<_> = std::fs::read_dir(&root).unwrap().map(|entry| entry.unwrap().path()).collect();
    names.sort();
    assert!(names.len() >= 10);
    for dir in names {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let call: Call = serde_json::from_str(&std::fs::read_to_string(dir.join("call.json")).unwrap()).unwrap();
        let env = Env::new();
        opencode_tool_registry::tools::register_filesystem_and_shell(&env.registry, Arc::new(NoEnv)).unwrap();
        copy(&dir.join("input"), &env.project);
        let mut events = env.permissions.subscribe();
        let permissions = Arc::clone(&env.permissions);
        let decliner = tokio::spawn(async move {
            while let Ok(event) = events.recv().await {
                if let PendingEvent::Asked(request) = event {
                    permissions.reply(&request.id, Reply::Reject { message: None }).unwrap();
                }
            }
        });
        let settled = env
            .registry
            .execute(&ToolCall { call_id: "c".into(), name: call.tool, input: call.input }, &env.ctx("build"))
            .await
            .unwrap();
        decliner.abort();
        let status = match settled.status {
            SettlementStatus::Completed => "completed",
            SettlementStatus::Error => "error",
            SettlementStatus::Declined => "declined",
            SettlementStatus::Interrupted => "interrupted",
        };
        assert_eq!(status, call.status, "{name}: {}", settled.text);
        if let Some(expected) = call.text_contains {
            assert!(settled.text.contains(&expected), "{name}: {}", settled.text);
        }
        assert_eq!(tree(&env.project), tree(&dir.join("expected")), "{name}");
        assert!(tree(&env.outside).is_empty(), "{name} wrote outside the project");
    }
}
