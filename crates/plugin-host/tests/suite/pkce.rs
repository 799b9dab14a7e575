//! The PKCE sign-in flows (Anthropic pasted code, OpenAI local callback) against a local mock OAuth
//! token endpoint: authorize URL, code exchange, refresh before expiry.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use opencode_config::Env;
use opencode_plugin_host::auth::AuthError;
use opencode_plugin_host::auth::AuthProvider;
use opencode_plugin_host::auth::anthropic::AnthropicAuth;
use opencode_plugin_host::auth::anthropic::AnthropicEndpoints;
use opencode_plugin_host::auth::openai::OpenAiAuth;
use opencode_plugin_host::auth::openai::OpenAiEndpoints;
use opencode_plugin_host::auth::pkce::challenge;
use pretty_assertions::assert_eq;
use reqwest::Url;
use serde_json::Value;
use serde_json::json;

/// What the token endpoint saw: content type and body of each request.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

async fn token(State((seen, answer)): State<(Seen, Value)>, headers: HeaderMap, body: String) -> axum::Json<Value> {
    let kind = headers["content-type"].to_str().unwrap().to_owned();
    seen.lock().unwrap().push((kind, body));
    axum::Json(answer)
}

async fn serve(answer: Value) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let app = Router::new().route("/oauth/token", post(token)).with_state((Arc::clone(&seen), answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (base, seen)
}

fn query(url: &str) -> HashMap<String, String> {
    Url::parse(url).unwrap().query_pairs().into_owned().collect()
}

fn form(body: &str) -> HashMap<String, String> {
    query(&format!("http://x/?{body}"))
}

fn now_ms() -> u64 {
    u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

fn store() -> (tempfile::TempDir, AuthStore) {
    let temp = tempfile::tempdir().unwrap();
    let store = AuthStore::new(temp.path().join("auth.json"), &Env::from_pairs(Vec::<(String, String)>::new()));
    (temp, store)
}

fn anthropic(base: &str) -> AnthropicAuth {
    AnthropicAuth::new(AnthropicEndpoints { token: format!("{base}/oauth/token"), ..AnthropicEndpoints::default() })
}

#[tokio::test]
async fn anthropic_signs_in_with_a_pasted_code_and_pkce_then_refreshes_before_expiry() {
    let (base, seen) =
        serve(json!({"access_token": "sk-ant-oat-1", "refresh_token": "rt-1", "expires_in": 3600})).await;
    let auth = anthropic(&base);
    let authorization = auth.authorize(0).await.unwrap();
    assert!(authorization.needs_code());
    assert!(authorization.url.starts_with("https://claude.ai/oauth/authorize?"), "{}", authorization.url);
    let params = query(&authorization.url);
    let verifier = params["state"].clone();
    assert_eq!(params["code_challenge"], challenge(&verifier));
    assert_eq!(params["code_challenge_method"], "S256");
    assert_eq!(params["client_id"], "9d1c250a-e61b-44d9-88ed-5944d1962f5e");
    assert_eq!(params["response_type"], "code");
    assert_eq!(params["scope"], "org:create_api_key user:profile user:inference");

    let info = authorization.finish_with_code(&format!("the-code#{verifier}\n")).await.unwrap();
    let AuthInfo::Oauth { refresh, access, expires, .. } = &info else { panic!("{info:?}") };
    assert_eq!((refresh.as_str(), access.as_str()), ("rt-1", "sk-ant-oat-1"));
    assert!(*expires > now_ms() + 3_500_000 && *expires <= now_ms() + 3_600_000);
    let (kind, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(kind, "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"code": "the-code", "state": verifier, "grant_type": "authorization_code",
               "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e",
               "redirect_uri": "https://console.anthropic.com/oauth/code/callback", "code_verifier": verifier})
    );

    let (_temp, store) = store();
    store.set("anthropic", info.clone()).unwrap();
    assert_eq!(auth.credentials(&store).await.unwrap(), Some(info), "fresh tokens are used as stored");
    let due = AuthInfo::Oauth {
        refresh: "rt-0".into(),
        access: "old".into(),
        expires: now_ms() + 60_000,
        account_id: None,
        enterprise_url: None,
    };
    store.set("anthropic", due).unwrap();
    let renewed = auth.credentials(&store).await.unwrap().unwrap();
    assert_eq!(renewed.api_key(), "sk-ant-oat-1");
    assert_eq!(store.get("anthropic").unwrap(), Some(renewed));
    let (_, body) = seen.lock().unwrap()[1].clone();
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap(),
        json!({"grant_type": "refresh_token", "refresh_token": "rt-0", "client_id": "9d1c250a-e61b-44d9-88ed-5944d1962f5e"})
    );
}

#[tokio::test]
async fn anthropic_rejects_a_code_from_another_login_and_an_empty_code() {
    let (base, seen) = serve(json!({"access_token": "x"})).await;
    let auth = anthropic(&base);
    let wrong = auth.authorize(0).await.unwrap().finish_with_code("code#other-state").await;
    assert_eq!(wrong, Err(AuthError::StateMismatch));
    let empty = auth.authorize(0).await.unwrap().finish_with_code("  ").await;
    assert_eq!(empty, Err(AuthError::CodeRequired));
    assert!(seen.lock().unwrap().is_empty(), "nothing was exchanged");
}

fn openai(base: &str) -> OpenAiAuth {
    OpenAiAuth::new(OpenAiEndpoints { issuer: base.to_owned(), ports: vec![0], ..OpenAiEndpoints::default() })
}

fn id_token(claims: &Value) -> String {
    use base64::Engine;
    format!("e30.{}.sig", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string()))
}

#[tokio::test]
async fn openai_signs_in_through_the_local_callback_and_refreshes() {
    let claims = json!({"https://api.openai.com/auth": {"chatgpt_account_id": "acct_7"}});
    let (base, seen) = serve(
        json!({"id_token": id_token(&claims), "access_token": "at-1", "refresh_token": "rt-1", "expires_in": 864000}),
    )
    .await;
    let auth = openai(&base);
    let authorization = auth.authorize(0).await.unwrap();
    assert!(!authorization.needs_code());
    assert!(authorization.url.starts_with(&format!("{base}/oauth/authorize?")), "{}", authorization.url);
    let params = query(&authorization.url);
    assert_eq!(params["client_id"], "app_EMoamEEZ73f0CkXaXp7hrann");
    assert_eq!(params["scope"], "openid profile email offline_access");
    assert_eq!(params["code_challenge_method"], "S256");
    let redirect = params["redirect_uri"].clone();
    assert!(redirect.starts_with("http://localhost:") && redirect.ends_with("/auth/callback"), "{redirect}");
    let finish = tokio::spawn(authorization.finish());

    // The browser comes back: first something unrelated, then the callback.
    let http = browser();
    let port = Url::parse(&redirect).unwrap().port().unwrap();
    let favicon = http.get(format!("http://127.0.0.1:{port}/favicon.ico")).send().await.unwrap();
    assert_eq!(favicon.status(), 404);
    let page = http
        .get(format!("http://127.0.0.1:{port}/auth/callback?code=c-1&state={}", params["state"]))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Signed in"));
    let info = finish.await.unwrap().unwrap();
    let AuthInfo::Oauth { refresh, access, account_id, .. } = &info else { panic!("{info:?}") };
    assert_eq!((refresh.as_str(), access.as_str(), account_id.as_deref()), ("rt-1", "at-1", Some("acct_7")));
    let (kind, body) = seen.lock().unwrap()[0].clone();
    assert_eq!(kind, "application/x-www-form-urlencoded");
    let body = form(&body);
    assert_eq!(body["grant_type"], "authorization_code");
    assert_eq!(body["code"], "c-1");
    assert_eq!(body["redirect_uri"], redirect);
    assert_eq!(challenge(&body["code_verifier"]), params["code_challenge"]);

    let (_temp, store) = store();
    let due = AuthInfo::Oauth {
        refresh: "rt-0".into(),
        access: "old".into(),
        expires: now_ms() - 1,
        account_id: Some("acct_7".into()),
        enterprise_url: None,
    };
    store.set("openai", due).unwrap();
    assert_eq!(auth.credentials(&store).await.unwrap().unwrap().api_key(), "at-1");
    let refresh = form(&seen.lock().unwrap()[1].1);
    assert_eq!(refresh["grant_type"], "refresh_token");
    assert_eq!(refresh["refresh_token"], "rt-0");
}

#[tokio::test]
async fn openai_reports_a_refused_callback_a_state_mismatch_and_a_taken_port() {
    let (base, seen) = serve(json!({"access_token": "x"})).await;
    let auth = openai(&base);
    let http = browser();
    for (query, expected) in [
        (
            "error=access_denied&error_description=missing_codex_entitlement".to_owned(),
            AuthError::Denied("missing_codex_entitlement".into()),
        ),
        ("code=c&state=forged".to_owned(), AuthError::StateMismatch),
    ] {
        let authorization = auth.authorize(0).await.unwrap();
        let redirect = query_of(&authorization.url);
        let finish = tokio::spawn(authorization.finish());
        let page = http.get(format!("{redirect}?{query}")).send().await.unwrap();
        assert_eq!(page.status(), 400);
        assert_eq!(finish.await.unwrap(), Err(expected));
    }
    assert!(seen.lock().unwrap().is_empty());

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let busy = OpenAiAuth::new(OpenAiEndpoints {
        issuer: base,
        ports: vec![port],
        wait: Duration::from_secs(1),
        ..OpenAiEndpoints::default()
    });
    let err = busy.authorize(0).await.unwrap_err();
    assert!(matches!(&err, AuthError::CallbackPort { ports, .. } if *ports == port.to_string()), "{err}");
    assert!(err.to_string().starts_with(&format!("cannot listen for the sign-in callback on 127.0.0.1 port {port}")));
}

fn query_of(url: &str) -> String {
    query(url)["redirect_uri"].replace("localhost", "127.0.0.1")
}

/// A browser's HTTP client (the TLS provider installed first: the test may run alone, without a
/// workspace crate that picks one).
fn browser() -> reqwest::Client {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
