//! OAuth for remote servers and the legacy HTTP+SSE fallback, against the local mock in
//! `mock_oauth.rs`.

use std::time::Duration;

use opencode_mcp::AuthStatus;
use opencode_mcp::McpAuthStore;
use opencode_mcp::McpError;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_mcp::OAuthTarget;
use opencode_mcp::ServerStatus;
use opencode_mcp::oauth::Authorization;
use opencode_mcp::oauth::McpClientInfo;
use opencode_mcp::oauth::McpTokens;
use opencode_mcp::oauth::authorize;
use opencode_tool_registry::SettlementStatus;
use serde_json::Value;
use serde_json::json;

use super::mock_oauth::MockOAuth;
use super::mock_oauth::free_port;
use super::support::Env;
use super::support::failed;
use super::support::servers;

/// The environment, the mock, and a store in the temporary directory.
async fn setup(registration: bool) -> (Env, MockOAuth, McpAuthStore) {
    let env = Env::new();
    let mock = MockOAuth::start(registration).await;
    let store = McpAuthStore::new(&env.project.join("data"));
    (env, mock, store)
}

fn remote(url: &str, oauth: Value) -> Value {
    let mut entry = json!({"type": "remote", "url": url});
    if !oauth.is_null() {
        entry["oauth"] = oauth;
    }
    entry
}

async fn connect(env: &Env, store: &McpAuthStore, entry: Value) -> McpManager {
    let options = McpOptions::new(&env.project).with_auth_store(Some(store.clone()));
    let manager = McpManager::start(&servers(json!({ "docs": entry })), options);
    manager.attach(&env.registry);
    manager.settled().await;
    manager
}

/// Runs `authorize` and follows the printed URL like a browser (the mock redirects to the callback).
async fn sign_in(target: &OAuthTarget, store: &McpAuthStore) -> Result<Authorization, McpError> {
    let (url_tx, url_rx) = tokio::sync::oneshot::channel::<String>();
    let browser = tokio::spawn(async move {
        let Ok(url) = url_rx.await else { return None };
        let page = reqwest::get(&url).await.unwrap();
        Some((url, page.status(), page.text().await.unwrap()))
    });
    let outcome = authorize(target, store, Duration::from_secs(120), move |url| {
        url_tx.send(url.to_owned()).unwrap();
    })
    .await;
    if let Some((url, status, page)) = browser.await.unwrap() {
        assert!(status.is_success(), "{url}: {status} {page}");
        assert!(page.contains("Authorization successful"), "{page}");
    }
    outcome
}

fn tokens(store: &McpAuthStore) -> McpTokens {
    store.get("docs").unwrap().and_then(|entry| entry.tokens).expect("stored tokens")
}

#[tokio::test]
async fn sign_in_discovers_registers_checks_pkce_stores_tokens_and_connects_with_them() {
    let (env, mock, store) = setup(true).await;
    let port = free_port();
    let entry = remote(&mock.url(), json!({"callbackPort": port}));
    let target = OAuthTarget::from_config("docs", &servers(json!({"docs": entry.clone()}))["docs"]).unwrap();
    assert_eq!(target.settings.redirect_uri, format!("http://127.0.0.1:{port}/mcp/oauth/callback"));

    assert_eq!(sign_in(&target, &store).await.unwrap(), Authorization::Authorized);
    {
        let state = mock.state();
        assert_eq!(state.registrations, 1);
        assert_eq!(state.verified_exchanges, 1);
        assert!(state.requests.contains(&"GET /.well-known/oauth-protected-resource/mcp".to_owned()));
        assert!(state.requests.contains(&"GET /.well-known/oauth-authorization-server/tenant".to_owned()));
    }
    let stored = store.get("docs").unwrap().unwrap();
    assert_eq!(stored.server_url.as_deref(), Some(mock.url().as_str()));
    assert_eq!(stored.client_info.as_ref().map(|info| info.client_id.as_str()), Some("dyn-client-1"));
    let access = stored.tokens.unwrap().access_token;
    assert!(mock.state().access_tokens.contains(&access));
    assert_eq!(store.status("docs", &mock.url()).unwrap(), AuthStatus::Authenticated);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(store.path()).unwrap().permissions().mode() & 0o777, 0o600);
    }

    let manager = connect(&env, &store, entry).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::Connected));
    assert!(mock.state().mcp_authorization.contains(&Some(format!("Bearer {access}"))));
    let echoed = env.call("docs_echo", json!({"text": "hello"})).await;
    assert_eq!(echoed.status, SettlementStatus::Completed);
    assert_eq!(echoed.text, "hello");

    // A second sign-in reuses the registered client.
    assert_eq!(sign_in(&target, &store).await.unwrap(), Authorization::Authorized);
    assert_eq!(mock.state().registrations, 1);
    assert_eq!(mock.state().verified_exchanges, 2);
}

#[tokio::test]
async fn a_configured_client_id_is_used_without_registration() {
    let (_env, mock, store) = setup(false).await;
    let entry = remote(&mock.url(), json!({"clientId": "fixed-client", "callbackPort": free_port()}));
    let target = OAuthTarget::from_config("docs", &servers(json!({"docs": entry}))["docs"]).unwrap();
    assert_eq!(sign_in(&target, &store).await.unwrap(), Authorization::Authorized);
    assert_eq!(mock.state().registrations, 0);
    assert!(store.get("docs").unwrap().unwrap().client_info.is_none());
}

#[tokio::test]
async fn without_registration_or_client_id_sign_in_asks_for_a_client_id() {
    let (_env, mock, store) = setup(false).await;
    let entry = remote(&mock.url(), json!({"callbackPort": free_port()}));
    let target = OAuthTarget::from_config("docs", &servers(json!({"docs": entry}))["docs"]).unwrap();
    let err = sign_in(&target, &store).await.unwrap_err();
    assert_eq!(err, McpError::NeedsClientRegistration);
    assert!(err.hint().contains("clientId"));
}

#[tokio::test]
async fn a_server_without_a_token_needs_auth_and_start_up_does_not_run_the_flow() {
    let (env, mock, store) = setup(true).await;
    let manager = connect(&env, &store, remote(&mock.url(), Value::Null)).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::NeedsAuth));
    assert!(!env.tool_names().iter().any(|name| name.starts_with("docs_")));
    let state = mock.state();
    assert!(state.requests.iter().all(|request| request.ends_with("/mcp")), "{:?}", state.requests);
    assert_eq!(state.mcp_authorization, [None]);
    assert_eq!(store.status("docs", &mock.url()).unwrap(), AuthStatus::NotAuthenticated);
}

fn store_tokens(store: &McpAuthStore, mock: &MockOAuth, access: &str, refresh: &str, expires_at: Option<f64>) {
    store
        .update("docs", Some(&mock.url()), |entry| {
            entry.tokens = Some(McpTokens {
                access_token: access.into(),
                refresh_token: Some(refresh.into()),
                expires_at,
                scope: None,
            });
            entry.client_info = Some(McpClientInfo {
                client_id: "fixed-client".into(),
                client_secret: None,
                client_id_issued_at: None,
                client_secret_expires_at: None,
            });
        })
        .unwrap();
}

#[tokio::test]
async fn an_expired_token_is_refreshed_before_connecting() {
    let (env, mock, store) = setup(true).await;
    let (access, refresh) = mock.issue();
    store_tokens(&store, &mock, &access, &refresh, Some(1.0));
    mock.state().expires_in = Some(3600);

    let manager = connect(&env, &store, remote(&mock.url(), Value::Null)).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::Connected));
    let state = mock.state();
    assert_eq!(state.refreshes, 1);
    let fresh = tokens(&store);
    assert_ne!(fresh.access_token, access);
    assert!(fresh.expires_at.is_some_and(|at| at > 1.0));
    // The expired token was never sent.
    assert_eq!(state.mcp_authorization[0], Some(format!("Bearer {}", fresh.access_token)));
}

#[tokio::test]
async fn a_rejected_token_is_refreshed_once_and_a_rejected_refresh_needs_auth() {
    let (env, mock, store) = setup(true).await;
    let (_, refresh) = mock.issue();
    store_tokens(&store, &mock, "revoked", &refresh, None);
    let manager = connect(&env, &store, remote(&mock.url(), Value::Null)).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::Connected));
    assert_eq!(mock.state().refreshes, 1);
    assert_eq!(mock.state().mcp_authorization[0].as_deref(), Some("Bearer revoked"));
    drop(manager);

    store_tokens(&store, &mock, "revoked", "unknown-refresh", None);
    let manager = connect(&env, &store, remote(&mock.url(), Value::Null)).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::NeedsAuth));
    assert_eq!(mock.state().refreshes, 1);
}

#[tokio::test]
async fn oauth_false_sends_no_stored_token_and_reports_the_401() {
    let (env, mock, store) = setup(true).await;
    let (access, refresh) = mock.issue();
    store_tokens(&store, &mock, &access, &refresh, None);
    let manager = connect(&env, &store, remote(&mock.url(), json!(false))).await;
    let error = failed(manager.status("docs"));
    assert!(error.contains("OAuth is disabled"), "{error}");
    assert_eq!(mock.state().mcp_authorization, [None]);
    let entry = servers(json!({"docs": remote(&mock.url(), json!(false))}));
    assert!(matches!(OAuthTarget::from_config("docs", &entry["docs"]), Err(McpError::OAuthUnsupported { .. })));
}

#[tokio::test]
async fn tokens_are_not_sent_to_another_url() {
    let (env, mock, store) = setup(true).await;
    let (access, refresh) = mock.issue();
    store_tokens(&store, &mock, &access, &refresh, None);
    store.update("docs", Some("https://elsewhere.test/mcp"), |_| {}).unwrap();
    let manager = connect(&env, &store, remote(&mock.url(), Value::Null)).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::NeedsAuth));
    assert_eq!(mock.state().mcp_authorization, [None]);
}

#[tokio::test]
async fn a_legacy_sse_server_is_reached_after_streamable_http_is_refused() {
    let (env, mock, store) = setup(true).await;
    let manager = connect(&env, &store, remote(&mock.sse_url(), json!(false))).await;
    assert_eq!(manager.status("docs"), Some(ServerStatus::Connected));
    assert_eq!(manager.reports()[0].tools, ["docs_echo"]);
    let echoed = env.call("docs_echo", json!({"text": "over sse"})).await;
    assert_eq!(echoed.status, SettlementStatus::Completed);
    assert_eq!(echoed.text, "over sse");
    let requests = mock.state().requests.clone();
    assert_eq!(requests[0], "GET /sse", "{requests:?}");
    assert!(requests.contains(&"POST /messages".to_owned()), "{requests:?}");
}
