//! `/mcp…` over the real session runtime with real MCP servers: the scripted stdio server of the MCP
//! crate's suite, and its OAuth-protected remote mock. Tools are observed where they matter: in the
//! tool list the model receives with the next prompt.

use std::path::Path;
use std::path::PathBuf;

use opencode_mock_provider::MockProvider;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::runtime::RuntimeServer;
use super::runtime::prompt;
use super::runtime::start_runtime;
use super::runtime::text;
use super::send;

#[path = "../../../mcp/tests/suite/mock_oauth.rs"]
#[allow(dead_code, reason = "the MCP crate's suite uses more of the mock")]
mod mock_oauth;

use mock_oauth::MockOAuth;

fn node() -> bool {
    let found = std::process::Command::new("node").arg("--version").output().is_ok();
    if !found {
        assert!(std::env::var_os("CI").is_none(), "node is required under CI for the MCP tests");
        eprintln!("notice: node not found; skipping this MCP test");
    }
    found
}

fn scripted() -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp/tests/servers/scripted.mjs");
    json!({"type": "local", "command": ["node", script]})
}

/// The tools the model is offered with a prompt sent now.
async fn offered(t: &RuntimeServer, session: &str) -> Vec<String> {
    t.mock.push(text("ok"));
    let (status, reply) = t.post(&format!("/session/{session}/message"), prompt("hi")).await;
    assert_eq!(status, 200, "{reply}");
    last_tools(&t.mock)
}

fn last_tools(mock: &MockProvider) -> Vec<String> {
    let request = mock.requests().pop().unwrap().body_json().unwrap();
    request["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

fn has_tools_of(tools: &[String], server: &str) -> bool {
    tools.iter().any(|name| name.starts_with(&format!("{server}_")))
}

async fn delete(t: &RuntimeServer, path: &str) -> (u16, Value) {
    send(t.http.delete(t.at(path))).await
}

fn not_found(name: &str) -> Value {
    json!({"_tag": "McpServerNotFoundError", "name": name, "message": format!("MCP server not found: {name}")})
}

#[tokio::test]
async fn status_add_disconnect_and_connect_keep_the_models_tools_in_step() {
    if !node() {
        return;
    }
    let t = start_runtime(
        json!({"mcp": {"scripted": scripted(), "off": {"type": "local", "command": ["x"], "enabled": false}}}),
    )
    .await;
    let (status, body) = t.get("/mcp").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"scripted": {"status": "connected"}, "off": {"status": "disabled"}}));
    let session = t.session().await;
    assert!(offered(&t, &session).await.contains(&"scripted_ok".to_owned()));

    let (status, body) = t.post("/mcp", json!({"name": "extra", "config": scripted()})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"scripted": {"status": "connected"}, "off": {"status": "disabled"}, "extra": {"status": "connected"}})
    );
    assert!(offered(&t, &session).await.contains(&"extra_ok".to_owned()));

    assert_eq!(t.post("/mcp/extra/disconnect", json!({})).await, (200, json!(true)));
    assert_eq!(t.get("/mcp").await.1["extra"], json!({"status": "disabled"}));
    let tools = offered(&t, &session).await;
    assert!(!has_tools_of(&tools, "extra") && has_tools_of(&tools, "scripted"), "{tools:?}");

    assert_eq!(t.post("/mcp/extra/connect", json!({})).await, (200, json!(true)));
    assert_eq!(t.get("/mcp").await.1["extra"], json!({"status": "connected"}));
    assert!(offered(&t, &session).await.contains(&"extra_ok".to_owned()));

    // A failing server is reported with its error; replacing `extra` drops its tools.
    let broken = json!({"type": "local", "command": ["/nonexistent/mcp-server"]});
    let (status, body) = t.post("/mcp", json!({"name": "extra", "config": broken})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["extra"]["status"], "failed", "{body}");
    assert!(body["extra"]["error"].as_str().unwrap().contains("/nonexistent/mcp-server"), "{body}");
    assert!(!has_tools_of(&offered(&t, &session).await, "extra"));

    // A disposed instance forgets what was added (it was never written to a config file).
    assert_eq!(t.post("/instance/dispose", json!({})).await.0, 200);
    assert_eq!(t.get("/mcp").await.1, json!({"scripted": {"status": "connected"}, "off": {"status": "disabled"}}));
}

#[tokio::test]
async fn unknown_servers_are_404_and_bad_bodies_400() {
    let t = start_runtime(json!({})).await;
    assert_eq!(t.get("/mcp").await, (200, json!({})));
    for path in ["/mcp/nope/connect", "/mcp/nope/disconnect", "/mcp/nope/auth", "/mcp/nope/auth/authenticate"] {
        assert_eq!(t.post(path, json!({})).await, (404, not_found("nope")), "{path}");
    }
    assert_eq!(t.post("/mcp/nope/auth/callback", json!({"code": "c"})).await, (404, not_found("nope")));
    assert_eq!(delete(&t, "/mcp/nope/auth").await, (404, not_found("nope")));

    for body in [
        json!({"name": "x"}),
        json!({"name": "x", "config": {"type": "local"}}),
        json!({"name": "x", "config": {"type": "local", "command": ["a"], "cwd": "/tmp"}}),
        json!({"name": "x", "config": {"type": "remote", "url": "http://127.0.0.1:9", "timeout": 0}}),
        json!({"name": "", "config": {"type": "local", "command": ["a"]}}),
    ] {
        let (status, answer) = t.post("/mcp", body.clone()).await;
        assert_eq!(status, 400, "{body} -> {answer}");
    }
    assert_eq!(t.get("/mcp").await, (200, json!({})), "nothing was added");
}

#[tokio::test]
async fn oauth_starts_finishes_with_the_code_and_credentials_can_be_removed() {
    if !node() {
        return;
    }
    let mock = MockOAuth::start(true).await;
    let docs = json!({"type": "remote", "url": mock.url(), "oauth": {"callbackPort": mock_oauth::free_port()}});
    let t = start_runtime(json!({"mcp": {"docs": docs, "scripted": scripted()}})).await;
    assert_eq!(t.get("/mcp").await.1["docs"], json!({"status": "needs_auth"}));

    let (status, unsupported) = t.post("/mcp/scripted/auth", json!({})).await;
    assert_eq!(status, 400, "{unsupported}");
    assert!(unsupported["error"].as_str().unwrap().contains("remote servers only"), "{unsupported}");
    let (status, _) = t.post("/mcp/scripted/auth/authenticate", json!({})).await;
    assert_eq!(status, 400);
    // Finishing a sign-in that was never started.
    let (status, body) = t.post("/mcp/docs/auth/callback", json!({"code": "c"})).await;
    assert_eq!(status, 400, "{body}");

    let (status, started) = t.post("/mcp/docs/auth", json!({})).await;
    assert_eq!(status, 200, "{started}");
    let url = started["authorizationUrl"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/tenant/authorize?", mock.base)), "{url}");
    assert!(url.contains(&format!("state={}", started["oauthState"].as_str().unwrap())), "{started}");
    let code = code_from_redirect(url).await;

    let (status, connected) = t.post("/mcp/docs/auth/callback", json!({"code": code})).await;
    assert_eq!((status, connected), (200, json!({"status": "connected"})));
    assert_eq!(mock.state().verified_exchanges, 1);
    assert_eq!(t.get("/mcp").await.1["docs"], json!({"status": "connected"}));
    let session = t.session().await;
    assert!(offered(&t, &session).await.contains(&"docs_echo".to_owned()));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(auth_file(&t)).unwrap()).unwrap();
    assert!(stored["docs"]["tokens"]["accessToken"].is_string(), "{stored}");

    assert_eq!(delete(&t, "/mcp/docs/auth").await, (200, json!({"success": true})));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(auth_file(&t)).unwrap()).unwrap();
    assert!(stored.get("docs").is_none(), "{stored}");
    // Without credentials the next connect needs a sign-in again.
    assert_eq!(t.post("/mcp/docs/connect", json!({})).await, (200, json!(true)));
    assert_eq!(t.get("/mcp").await.1["docs"], json!({"status": "needs_auth"}));
}

/// Plays the browser: the mock's authorization endpoint redirects to the callback with the code.
async fn code_from_redirect(url: &str) -> String {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let response = http.get(url).send().await.unwrap();
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let location = reqwest::Url::parse(&location).unwrap();
    location.query_pairs().find(|(key, _)| key == "code").map(|(_, value)| value.into_owned()).unwrap()
}

/// `mcp-auth.json` in the server's data directory (`$HOME/.local/share/opencode`).
fn auth_file(t: &RuntimeServer) -> PathBuf {
    t.dir.parent().unwrap().join("home/.local/share/opencode/mcp-auth.json")
}

#[tokio::test]
async fn tool_changes_are_announced_on_the_instance_event_stream() {
    if !node() {
        return;
    }
    let t = start_runtime(json!({})).await;
    let mut events = t.events().await;
    let (status, body) = t.post("/mcp", json!({"name": "extra", "config": scripted()})).await;
    assert_eq!((status, &body["extra"]), (200, &json!({"status": "connected"})), "{body}");
    assert_eq!(next_of(&mut events, "mcp.tools.changed").await, json!({"server": "extra"}));
    assert_eq!(t.post("/mcp/extra/disconnect", json!({})).await, (200, json!(true)));
    assert_eq!(next_of(&mut events, "mcp.tools.changed").await, json!({"server": "extra"}));
}

#[tokio::test]
async fn authenticate_waits_for_the_loopback_callback_and_connects() {
    if !node() {
        return;
    }
    let mock = MockOAuth::start(true).await;
    let docs = json!({"type": "remote", "url": mock.url(), "oauth": {"callbackPort": mock_oauth::free_port()}});
    let t = start_runtime(json!({"mcp": {"docs": docs}})).await;
    assert_eq!(t.get("/mcp").await.1["docs"], json!({"status": "needs_auth"}));
    let mut events = t.events().await;
    let request = t.http.post(t.at("/mcp/docs/auth/authenticate")).json(&json!({}));
    let waiting = tokio::spawn(send(request));

    // No browser is opened: the URL is announced, and the test plays the browser.
    let announced = next_of(&mut events, "mcp.browser.open.failed").await;
    assert_eq!(announced["mcpName"], "docs");
    let url = announced["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/tenant/authorize?", mock.base)), "{url}");
    let page = reqwest::get(url).await.unwrap().text().await.unwrap();
    assert!(page.contains("Authorization successful"), "{page}");

    assert_eq!(waiting.await.unwrap(), (200, json!({"status": "connected"})));
    assert_eq!(mock.state().verified_exchanges, 1);
    assert_eq!(t.get("/mcp").await.1["docs"], json!({"status": "connected"}));
}

/// The `properties` of the next event of type `kind`.
async fn next_of(events: &mut super::events::Events, kind: &str) -> Value {
    loop {
        let (_, event) = events.next().await;
        if event["type"] == kind {
            return event["properties"].clone();
        }
    }
}
