//! Failure handling against a scripted stdio server: crashes mid-call, calls never answered,
//! handshakes never answered, tool-list changes, disabled and broken entries, no orphans.

use std::time::Duration;

use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_mcp::ServerStatus;
use opencode_tool_registry::SettlementStatus;
use serde_json::json;

use super::support::Env;
use super::support::failed;
use super::support::node;
use super::support::scripted;
use super::support::servers;
use super::support::wait_until;

fn local(extra: &[&str]) -> serde_json::Value {
    let mut command = vec!["node".to_owned(), scripted()];
    command.extend(extra.iter().map(|arg| (*arg).to_owned()));
    json!({"type": "local", "command": command})
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_ends_the_call_and_others_continue() {
    if !node() {
        return;
    }
    let env = Env::new();
    let manager = McpManager::start(
        &servers(json!({"scripted": local(&[]), "other": local(&[])})),
        McpOptions::new(&env.project),
    );
    manager.attach(&env.registry);
    manager.settled().await;
    assert_eq!(manager.status("scripted"), Some(ServerStatus::Connected));
    assert!(env.tool_names().contains(&"scripted_crash".to_owned()));

    let settlement = env.call("scripted_crash", json!({})).await;
    assert_eq!(settlement.status, SettlementStatus::Error);
    assert!(settlement.text.contains("The MCP server scripted"), "{}", settlement.text);

    wait_until(&manager, |m| matches!(m.status("scripted"), Some(ServerStatus::Failed { .. }))).await;
    let error = failed(manager.status("scripted"));
    assert!(error.starts_with("connection closed"), "{error}");
    assert!(!env.tool_names().contains(&"scripted_ok".to_owned()));

    let after = env.call("scripted_ok", json!({})).await;
    assert_eq!(after.status, SettlementStatus::Error);
    let other = env.call("other_ok", json!({"x": 1})).await;
    assert_eq!(other.status, SettlementStatus::Completed);
    assert_eq!(other.text, "ok: {\"x\":1}");
}

#[tokio::test]
async fn a_call_never_answered_times_out_and_the_server_stays_usable() {
    if !node() {
        return;
    }
    let env = Env::new();
    let options = McpOptions::new(&env.project).with_call_timeout(Duration::from_millis(300));
    let manager = McpManager::start(&servers(json!({"scripted": local(&[])})), options);
    manager.attach(&env.registry);
    manager.settled().await;

    let settlement = env.call("scripted_hang", json!({})).await;
    assert_eq!(settlement.status, SettlementStatus::Error);
    assert!(settlement.text.contains("did not answer hang within 0.3s"), "{}", settlement.text);

    let ok = env.call("scripted_ok", json!({})).await;
    assert_eq!(ok.status, SettlementStatus::Completed);
    assert_eq!(manager.status("scripted"), Some(ServerStatus::Connected));
}

#[tokio::test]
async fn a_server_that_never_answers_the_handshake_fails_without_blocking_others() {
    if !node() {
        return;
    }
    let env = Env::new();
    let stuck = {
        let mut entry = local(&["--stuck"]);
        entry["timeout"] = json!(400);
        entry
    };
    let manager =
        McpManager::start(&servers(json!({"stuck": stuck, "scripted": local(&[])})), McpOptions::new(&env.project));
    // start returns before any handshake: both are still connecting.
    assert_eq!(manager.status("stuck"), Some(ServerStatus::Connecting));
    manager.attach(&env.registry);
    manager.settled().await;
    assert_eq!(failed(manager.status("stuck")), "no answer within 400 ms");
    assert_eq!(manager.status("scripted"), Some(ServerStatus::Connected));
    assert_eq!(env.call("scripted_ok", json!({})).await.status, SettlementStatus::Completed);
}

#[tokio::test]
async fn tools_list_changed_refreshes_the_registry() {
    if !node() {
        return;
    }
    let env = Env::new();
    let manager = McpManager::start(&servers(json!({"scripted": local(&[])})), McpOptions::new(&env.project));
    manager.attach(&env.registry);
    manager.settled().await;
    assert!(!env.tool_names().contains(&"scripted_extra".to_owned()));

    assert_eq!(env.call("scripted_grow", json!({})).await.text, "grown");
    wait_until(&manager, |m| m.reports()[0].tools.contains(&"scripted_extra".to_owned())).await;
    assert!(env.tool_names().contains(&"scripted_extra".to_owned()));
    assert_eq!(env.call("scripted_extra", json!({})).await.status, SettlementStatus::Completed);
}

#[tokio::test]
async fn disabled_and_broken_entries_are_reported() {
    let env = Env::new();
    let manager = McpManager::start(
        &servers(json!({
            "off": {"type": "local", "command": ["x"], "enabled": false},
            "toggled": {"enabled": false},
            "bare": {"enabled": true},
            "empty": {"type": "local", "command": []},
            "missing": {"type": "local", "command": ["/nonexistent/mcp-server"]},
        })),
        McpOptions::new(&env.project),
    );
    manager.settled().await;
    assert_eq!(manager.status("off"), Some(ServerStatus::Disabled));
    assert_eq!(manager.status("toggled"), Some(ServerStatus::Disabled));
    assert!(failed(manager.status("bare")).contains("no server is configured"));
    assert!(failed(manager.status("empty")).contains("`command` is empty"));
    assert!(failed(manager.status("missing")).starts_with("cannot start `/nonexistent/mcp-server`"));
    assert!(manager.tools().is_empty());
}

#[tokio::test]
async fn instructions_become_a_context_source() {
    if !node() {
        return;
    }
    let env = Env::new();
    let manager = McpManager::start(&servers(json!({"scripted": local(&[])})), McpOptions::new(&env.project));
    let context = opencode_system_context::SystemContextRegistry::new();
    let _contribution = manager.register_context(&context).unwrap();
    manager.settled().await;
    let generation = context.load().await.unwrap().initialize().await.unwrap();
    assert_eq!(
        generation.baseline.text,
        "<mcp_instructions>\n<server name=\"scripted\">\nScripted server: call ok first.\n</server>\n</mcp_instructions>"
    );
}

#[tokio::test]
async fn dropping_the_manager_kills_local_servers() {
    if !node() {
        return;
    }
    let env = Env::new();
    let pid_file = env.project.join("pid");
    let manager = McpManager::start(
        &servers(json!({"scripted": local(&["--pid-file", pid_file.to_str().unwrap()])})),
        McpOptions::new(&env.project),
    );
    manager.attach(&env.registry);
    manager.settled().await;
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().parse().unwrap();
    assert!(alive(pid));
    drop(manager);
    // Killing is immediate (SIGKILL to the group); reaping may take a moment.
    while alive(pid) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(env.tool_names().iter().all(|name| !name.starts_with("scripted_")));
}

/// Alive and not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or_default().trim_start().starts_with('Z'),
        Err(_) => false,
    }
}
