//! The real `@modelcontextprotocol/server-everything` (pinned, from npm) over stdio and over
//! streamable HTTP: tools listed and called through the registry, bounded output, media,
//! instructions.

use std::time::Duration;

use opencode_config::ToolOutputConfig;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_mcp::ServerStatus;
use opencode_tool_registry::SettlementStatus;
use serde_json::json;

use super::support::Env;
use super::support::everything;
use super::support::servers;

async fn connected(env: &Env) -> Option<McpManager> {
    let entry = everything()?;
    let config = json!({"everything": {"type": "local", "command": ["node", entry, "stdio"]}});
    let manager = McpManager::start(&servers(config), McpOptions::new(&env.project));
    manager.attach(&env.registry);
    manager.settled().await;
    assert_eq!(manager.status("everything"), Some(ServerStatus::Connected));
    Some(manager)
}

#[tokio::test]
async fn tools_are_listed_with_their_schemas_and_called_through_the_registry() {
    let env = Env::new();
    let Some(_manager) = connected(&env).await else { return };
    let definitions = env.registry.definitions(&env.build());
    let sum = definitions.iter().find(|d| d.name == "everything_get-sum").expect("get-sum is offered");
    assert_eq!(sum.description, "Returns the sum of two numbers");
    assert_eq!(sum.input_schema["type"], "object");
    assert!(sum.input_schema["properties"]["a"].is_object());
    assert!(definitions.iter().any(|d| d.name == "everything_echo"));

    let settlement = env.call("everything_get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!(settlement.status, SettlementStatus::Completed, "{}", settlement.text);
    assert!(settlement.text.contains('5'), "{}", settlement.text);
    assert_eq!(settlement.metadata["mcp"], json!({"server": "everything", "tool": "get-sum"}));

    let echo = env.call("everything_echo", json!({"message": "hello"})).await;
    assert_eq!(echo.text, "Echo: hello");

    let invalid = env.call("everything_get-sum", json!({"a": "two"})).await;
    assert_eq!(invalid.status, SettlementStatus::Error, "{}", invalid.text);
}

#[tokio::test]
async fn large_results_are_bounded_by_the_registry() {
    let env = Env::with_limits(ToolOutputConfig { max_lines: 50, max_bytes: 4096 });
    let Some(_manager) = connected(&env).await else { return };
    let message: String = (0..2000).map(|i| format!("line {i}\n")).collect();
    let settlement = env.call("everything_echo", json!({"message": message})).await;
    assert_eq!(settlement.status, SettlementStatus::Completed);
    assert!(settlement.truncated);
    assert!(settlement.text.len() < 8192, "{} bytes", settlement.text.len());
    let path = settlement.managed_path.expect("the full output is kept");
    let full = std::fs::read_to_string(path).unwrap();
    assert!(full.contains("line 1999"));
}

#[tokio::test]
async fn images_become_media_and_instructions_are_kept() {
    let env = Env::new();
    let Some(manager) = connected(&env).await else { return };
    let settlement = env.call("everything_get-tiny-image", json!({})).await;
    assert_eq!(settlement.status, SettlementStatus::Completed, "{}", settlement.text);
    assert_eq!(settlement.media.len(), 1);
    assert_eq!(settlement.media[0].media_type, "image/png");

    let instructions = manager.instructions();
    assert_eq!(instructions.len(), 1);
    assert!(instructions[0].1.contains("Everything Server"), "{}", instructions[0].1);
}

#[tokio::test]
async fn a_remote_server_over_streamable_http() {
    let Some(entry) = everything() else { return };
    let env = Env::new();
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(server.try_wait().unwrap().is_none(), "the HTTP server exited");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let config = json!({"remote": {"type": "remote", "url": format!("http://127.0.0.1:{port}/mcp"),
        "headers": {"X-Test": "yes"}}});
    let manager = McpManager::start(&servers(config), McpOptions::new(&env.project));
    manager.attach(&env.registry);
    manager.settled().await;
    assert_eq!(manager.status("remote"), Some(ServerStatus::Connected));
    let echo = env.call("remote_echo", json!({"message": "over http"})).await;
    assert_eq!(echo.text, "Echo: over http");
    manager.shutdown();
    assert!(env.tool_names().iter().all(|name| !name.starts_with("remote_")));
    server.kill().await.unwrap();
}

#[tokio::test]
async fn an_unreachable_remote_server_fails_with_a_reason() {
    let env = Env::new();
    let port = free_port();
    let config = json!({"remote": {"type": "remote", "url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 5000}});
    let manager = McpManager::start(&servers(config), McpOptions::new(&env.project));
    manager.settled().await;
    assert!(matches!(manager.status("remote"), Some(ServerStatus::Failed { .. })), "{:?}", manager.status("remote"));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
