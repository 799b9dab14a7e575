//! Run-time control of a manager's servers: add, disconnect, connect again, tool-change events,
//! and the two-step OAuth sign-in (start, then finish with the code) against the local mock.

use opencode_mcp::McpAuthStore;
use opencode_mcp::McpError;
use opencode_mcp::McpEvent;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_mcp::ServerStatus;
use opencode_tool_registry::SettlementStatus;
use serde_json::json;
use tokio::sync::broadcast;

use super::mock_oauth::MockOAuth;
use super::mock_oauth::free_port;
use super::support::Env;
use super::support::node;
use super::support::scripted;
use super::support::servers;

fn entry(value: serde_json::Value) -> opencode_config::McpConfig {
    serde_json::from_value(value).unwrap()
}

fn scripted_entry() -> serde_json::Value {
    json!({"type": "local", "command": ["node", scripted()]})
}

/// The next `ToolsChanged` server name (other events are skipped).
async fn tools_changed(events: &mut broadcast::Receiver<McpEvent>) -> String {
    loop {
        if let McpEvent::ToolsChanged { server } = events.recv().await.unwrap() {
            return server;
        }
    }
}

#[tokio::test]
async fn an_added_server_connects_disconnects_and_connects_again_with_its_tools_in_step() {
    if !node() {
        return;
    }
    let env = Env::new();
    let manager = McpManager::start(&servers(json!({})), McpOptions::new(&env.project).with_auth_store(None));
    manager.attach(&env.registry);
    let mut events = manager.events();

    manager.add("script", entry(scripted_entry()));
    assert_eq!(manager.status("script"), Some(ServerStatus::Connecting));
    manager.wait("script").await;
    assert_eq!(manager.status("script"), Some(ServerStatus::Connected));
    assert!(env.tool_names().contains(&"script_ok".to_owned()), "{:?}", env.tool_names());
    assert_eq!(tools_changed(&mut events).await, "script");

    assert!(manager.disconnect("script"));
    assert_eq!(manager.status("script"), Some(ServerStatus::Disabled));
    assert!(!env.tool_names().iter().any(|name| name.starts_with("script_")), "{:?}", env.tool_names());
    assert_eq!(tools_changed(&mut events).await, "script");
    let call = env.call("script_ok", json!({})).await;
    assert_eq!(call.status, SettlementStatus::Error);

    assert_eq!(manager.connect("script").await, Ok(ServerStatus::Connected));
    assert_eq!(tools_changed(&mut events).await, "script");
    let call = env.call("script_ok", json!({"n": 1})).await;
    assert_eq!(call.status, SettlementStatus::Completed, "{}", call.text);

    assert!(!manager.disconnect("nope"));
    assert_eq!(manager.connect("nope").await, Err(McpError::UnknownServer { name: "nope".into() }));
}

#[tokio::test]
async fn connect_enables_a_disabled_entry_and_a_disconnect_voids_a_connect_in_flight() {
    if !node() {
        return;
    }
    let env = Env::new();
    let mut off = scripted_entry();
    off["enabled"] = json!(false);
    let manager = McpManager::start(
        &servers(json!({"off": off, "slow": scripted_entry()})),
        McpOptions::new(&env.project).with_auth_store(None),
    );
    manager.attach(&env.registry);
    assert_eq!(manager.status("off"), Some(ServerStatus::Disabled));
    // Disconnected while its handshake runs: the late connection is closed, the server stays off.
    assert!(manager.disconnect("slow"));
    manager.settled().await;
    assert_eq!(manager.connect("off").await, Ok(ServerStatus::Connected));
    assert_eq!(manager.status("slow"), Some(ServerStatus::Disabled));
    let names = env.tool_names();
    assert!(names.contains(&"off_ok".to_owned()) && !names.contains(&"slow_ok".to_owned()), "{names:?}");
}

#[tokio::test]
async fn adding_under_an_existing_name_replaces_the_server_and_its_tools() {
    if !node() {
        return;
    }
    let env = Env::new();
    let manager = McpManager::start(
        &servers(json!({"script": scripted_entry()})),
        McpOptions::new(&env.project).with_auth_store(None),
    );
    manager.attach(&env.registry);
    manager.settled().await;
    assert!(env.tool_names().contains(&"script_ok".to_owned()));
    manager.add("script", entry(json!({"type": "local", "command": ["/nonexistent/server"]})));
    manager.wait("script").await;
    assert!(matches!(manager.status("script"), Some(ServerStatus::Failed { .. })), "{:?}", manager.status("script"));
    assert!(!env.tool_names().contains(&"script_ok".to_owned()), "{:?}", env.tool_names());
    assert_eq!(manager.statuses().len(), 1);
}

#[tokio::test]
async fn a_sign_in_started_then_finished_with_the_code_stores_tokens_and_connects() {
    let env = Env::new();
    let mock = MockOAuth::start(true).await;
    let store = McpAuthStore::new(&env.project.join("data"));
    let remote = json!({"type": "remote", "url": mock.url(), "oauth": {"callbackPort": free_port()}});
    let manager = McpManager::start(
        &servers(json!({"docs": remote, "local": scripted_entry()})),
        McpOptions::new(&env.project).with_auth_store(Some(store.clone())),
    );
    manager.attach(&env.registry);
    manager.wait("docs").await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::NeedsAuth));

    let start = manager.start_auth("docs").await.unwrap();
    assert!(start.authorization_url.starts_with(&format!("{}/tenant/authorize?", mock.base)), "{start:?}");
    assert!(start.authorization_url.contains(&format!("state={}", start.oauth_state)));
    // The browser's part: the mock redirects to the callback with the code.
    let redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(&start.authorization_url)
        .send()
        .await
        .unwrap();
    let location = redirect.headers()["location"].to_str().unwrap().to_owned();
    let code = reqwest::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .find(|(key, _)| key == "code")
        .map(|(_, value)| value.into_owned())
        .unwrap();

    assert_eq!(manager.finish_auth("docs", &code).await, Ok(ServerStatus::Connected));
    assert_eq!(mock.state().verified_exchanges, 1);
    assert!(store.get("docs").unwrap().and_then(|entry| entry.tokens).is_some());
    assert!(env.tool_names().contains(&"docs_echo".to_owned()));
    // The flow is used up.
    assert!(matches!(manager.finish_auth("docs", &code).await, Err(McpError::Auth(_))));

    assert!(matches!(manager.start_auth("local").await, Err(McpError::OAuthUnsupported { .. })));
    assert!(matches!(manager.start_auth("missing").await, Err(McpError::UnknownServer { .. })));
    assert_eq!(manager.remove_auth("docs"), Ok(true));
    assert!(store.get("docs").unwrap().is_none());
    assert_eq!(manager.remove_auth("docs"), Ok(false));
    assert!(matches!(manager.remove_auth("missing"), Err(McpError::UnknownServer { .. })));
}

#[tokio::test]
async fn without_dynamic_registration_a_sign_in_reports_needs_client_registration() {
    let env = Env::new();
    let mock = MockOAuth::start(false).await;
    let store = McpAuthStore::new(&env.project.join("data"));
    let remote = json!({"type": "remote", "url": mock.url(), "oauth": {"callbackPort": free_port()}});
    let manager = McpManager::start(
        &servers(json!({"docs": remote})),
        McpOptions::new(&env.project).with_auth_store(Some(store)),
    );
    manager.settled().await;
    assert_eq!(manager.start_auth("docs").await, Err(McpError::NeedsClientRegistration));
    let status = manager.authenticate("docs", std::time::Duration::from_secs(60)).await.unwrap();
    let ServerStatus::NeedsClientRegistration { error } = status else { panic!("{status:?}") };
    assert!(error.contains("clientId"), "{error}");
    assert_eq!(manager.status("docs"), Some(ServerStatus::NeedsClientRegistration { error }));
}
