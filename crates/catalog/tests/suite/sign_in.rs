//! Route selection by credential: an `oauth` entry in `auth.json` yields the provider's signed-in
//! route (Claude Pro/Max, the ChatGPT Codex backend, GitHub Copilot); API keys keep the plain one.

use opencode_catalog::{Catalog, CredentialOrigin};
use opencode_config::{AuthInfo, Config, Env};
use opencode_llm::{Auth, LlmClient, LlmRequest, Message, Secret};
use opencode_mock_provider::{MockProvider, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

fn oauth(access: &str, account: Option<&str>) -> AuthInfo {
    AuthInfo::Oauth {
        refresh: "rt".into(),
        access: access.into(),
        expires: 0,
        account_id: account.map(str::to_owned),
        enterprise_url: None,
    }
}

fn header<'a>(route: &'a opencode_llm::Route, name: &str) -> Option<&'a str> {
    route.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
}

#[test]
fn an_anthropic_sign_in_yields_the_claude_pro_max_route() {
    let catalog = Catalog::bundled().unwrap();
    let stored = oauth("sk-ant-oat", None);
    let resolved = catalog.resolve("anthropic", "claude-sonnet-4-5", None, Some(&stored), &Env::default()).unwrap();
    let credential = resolved.credential.clone().unwrap();
    assert_eq!(credential.origin, CredentialOrigin::AuthFile);
    assert!(credential.sign_in.is_some());
    assert_eq!(resolved.route.auth, Auth::Bearer(Secret::Value("sk-ant-oat".into())));
    assert_eq!(resolved.route.endpoint.query, vec![("beta".to_owned(), "true".to_owned())]);
    assert!(header(&resolved.route, "anthropic-beta").is_some_and(|betas| betas.contains("oauth-2025-04-20")));
    assert_eq!(resolved.route.shape.tool_name_prefix.as_deref(), Some("mcp_"));
    assert!(resolved.signed_in());
}

#[test]
fn an_openai_sign_in_yields_the_codex_route_with_the_account() {
    let catalog = Catalog::bundled().unwrap();
    let stored = oauth("at", Some("acct-9"));
    let resolved = catalog.resolve("openai", "gpt-5", None, Some(&stored), &Env::default()).unwrap();
    assert_eq!(resolved.route.endpoint.base_url, "https://chatgpt.com/backend-api/codex");
    assert_eq!(resolved.route.protocol.id(), "openai-responses");
    assert_eq!(resolved.route.auth, Auth::Bearer(Secret::Value("at".into())));
    assert_eq!(header(&resolved.route, "chatgpt-account-id"), Some("acct-9"));
    assert!(resolved.route.shape.omit_max_tokens);
}

#[test]
fn api_keys_keep_todays_routes() {
    let catalog = Catalog::bundled().unwrap();
    let key = AuthInfo::Api { key: "sk".into(), metadata: None };
    let anthropic = catalog.resolve("anthropic", "claude-sonnet-4-5", None, Some(&key), &Env::default()).unwrap();
    assert_eq!(anthropic.route.auth, Auth::Header { name: "x-api-key".into(), secret: Secret::Value("sk".into()) });
    assert!(anthropic.route.endpoint.query.is_empty() && anthropic.route.shape.is_empty());
    assert!(!anthropic.signed_in());
    assert_eq!(anthropic.credential.unwrap().sign_in, None);
    let openai = catalog.resolve("openai", "gpt-5", None, Some(&key), &Env::default()).unwrap();
    assert_eq!(openai.route.endpoint.base_url, "https://api.openai.com/v1");
    assert!(openai.route.shape.is_empty() && header(&openai.route, "chatgpt-account-id").is_none());
}

#[test]
fn a_sign_in_elsewhere_is_sent_as_the_key() {
    let catalog = Catalog::bundled().unwrap();
    let stored = oauth("tok", None);
    let resolved = catalog.resolve("groq", "llama-3.3-70b-versatile", None, Some(&stored), &Env::default()).unwrap();
    assert_eq!(resolved.route.auth, Auth::Bearer(Secret::Value("tok".into())));
    assert!(resolved.route.shape.is_empty() && !resolved.signed_in());
}

#[test]
fn copilot_models_take_responses_from_gpt_5_on_except_mini() {
    let catalog = Catalog::bundled().unwrap();
    let stored = oauth("gho", None);
    let protocol = |model: &str| {
        let resolved = catalog.resolve("github-copilot", model, None, Some(&stored), &Env::default()).unwrap();
        assert_eq!(resolved.route.endpoint.base_url, "https://api.githubcopilot.com");
        assert_eq!(resolved.route.auth, Auth::Bearer(Secret::Value("gho".into())));
        assert_eq!(header(&resolved.route, "openai-intent"), Some("conversation-edits"));
        resolved.route.protocol.id()
    };
    assert_eq!(protocol("gpt-5"), "openai-responses");
    assert_eq!(protocol("gpt-5.1-codex"), "openai-responses");
    assert_eq!(protocol("gpt-5-mini"), "openai-compatible-chat");
    assert_eq!(protocol("gpt-4.1"), "openai-compatible-chat");
    assert_eq!(protocol("claude-sonnet-4.5"), "openai-compatible-chat");
}

#[test]
fn a_copilot_enterprise_sign_in_goes_to_its_host() {
    let catalog = Catalog::bundled().unwrap();
    let stored = AuthInfo::Oauth {
        refresh: "gho".into(),
        access: "gho".into(),
        expires: 0,
        account_id: None,
        enterprise_url: Some("github.acme.com".into()),
    };
    let resolved = catalog.resolve("github-copilot", "gpt-4.1", None, Some(&stored), &Env::default()).unwrap();
    assert_eq!(resolved.route.endpoint.base_url, "https://copilot-api.github.acme.com");
}

/// The resolved signed-in route on the wire (base URL pointed at the mock by config).
#[tokio::test]
async fn a_resolved_sign_in_reaches_the_provider_as_a_bearer_token() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::sse([
        json!({"type": "message_start", "message": {"id": "m", "model": "c", "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}).to_string(),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}).to_string(),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}).to_string(),
        json!({"type": "content_block_stop", "index": 0}).to_string(),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}).to_string(),
        json!({"type": "message_stop"}).to_string(),
    ]));
    let config: Config = serde_json::from_value(
        json!({"provider": {"anthropic": {"options": {"baseURL": format!("{}/v1", mock.base_url())}}}}),
    )
    .unwrap();
    let catalog = Catalog::bundled().unwrap().with_config(&config).unwrap();
    let stored = oauth("sk-ant-oat-2", None);
    let resolved = catalog.resolve("anthropic", "claude-sonnet-4-5", None, Some(&stored), &Env::default()).unwrap();
    let request = LlmRequest::new(resolved.api_id.clone()).system("Be brief.").message(Message::user("hello"));
    let response = LlmClient::new().generate(&resolved.route, &request).await.unwrap();
    assert_eq!(response.message.text(), "Hi");
    let sent = &mock.requests()[0];
    assert_eq!(sent.path_and_query, "/v1/messages?beta=true");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-ant-oat-2"));
    assert_eq!(sent.header("x-api-key"), None);
}
