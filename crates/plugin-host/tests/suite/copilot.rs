//! GitHub Copilot's device-code flow against a local mock OAuth server.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use axum::routing::post;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use opencode_config::Env;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::auth::AuthError;
use opencode_plugin_host::auth::AuthMethodKind;
use opencode_plugin_host::auth::copilot::CopilotEndpoints;
use opencode_plugin_host::auth::copilot::CopilotPlugin;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

/// What the mock answers to successive token polls, and what it saw.
#[derive(Default)]
struct Mock {
    polls: Vec<Value>,
    answers: Vec<Value>,
    exchanges: Vec<String>,
}

type Shared = Arc<Mutex<Mock>>;

async fn device_code(Json(body): Json<Value>) -> Json<Value> {
    assert_eq!(body, json!({"client_id": "Ov23li8tweQw6odWQebz", "scope": "read:user"}));
    Json(
        json!({"device_code": "dev_1", "user_code": "ABCD-1234", "verification_uri": "https://github.test/login/device", "interval": 0}),
    )
}

async fn access_token(State(mock): State<Shared>, Json(body): Json<Value>) -> Json<Value> {
    let mut mock = mock.lock().unwrap();
    mock.polls.push(body);
    Json(mock.answers.remove(0))
}

async fn exchange(State(mock): State<Shared>, headers: HeaderMap) -> Json<Value> {
    let mut mock = mock.lock().unwrap();
    mock.exchanges.push(headers["authorization"].to_str().unwrap().to_owned());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    Json(json!({"token": format!("cop_{}", mock.exchanges.len()), "expires_at": now + 1800}))
}

async fn serve(answers: Vec<Value>) -> (String, Shared) {
    let mock: Shared = Arc::new(Mutex::new(Mock { answers, ..Mock::default() }));
    let app = Router::new()
        .route("/login/device/code", post(device_code))
        .route("/login/oauth/access_token", post(access_token))
        .route("/copilot_internal/v2/token", get(exchange))
        .with_state(Arc::clone(&mock));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, mock)
}

fn endpoints(base: &str, exchange: bool) -> CopilotEndpoints {
    let mut endpoints = CopilotEndpoints::under(base, exchange.then(|| format!("{base}/copilot_internal/v2/token")));
    endpoints.poll_margin = Duration::from_millis(5);
    endpoints
}

async fn copilot(base: &str, exchange: bool) -> Arc<dyn opencode_plugin_host::auth::AuthProvider> {
    let host = PluginHost::builder()
        .plugin(Arc::new(CopilotPlugin::new(endpoints(base, exchange))), Requirement::Required)
        .build();
    host.ready().await.unwrap();
    host.auth_providers().pop().unwrap()
}

fn oauth(refresh: &str, access: &str, expires: u64) -> AuthInfo {
    AuthInfo::Oauth { refresh: refresh.into(), access: access.into(), expires, account_id: None, enterprise_url: None }
}

fn now_ms() -> u64 {
    u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

#[tokio::test]
async fn the_device_flow_waits_through_pending_and_slow_down_then_yields_the_github_token() {
    let (base, mock) = serve(vec![
        json!({"error": "authorization_pending"}),
        json!({"error": "slow_down", "interval": 0}),
        json!({"access_token": "gho_abc", "token_type": "bearer", "scope": "read:user"}),
    ])
    .await;
    let copilot = copilot(&base, false).await;
    assert_eq!(copilot.provider(), "github-copilot");
    assert_eq!(copilot.methods()[0].kind, AuthMethodKind::Oauth);

    let authorization = copilot.authorize(0).await.unwrap();
    assert_eq!(authorization.url, "https://github.test/login/device");
    assert_eq!(authorization.user_code.as_deref(), Some("ABCD-1234"));
    assert_eq!(authorization.finish().await.unwrap(), oauth("gho_abc", "gho_abc", 0));

    let polls = mock.lock().unwrap().polls.clone();
    assert_eq!(polls.len(), 3);
    assert_eq!(
        polls[0],
        json!({"client_id": "Ov23li8tweQw6odWQebz", "device_code": "dev_1", "grant_type": "urn:ietf:params:oauth:grant-type:device_code"})
    );
}

#[tokio::test]
async fn a_refused_authorization_is_an_error_with_the_servers_reason() {
    let (base, _mock) = serve(vec![
        json!({"error": "access_denied", "error_description": "The user has denied your application access."}),
    ])
    .await;
    let copilot = copilot(&base, false).await;
    let err = copilot.authorize(0).await.unwrap().finish().await.unwrap_err();
    assert_eq!(err, AuthError::Denied("The user has denied your application access.".into()));
}

#[tokio::test]
async fn exchanged_tokens_are_stored_and_refreshed_before_they_expire() {
    let (base, mock) = serve(vec![json!({"access_token": "gho_abc"})]).await;
    let copilot = copilot(&base, true).await;
    let info = copilot.authorize(0).await.unwrap().finish().await.unwrap();
    let AuthInfo::Oauth { refresh, access, expires, .. } = &info else { panic!("{info:?}") };
    assert_eq!((refresh.as_str(), access.as_str()), ("gho_abc", "cop_1"));
    assert!(*expires > now_ms() + 1_700_000);

    let temp = tempfile::tempdir().unwrap();
    let store = AuthStore::new(temp.path().join("auth.json"), &Env::from_pairs(Vec::<(String, String)>::new()));
    // Fresh: used as stored.
    store.set("github-copilot", info.clone()).unwrap();
    assert_eq!(copilot.credentials(&store).await.unwrap(), Some(info));
    // About to expire (one minute left, inside the five-minute margin): exchanged again and stored.
    store.set("github-copilot", oauth("gho_abc", "cop_old", now_ms() + 60_000)).unwrap();
    let renewed = copilot.credentials(&store).await.unwrap().unwrap();
    assert_eq!(renewed.api_key(), "cop_2");
    assert_eq!(store.get("github-copilot").unwrap(), Some(renewed));
    assert_eq!(mock.lock().unwrap().exchanges, vec!["Bearer gho_abc", "Bearer gho_abc"]);
}
