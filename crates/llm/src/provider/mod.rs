//! Provider adapters: ready-made [`Route`]s for each provider.
//!
//! An adapter knows a provider's base URL, credentials and default protocol, nothing of its wire
//! format. Adding a provider is adding one module here (or, for an OpenAI-compatible provider, one
//! row in [`compatible::PROFILES`]); any other OpenAI-compatible endpoint works with
//! `openai-compatible` and a base URL.
//!
//! A [`SignIn`] (a subscription's OAuth access token) selects a provider's signed-in route instead
//! of its API-key route: Claude Pro/Max for `anthropic`, the ChatGPT Codex backend for `openai`
//! (reference/llm-protocols.md §11). `github-copilot` is always signed in (its key is a GitHub token).

mod anthropic;
mod azure;
mod bedrock;
pub mod compatible;
mod copilot;
mod google;
mod openai;

use std::sync::Arc;

use crate::Auth;
use crate::LlmError;
use crate::Route;
use crate::Secret;
use crate::protocol::Protocol;

/// What a caller may override when building a provider's route.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderConfig {
    /// Replaces the provider's base URL (a proxy, a gateway, a local mock).
    pub base_url: Option<String>,
    /// The API key; otherwise it is read from the provider's environment variables when sending.
    pub api_key: Option<String>,
    /// Replaces the provider's default protocol (see [`crate::protocol::PROTOCOL_IDS`]).
    pub protocol: Option<String>,
    /// Cloud region (Bedrock); defaults to `AWS_REGION`, then `us-east-1`.
    pub region: Option<String>,
    /// Azure resource name; defaults to `AZURE_RESOURCE_NAME`.
    pub resource: Option<String>,
    /// A subscription sign-in: its access token replaces the API key, and providers that have one
    /// use their signed-in route.
    pub sign_in: Option<SignIn>,
}

/// A subscription sign-in (OAuth), as stored by `opencode auth login`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SignIn {
    /// The current OAuth access token (refreshed by the caller before it expires).
    pub access_token: String,
    /// The ChatGPT account id (OpenAI), sent as `ChatGPT-Account-Id`.
    pub account_id: Option<String>,
    /// The GitHub Enterprise domain (Copilot), for example `github.acme.com`.
    pub enterprise_url: Option<String>,
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignIn")
            .field("access_token", &"<redacted>")
            .field("account_id", &self.account_id)
            .field("enterprise_url", &self.enterprise_url)
            .finish()
    }
}

/// A provider this crate can route to.
#[derive(Debug, Clone, Copy)]
pub struct ProviderAdapter {
    pub id: &'static str,
    pub name: &'static str,
    /// Environment variables holding its credentials, in lookup order.
    pub env: &'static [&'static str],
    /// The protocol used unless the caller picks another.
    pub default_protocol: &'static str,
    build: Build,
}

/// How an adapter builds its route.
#[derive(Debug, Clone, Copy)]
enum Build {
    Custom(fn(&ProviderConfig, Arc<dyn Protocol>) -> Result<Route, LlmError>),
    Compatible(&'static compatible::Profile),
}

/// Every built-in provider.
pub fn adapters() -> Vec<ProviderAdapter> {
    let mut all =
        vec![openai::ADAPTER, anthropic::ADAPTER, google::ADAPTER, bedrock::ADAPTER, azure::ADAPTER, copilot::ADAPTER];
    all.extend(compatible::adapters());
    all
}

/// Builds the route of provider `id`.
pub fn route(id: &str, config: &ProviderConfig) -> Result<Route, LlmError> {
    let adapters = adapters();
    let Some(adapter) = adapters.iter().find(|adapter| adapter.id == id) else {
        let known: Vec<&str> = adapters.iter().map(|adapter| adapter.id).collect();
        return Err(LlmError::configuration(format!("unknown provider `{id}`; known providers: {}", known.join(", "))));
    };
    let protocol = protocol(config.protocol.as_deref().unwrap_or(adapter.default_protocol))?;
    let mut route = match adapter.build {
        Build::Custom(build) => build(config, protocol)?,
        Build::Compatible(profile) => compatible::profile_route(profile, config, protocol),
    };
    if let Some(base_url) = &config.base_url {
        route = route.with_base_url(base_url.clone());
    }
    Ok(route)
}

/// The protocol with this id, or a configuration error listing the known ones.
pub fn protocol(id: &str) -> Result<Arc<dyn Protocol>, LlmError> {
    crate::protocol::by_id(id).ok_or_else(|| {
        LlmError::configuration(format!(
            "unknown protocol `{id}`; known protocols: {}",
            crate::protocol::PROTOCOL_IDS.join(", ")
        ))
    })
}

/// The sign-in's access token, else the configured key, else the first of the environment
/// variables when sending.
fn secret(config: &ProviderConfig, env: &[&str]) -> Secret {
    match (&config.sign_in, &config.api_key) {
        (Some(sign_in), _) => Secret::Value(sign_in.access_token.clone()),
        (None, Some(key)) => Secret::Value(key.clone()),
        (None, None) => Secret::Env(env.iter().map(|var| (*var).to_owned()).collect()),
    }
}

/// `opencode/<version>`, the user agent of requests that identify the client.
const USER_AGENT: &str = concat!("opencode/", env!("CARGO_PKG_VERSION"));

fn bearer(config: &ProviderConfig, env: &[&str]) -> Auth {
    Auth::Bearer(secret(config, env))
}
