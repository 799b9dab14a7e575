//! `opencode mcp auth|list|logout` against the local OAuth-protected MCP mock of the MCP crate's
//! suite: the test plays the browser by following the printed authorization URL.

use std::io::BufRead;
use std::io::BufReader;
use std::process::Stdio;

use serde_json::Value;
use serde_json::json;

use super::support::Home;

#[path = "../../../../crates/mcp/tests/suite/mock_oauth.rs"]
#[allow(dead_code, reason = "the MCP crate's suite uses more of the mock")]
mod mock_oauth;

use mock_oauth::MockOAuth;

fn runtime() -> tokio::runtime::Runtime {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

fn configure(home: &Home, mock: &MockOAuth, port: u16) {
    let config = json!({"mcp": {"docs": {"type": "remote", "url": mock.url(), "oauth": {"callbackPort": port}}}});
    std::fs::write(home.global_config(), config.to_string()).unwrap();
}

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn mcp_auth_signs_in_through_the_browser_flow_and_list_and_logout_follow() {
    let rt = runtime();
    let mock = rt.block_on(MockOAuth::start(true));
    let home = Home::new();
    configure(&home, &mock, mock_oauth::free_port());

    let before = home.opencode(&["mcp", "list"]).output().unwrap();
    assert!(before.status.success(), "{before:?}");
    assert!(stdout(&before).contains("needs auth: run `opencode mcp auth docs`"), "{}", stdout(&before));
    assert!(stdout(&before).contains("(OAuth: not authenticated)"), "{}", stdout(&before));

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_opencode"))
        .args(["mcp", "auth", "docs", "--no-browser"])
        .env_clear()
        .env("HOME", home.path().join("home"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .current_dir(home.work())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines
        .by_ref()
        .map(Result::unwrap)
        .find(|line| line.starts_with("http"))
        .expect("the authorization URL is printed");
    assert!(url.starts_with(&format!("{}/tenant/authorize?", mock.base)), "{url}");
    let page = rt.block_on(async { reqwest::get(&url).await.unwrap().text().await.unwrap() });
    assert!(page.contains("Authorization successful"), "{page}");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{rest:?} {stderr}");
    assert!(rest.iter().any(|line| line == "✓ docs connected (1 tools)"), "{rest:?}");

    let file = home.path().join("home/.local/share/opencode/mcp-auth.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["docs"]["serverUrl"], mock.url());
    assert_eq!(stored["docs"]["clientInfo"]["clientId"], "dyn-client-1");
    let access = stored["docs"]["tokens"]["accessToken"].as_str().unwrap().to_owned();
    assert!(mock.state().access_tokens.contains(&access));
    assert_eq!(mock.state().verified_exchanges, 1);

    let after = home.opencode(&["mcp", "list"]).output().unwrap();
    assert!(stdout(&after).contains("connected (1 tools)  (OAuth: authenticated)"), "{}", stdout(&after));

    let logout = home.opencode(&["mcp", "logout", "docs"]).output().unwrap();
    assert!(stdout(&logout).contains("Removed the OAuth credentials of docs"), "{}", stdout(&logout));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored, json!({}));
    let again = home.opencode(&["mcp", "logout", "docs"]).output().unwrap();
    assert!(stdout(&again).contains("No OAuth credentials stored for docs"), "{}", stdout(&again));
    let last = home.opencode(&["mcp", "list"]).output().unwrap();
    assert!(stdout(&last).contains("needs auth"), "{}", stdout(&last));
}

#[test]
fn mcp_auth_refuses_local_servers_and_oauth_false() {
    let home = Home::new();
    let config = json!({"mcp": {
        "fs": {"type": "local", "command": ["true"]},
        "keyed": {"type": "remote", "url": "http://127.0.0.1:9/mcp", "oauth": false},
    }});
    std::fs::write(home.global_config(), config.to_string()).unwrap();
    for (name, expected) in
        [("fs", "remote servers only"), ("keyed", "oauth: false"), ("missing", "no MCP server named missing")]
    {
        let output = home.opencode(&["mcp", "auth", name, "--no-browser"]).output().unwrap();
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
}
