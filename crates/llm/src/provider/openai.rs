//! OpenAI: the Responses API by default, Chat Completions with `protocol = "openai-chat"`; signed
//! in with ChatGPT, the Codex backend (reference/llm-protocols.md §3 "Codex", §11.2).

use std::sync::Arc;

use serde_json::json;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::SignIn;
use super::USER_AGENT;
use super::bearer;
use crate::Auth;
use crate::DynamicHeader;
use crate::LlmError;
use crate::ProviderOptions;
use crate::RequestShape;
use crate::Route;
use crate::RouteDefaults;
use crate::Secret;
use crate::protocol::Protocol;

const ENV: &[&str] = &["OPENAI_API_KEY"];

/// The ChatGPT Codex backend (`<base>/responses`).
pub const CODEX_BASE_URL: &str = "https://chatgpt.com/backend-api/codex";
/// The `originator` of signed-in requests: the one OpenCode's sign-in names.
pub const CODEX_ORIGINATOR: &str = "opencode";

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "openai",
    name: "OpenAI",
    env: ENV,
    default_protocol: "openai-responses",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    if let Some(sign_in) = &config.sign_in {
        return signed_in(sign_in);
    }
    Ok(Route::new("openai", protocol, "https://api.openai.com/v1", bearer(config, ENV)))
}

/// The Codex backend speaks only Responses, keeps nothing (`store: false`, so reasoning replays
/// from its encrypted content), takes the system prompt as `instructions` and no output limit;
/// requests carry the account id, `originator` and the session (the prompt-cache key) as
/// `session_id`.
fn signed_in(sign_in: &SignIn) -> Result<Route, LlmError> {
    let protocol = super::protocol("openai-responses")?;
    let auth = Auth::Bearer(Secret::Value(sign_in.access_token.clone()));
    let mut forced = ProviderOptions::default();
    forced.set("openai", json!({"store": false, "system_as_instructions": true}));
    let mut defaults = RouteDefaults::default();
    defaults.options.set("openai", json!({"include": ["reasoning.encrypted_content"]}));
    let shape = RequestShape {
        forced_options: forced,
        omit_max_tokens: true,
        headers: vec![DynamicHeader::Option {
            header: "session_id".to_owned(),
            namespace: "openai".to_owned(),
            key: "prompt_cache_key".to_owned(),
        }],
        ..RequestShape::default()
    };
    let mut route = Route::new("openai", protocol, CODEX_BASE_URL, auth)
        .with_header("originator", CODEX_ORIGINATOR)
        .with_header("user-agent", USER_AGENT)
        .with_defaults(defaults)
        .with_shape(shape);
    if let Some(account) = &sign_in.account_id {
        route = route.with_header("chatgpt-account-id", account);
    }
    Ok(route)
}
