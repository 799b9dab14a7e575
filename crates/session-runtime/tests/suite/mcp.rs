//! A Location's MCP servers controlled at run time through [`SessionRuntime::mcp`]: a server added
//! to a directory without any `mcp` configuration offers its tools to the next turn, a disconnect
//! takes them away, a connect brings them back, and a reload forgets the addition (it was never
//! written to a config file).

use std::path::Path;
use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Paths;
use opencode_mock_provider::MockProvider;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::Reload;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::mcp::ServerStatus;
use opencode_session_store::NewSession;
use opencode_tool_registry::Permissions;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::text;

fn node() -> bool {
    let found = std::process::Command::new("node").arg("--version").output().is_ok();
    if !found {
        assert!(std::env::var_os("CI").is_none(), "node is required under CI for the MCP tests");
        eprintln!("notice: node not found; skipping this MCP test");
    }
    found
}

/// The tool names of the mock's latest request.
fn offered(mock: &MockProvider) -> Vec<String> {
    let request = mock.requests().pop().unwrap().body_json().unwrap();
    request["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

async fn turn(runtime: &SessionRuntime, mock: &MockProvider, session: &str) -> Vec<String> {
    mock.push(text("ok"));
    runtime.run(PromptRequest::text(session, "hi")).await.unwrap();
    offered(mock)
}

#[tokio::test]
async fn a_server_added_at_run_time_serves_the_next_turn_until_disconnected_or_reloaded() {
    if !node() {
        return;
    }
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config: Config = serde_json::from_value(mock.opencode_config(json!({}))).unwrap();
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, _store) = super::support::runtime_with_standard_tools(config, Paths::under(data.path()), permissions);
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();

    let manager = runtime.mcp(project.path()).unwrap().expect("the standard tools have MCP support");
    assert!(manager.statuses().is_empty());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/scripted.mjs");
    let entry = serde_json::from_value(json!({"type": "local", "command": ["node", script]})).unwrap();
    manager.add("scripted", entry);
    manager.wait("scripted").await;
    assert_eq!(manager.status("scripted"), Some(ServerStatus::Connected));
    assert!(turn(&runtime, &mock, &session.id).await.contains(&"scripted_ok".to_owned()));

    // The same Location's manager, whoever asks.
    let again = runtime.mcp(project.path()).unwrap().unwrap();
    assert!(again.disconnect("scripted"));
    let tools = turn(&runtime, &mock, &session.id).await;
    assert!(!tools.iter().any(|name| name.starts_with("scripted_")), "{tools:?}");
    assert!(tools.contains(&"read".to_owned()), "{tools:?}");

    assert_eq!(manager.connect("scripted").await, Ok(ServerStatus::Connected));
    assert!(turn(&runtime, &mock, &session.id).await.contains(&"scripted_ok".to_owned()));

    assert_eq!(runtime.reload_location(project.path()), Reload::Disposed);
    let reopened = runtime.mcp(project.path()).unwrap().unwrap();
    assert_eq!(reopened.status("scripted"), None);
    let tools = turn(&runtime, &mock, &session.id).await;
    assert!(!tools.iter().any(|name| name.starts_with("scripted_")), "{tools:?}");
}

/// A configured server that is still connecting when the first prompt arrives is waited for (within
/// its `timeout`): the first request already offers its tools and its instructions. A server that
/// never answers is left out once its own `timeout` passes, with its status saying why.
#[tokio::test]
async fn the_first_turn_waits_for_servers_still_connecting() {
    if !node() {
        return;
    }
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/scripted.mjs");
    let config: Config = serde_json::from_value(mock.opencode_config(json!({
        "mcp": {
            "slow": {"type": "local", "command": ["node", &script, "--slow-start", "1500"], "timeout": 20000},
            "stuck": {"type": "local", "command": ["node", &script, "--stuck"], "timeout": 1000}
        }
    })))
    .unwrap();
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, _store) = super::support::runtime_with_standard_tools(config, Paths::under(data.path()), permissions);
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();

    let tools = turn(&runtime, &mock, &session.id).await;
    assert!(tools.contains(&"slow_ok".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|name| name.starts_with("stuck_")), "{tools:?}");
    let system = mock.requests()[0].body_json().unwrap()["messages"][0]["content"].to_string();
    assert!(system.contains("Scripted server: call ok first."), "{system}");
    let manager = runtime.mcp(project.path()).unwrap().unwrap();
    assert!(matches!(manager.status("stuck"), Some(ServerStatus::Failed { .. })), "{:?}", manager.status("stuck"));

    // Later turns offer the same tools: nothing connected, disconnected or changed in between.
    assert_eq!(turn(&runtime, &mock, &session.id).await, tools);
}
