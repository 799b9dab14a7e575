//! Refresh before a turn: the auth plugins as the runtime's `CredentialRefresher`, against a local
//! mock token endpoint, feeding the catalog's signed-in route and the provider request.

use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::CredentialRefresher;
use opencode_config::Env;
use opencode_llm::LlmClient;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_plugin_host::auth::AuthRefresher;
use opencode_plugin_host::auth::anthropic::AnthropicAuth;
use opencode_plugin_host::auth::anthropic::AnthropicEndpoints;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

fn now_ms() -> u64 {
    u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

fn signed_in(access: &str, expires: u64) -> AuthInfo {
    AuthInfo::Oauth { refresh: "rt-old".into(), access: access.into(), expires, account_id: None, enterprise_url: None }
}

/// A refresher whose Anthropic plugin refreshes at `token_mock`, and a store in a temporary dir.
fn setup(token_mock: &MockProvider) -> (tempfile::TempDir, AuthStore, AuthRefresher) {
    let temp = tempfile::tempdir().unwrap();
    let store = AuthStore::new(temp.path().join("auth.json"), &Env::default());
    let endpoints =
        AnthropicEndpoints { token: format!("{}/v1/oauth/token", token_mock.base_url()), ..Default::default() };
    let refresher = AuthRefresher::new(vec![Arc::new(AnthropicAuth::new(endpoints))]);
    (temp, store, refresher)
}

fn anthropic_text(text: &str) -> MockResponse {
    MockResponse::sse([
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}).to_string(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string(),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}).to_string(),
        json!({"type": "content_block_stop", "index": 0}).to_string(),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}).to_string(),
        json!({"type": "message_stop"}).to_string(),
    ])
}

#[tokio::test]
async fn an_expired_sign_in_is_refreshed_saved_and_sent() {
    let tokens = MockProvider::start().await.unwrap();
    tokens.push(MockResponse::json(
        200,
        &json!({"access_token": "at-new", "refresh_token": "rt-new", "expires_in": 3600}),
    ));
    let provider = MockProvider::start().await.unwrap();
    provider.push(anthropic_text("Hi"));
    let (temp, store, refresher) = setup(&tokens);
    store.set("anthropic", signed_in("at-expired", now_ms() - 1_000)).unwrap();

    let fresh = refresher.fresh("anthropic", &store).await.unwrap().unwrap();
    assert_eq!(fresh.api_key(), "at-new");
    let refresh_body = tokens.requests()[0].body_json().unwrap();
    assert_eq!(refresh_body["grant_type"], "refresh_token");
    assert_eq!(refresh_body["refresh_token"], "rt-old");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(temp.path().join("auth.json")).unwrap()).unwrap();
    assert_eq!((&saved["anthropic"]["access"], &saved["anthropic"]["refresh"]), (&json!("at-new"), &json!("rt-new")));

    let config: Config = serde_json::from_value(
        json!({"provider": {"anthropic": {"options": {"baseURL": format!("{}/v1", provider.base_url())}}}}),
    )
    .unwrap();
    let catalog = Catalog::bundled().unwrap().with_config(&config).unwrap();
    let resolved = catalog.resolve("anthropic", "claude-sonnet-4-5", None, Some(&fresh), &Env::default()).unwrap();
    let request = LlmRequest::new(resolved.api_id.clone()).message(Message::user("hello"));
    let response = LlmClient::new().generate(&resolved.route, &request).await.unwrap();
    assert_eq!(response.message.text(), "Hi");
    assert_eq!(provider.requests()[0].header("authorization"), Some("Bearer at-new"));
}

#[tokio::test]
async fn a_fresh_sign_in_is_used_as_stored() {
    let tokens = MockProvider::start().await.unwrap();
    let (_temp, store, refresher) = setup(&tokens);
    let stored = signed_in("at-valid", now_ms() + 3_600_000);
    store.set("anthropic", stored.clone()).unwrap();
    assert_eq!(refresher.fresh("anthropic", &store).await.unwrap(), Some(stored));
    assert!(tokens.requests().is_empty(), "no refresh while the token is fresh");
}

#[tokio::test]
async fn a_failed_refresh_of_an_expired_token_says_to_sign_in_again() {
    let tokens = MockProvider::start().await.unwrap();
    tokens.push(MockResponse::json(400, &json!({"error": "invalid_grant"})));
    let (_temp, store, refresher) = setup(&tokens);
    let stored = signed_in("at-expired", now_ms() - 1_000);
    store.set("anthropic", stored.clone()).unwrap();
    let err = refresher.fresh("anthropic", &store).await.unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("cannot refresh the `anthropic` sign-in: "), "{message}");
    assert!(message.contains("HTTP 400") && !message.contains('\n'), "{message}");
    assert_eq!(err.hint(), "sign in again with `opencode auth login anthropic`");
    assert_eq!(store.get("anthropic").unwrap(), Some(stored), "nothing half-written");
}

#[tokio::test]
async fn a_failed_refresh_of_a_token_still_valid_keeps_using_it() {
    let tokens = MockProvider::start().await.unwrap();
    tokens.push(MockResponse::json(503, &json!({"error": "unavailable"})));
    let (_temp, store, refresher) = setup(&tokens);
    let stored = signed_in("at-soon", now_ms() + 60_000);
    store.set("anthropic", stored.clone()).unwrap();
    assert_eq!(refresher.fresh("anthropic", &store).await.unwrap(), Some(stored));
    assert_eq!(tokens.requests().len(), 1, "a refresh was attempted within the margin");
}

#[tokio::test]
async fn providers_without_a_plugin_and_api_keys_pass_through() {
    let tokens = MockProvider::start().await.unwrap();
    let (_temp, store, refresher) = setup(&tokens);
    let key = AuthInfo::Api { key: "gsk".into(), metadata: None };
    store.set("groq", key.clone()).unwrap();
    assert_eq!(refresher.fresh("groq", &store).await.unwrap(), Some(key));
    assert_eq!(refresher.fresh("nobody", &store).await.unwrap(), None);
    assert!(tokens.requests().is_empty());
}
