//! Resolution: credentials order, auth schemes, variants, status, and a resolved route used end to end.

use opencode_catalog::{Catalog, CredentialOrigin, ModelStatus, Visibility};
use opencode_config::{AuthInfo, Config, Env};
use opencode_llm::{Auth, LlmClient, LlmRequest, Message, Secret};
use opencode_mock_provider::{MockProvider, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

fn api_key(key: &str) -> AuthInfo {
    AuthInfo::Api { key: key.into(), metadata: None }
}

#[test]
fn credentials_come_from_config_then_auth_file_then_env() {
    let env = Env::from_pairs([("GROQ_API_KEY", "from-env")]);
    let catalog = Catalog::bundled().unwrap();
    let from_env = catalog.resolve("groq", "llama-3.3-70b-versatile", None, None, &env).unwrap();
    assert_eq!(from_env.credential.unwrap().origin, CredentialOrigin::Env("GROQ_API_KEY".into()));
    assert_eq!(from_env.route.auth, Auth::Bearer(Secret::Env(vec!["GROQ_API_KEY".into()])));
    let stored = api_key("from-auth");
    let from_auth = catalog.resolve("groq", "llama-3.3-70b-versatile", None, Some(&stored), &env).unwrap();
    assert_eq!(from_auth.credential.unwrap().origin, CredentialOrigin::AuthFile);
    assert_eq!(from_auth.route.auth, Auth::Bearer(Secret::Value("from-auth".into())));
    let configured: Config =
        serde_json::from_value(json!({"provider": {"groq": {"options": {"apiKey": "from-config"}}}})).unwrap();
    let catalog = catalog.with_config(&configured).unwrap();
    let from_config = catalog.resolve("groq", "llama-3.3-70b-versatile", None, Some(&stored), &env).unwrap();
    assert_eq!(from_config.credential.unwrap().origin, CredentialOrigin::Config);
    assert_eq!(from_config.route.auth, Auth::Bearer(Secret::Value("from-config".into())));
}

#[test]
fn anthropic_compatible_providers_keep_the_header_scheme_with_their_own_key() {
    let catalog = Catalog::bundled().unwrap();
    let model = catalog.provider("minimax").unwrap().models.keys().next().unwrap().clone();
    let resolved = catalog.resolve("minimax", &model, None, None, &Env::default()).unwrap();
    assert_eq!(resolved.route.protocol.id(), "anthropic-messages");
    assert_eq!(resolved.route.endpoint.base_url, "https://api.minimax.io/anthropic/v1");
    assert_eq!(
        resolved.route.auth,
        Auth::Header { name: "x-api-key".into(), secret: Secret::Env(vec!["MINIMAX_API_KEY".into()]) }
    );
}

#[test]
fn variants_follow_the_protocol_and_feed_request_options() {
    let catalog = Catalog::bundled().unwrap();
    let names = |provider: &str, model: &str| -> Vec<String> {
        catalog.variants(provider, model).unwrap().into_iter().map(|v| v.name).collect()
    };
    assert_eq!(names("anthropic", "claude-sonnet-4-5"), vec!["high", "max"]);
    assert_eq!(names("openai", "gpt-5"), vec!["low", "medium", "high"]);
    assert!(names("openai", "gpt-4o").is_empty(), "no variants without reasoning");
    let high = catalog.resolve("anthropic", "claude-sonnet-4-5", Some("high"), None, &Env::default()).unwrap();
    assert_eq!(high.options.request.0["anthropic"], json!({"thinking": {"type": "enabled", "budgetTokens": 16000}}));
    let err = catalog.resolve("openai", "gpt-5", Some("turbo"), None, &Env::default()).unwrap_err();
    assert_eq!(err.to_string(), "model `openai/gpt-5` has no variant `turbo` (known: low, medium, high)");
}

#[test]
fn deprecated_and_alpha_models_are_marked_for_pickers() {
    let catalog = Catalog::bundled().unwrap();
    let all: Vec<_> = catalog.providers().flat_map(|p| p.models.values()).collect();
    let deprecated = all.iter().filter(|m| m.status == ModelStatus::Deprecated).count();
    assert!(deprecated > 0);
    assert!(
        all.iter()
            .filter(|m| m.status == ModelStatus::Deprecated)
            .all(|m| m.status.visibility(false) == Visibility::Deprecated)
    );
    assert_eq!(ModelStatus::Alpha.visibility(false), Visibility::Hidden);
    assert_eq!(ModelStatus::Alpha.visibility(true), Visibility::Available);
}

/// NFR-01: a provider that exists only as data (config here, models.dev alike) streams end to end.
#[tokio::test]
async fn a_data_only_provider_streams_through_the_resolved_route() {
    let mock = MockProvider::start().await.unwrap();
    mock.push(MockResponse::sse([
        r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        r#"{"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]));
    let config: Config = serde_json::from_value(json!({"provider": {"acme": {
        "npm": "@ai-sdk/openai-compatible",
        "options": {"baseURL": mock.base_url(), "apiKey": "acme-key"},
        "models": {"acme-1": {"options": {"reasoningEffort": "low", "enable_thinking": true, "temperature": 0.5}}}
    }}}))
    .unwrap();
    let catalog = Catalog::bundled().unwrap().with_config(&config).unwrap();
    let resolved = catalog.resolve("acme", "acme-1", None, None, &Env::default()).unwrap();
    let mut request = LlmRequest::new(resolved.api_id.clone()).message(Message::user("hello"));
    request.options = resolved.options.request.clone();
    request.generation = resolved.options.generation.clone();
    request.http.body = resolved.options.body.clone();
    let response = LlmClient::new().generate(&resolved.route, &request).await.unwrap();
    assert_eq!(response.message.text(), "Hi");
    let sent = &mock.requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer acme-key"));
    let body = sent.body_json().unwrap();
    assert_eq!(
        (&body["model"], &body["reasoning_effort"], &body["enable_thinking"], &body["temperature"]),
        (&json!("acme-1"), &json!("low"), &json!(true), &json!(0.5))
    );
}
