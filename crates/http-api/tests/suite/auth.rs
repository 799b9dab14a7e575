use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use opencode_http_api::Credentials;
use opencode_http_api::ServerOptions;
use pretty_assertions::assert_eq;

use super::start_with;

fn protected() -> ServerOptions {
    ServerOptions {
        port: 0,
        credentials: Some(Credentials { username: "opencode".into(), password: "hunter2".into() }),
        ..ServerOptions::default()
    }
}

#[tokio::test]
async fn requests_without_credentials_get_401_with_a_basic_challenge() {
    let t = start_with(protected()).await;
    let response = t.http.get(t.at("/global/health")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(response.headers()["www-authenticate"], "Basic realm=\"Secure Area\"");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["data"]["code"], "UNAUTHORIZED");
}

#[tokio::test]
async fn wrong_credentials_are_rejected_and_right_ones_accepted() {
    let t = start_with(protected()).await;
    let wrong = t.http.get(t.at("/global/health")).basic_auth("opencode", Some("hunter3")).send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let right = t.http.get(t.at("/global/health")).basic_auth("opencode", Some("hunter2")).send().await.unwrap();
    assert_eq!(right.status().as_u16(), 200);
}

#[tokio::test]
async fn auth_token_query_works_for_event_source_clients() {
    let t = start_with(protected()).await;
    let token = STANDARD.encode("opencode:hunter2");
    let ok = t.http.get(t.at(&format!("/global/health?auth_token={token}"))).send().await.unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    let bad = STANDARD.encode("opencode:nope");
    let rejected = t.http.get(t.at(&format!("/global/health?auth_token={bad}"))).send().await.unwrap();
    assert_eq!(rejected.status().as_u16(), 401);
}

#[tokio::test]
async fn binding_beyond_loopback_without_a_password_warns() {
    let t = start_with(ServerOptions { hostname: "0.0.0.0".into(), port: 0, ..ServerOptions::default() }).await;
    assert_eq!(t.server.warnings().len(), 1);
    assert!(t.server.warnings()[0].contains("OPENCODE_SERVER_PASSWORD"));
    let quiet = start_with(ServerOptions { port: 0, ..ServerOptions::default() }).await;
    assert!(quiet.server.warnings().is_empty());
}
