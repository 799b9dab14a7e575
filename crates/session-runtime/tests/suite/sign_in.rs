//! Signed-in providers: before a turn the runtime refreshes a sign-in that expires within five
//! minutes (saving it to auth.json), and the turn's request carries the new token on the provider's
//! signed-in route; a sign-in that cannot be refreshed fails the drain with a one-line error.

use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_llm::ClientOptions;
use opencode_llm::LlmClient;
use opencode_llm::RetryPolicy;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_plugin_host::auth::AuthRefresher;
use opencode_plugin_host::auth::anthropic::AnthropicAuth;
use opencode_plugin_host::auth::anthropic::AnthropicEndpoints;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_store::NewSession;
use opencode_session_store::Store;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::fast_retries;

fn now_ms() -> u64 {
    u64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()).unwrap()
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

/// A runtime on `anthropic/c` at `provider`, refreshing Anthropic sign-ins at `tokens`, with an
/// Anthropic sign-in that expired a second ago in auth.json.
async fn setup(
    provider: &MockProvider,
    tokens: &MockProvider,
) -> (tempfile::TempDir, tempfile::TempDir, SessionRuntime, String) {
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let config: Config = serde_json::from_value(json!({
        "model": "anthropic/c",
        "provider": {"anthropic": {
            "npm": "@ai-sdk/anthropic",
            "options": {"baseURL": format!("{}/v1", provider.base_url())},
            "models": {"c": {"limit": {"context": 200000, "output": 8000}, "cost": {"input": 3.0, "output": 15.0}}}
        }}
    }))
    .unwrap();
    let paths = Paths::under(data.path());
    let expired = AuthInfo::Oauth {
        refresh: "rt-old".into(),
        access: "at-expired".into(),
        expires: now_ms() - 1_000,
        account_id: None,
        enterprise_url: None,
    };
    AuthStore::new(paths.auth_file(), &Env::default()).set("anthropic", expired).unwrap();
    let endpoints = AnthropicEndpoints { token: format!("{}/v1/oauth/token", tokens.base_url()), ..Default::default() };
    let refresher = AuthRefresher::new(vec![Arc::new(AnthropicAuth::new(endpoints))]);
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let llm = LlmClient::with_options(ClientOptions { retry: RetryPolicy::none(), ..ClientOptions::default() });
    let catalog = Arc::new(Catalog::default().with_config(&config).unwrap());
    let options = RuntimeOptions { retry: fast_retries(), titles: false, ..RuntimeOptions::default() };
    let runtime = SessionRuntime::builder(store, llm, catalog, Arc::new(config), paths)
        .credentials(Arc::new(refresher))
        .options(options)
        .build();
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    (project, data, runtime, session.id)
}

#[tokio::test]
async fn an_expired_sign_in_is_refreshed_before_the_turn_and_sent() {
    let (provider, tokens) = (MockProvider::start().await.unwrap(), MockProvider::start().await.unwrap());
    tokens.push(MockResponse::json(
        200,
        &json!({"access_token": "at-new", "refresh_token": "rt-new", "expires_in": 3600}),
    ));
    provider.push(anthropic_text("Hi"));
    let (_project, data, runtime, session) = setup(&provider, &tokens).await;

    let result = runtime.run(PromptRequest::text(&session, "hello")).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);
    assert_eq!(result.session.cost, 0.0, "a subscription pays for its tokens");
    let sent = &provider.requests()[0];
    assert_eq!(sent.path_and_query, "/v1/messages?beta=true");
    assert_eq!(sent.header("authorization"), Some("Bearer at-new"));
    assert_eq!(sent.header("x-api-key"), None);
    let stored = AuthStore::new(Paths::under(data.path()).auth_file(), &Env::default()).get("anthropic").unwrap();
    let Some(AuthInfo::Oauth { access, refresh, expires, .. }) = stored else { panic!("{stored:?}") };
    assert_eq!((access.as_str(), refresh.as_str()), ("at-new", "rt-new"));
    assert!(expires > now_ms() + 3_000_000);
    assert_eq!(tokens.requests().len(), 1);
}

#[tokio::test]
async fn a_sign_in_that_cannot_be_refreshed_fails_the_drain_with_the_login_hint() {
    let (provider, tokens) = (MockProvider::start().await.unwrap(), MockProvider::start().await.unwrap());
    tokens.push(MockResponse::json(400, &json!({"error": "invalid_grant"})));
    let (_project, _data, runtime, session) = setup(&provider, &tokens).await;

    let result = runtime.run(PromptRequest::text(&session, "hello")).await.unwrap();
    let DrainOutcome::Failed { message, hint } = result.outcome else { panic!("{:?}", result.outcome) };
    assert!(message.starts_with("cannot refresh the `anthropic` sign-in:"), "{message}");
    assert!(!message.contains('\n'), "{message}");
    assert!(hint.contains("opencode auth login"), "{hint}");
    assert!(provider.requests().is_empty(), "no request with a dead token");
}
