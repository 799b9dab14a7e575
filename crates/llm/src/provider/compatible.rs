//! OpenAI-compatible providers: data only. Each profile is a base URL and the environment
//! variables holding its key; they all speak the `openai-compatible-chat` protocol.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::bearer;
use crate::Auth;
use crate::LlmError;
use crate::Route;
use crate::protocol::Protocol;

/// A compatible provider's profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    pub id: &'static str,
    pub name: &'static str,
    pub base_url: &'static str,
    /// Empty for local servers that take no key.
    pub env: &'static [&'static str],
}

pub const PROFILES: &[Profile] = &[
    Profile {
        id: "openrouter",
        name: "OpenRouter",
        base_url: "https://openrouter.ai/api/v1",
        env: &["OPENROUTER_API_KEY"],
    },
    Profile { id: "groq", name: "Groq", base_url: "https://api.groq.com/openai/v1", env: &["GROQ_API_KEY"] },
    Profile { id: "deepseek", name: "DeepSeek", base_url: "https://api.deepseek.com/v1", env: &["DEEPSEEK_API_KEY"] },
    Profile { id: "xai", name: "xAI", base_url: "https://api.x.ai/v1", env: &["XAI_API_KEY"] },
    Profile {
        id: "togetherai",
        name: "Together AI",
        base_url: "https://api.together.xyz/v1",
        env: &["TOGETHER_API_KEY", "TOGETHER_AI_API_KEY"],
    },
    Profile {
        id: "fireworks",
        name: "Fireworks",
        base_url: "https://api.fireworks.ai/inference/v1",
        env: &["FIREWORKS_API_KEY"],
    },
    Profile { id: "cerebras", name: "Cerebras", base_url: "https://api.cerebras.ai/v1", env: &["CEREBRAS_API_KEY"] },
    Profile {
        id: "deepinfra",
        name: "DeepInfra",
        base_url: "https://api.deepinfra.com/v1/openai",
        env: &["DEEPINFRA_API_KEY"],
    },
    Profile { id: "ollama", name: "Ollama", base_url: "http://localhost:11434/v1", env: &[] },
    Profile { id: "lmstudio", name: "LM Studio", base_url: "http://127.0.0.1:1234/v1", env: &[] },
];

/// One adapter per profile, plus `openai-compatible` for any other endpoint (base URL required,
/// key from `OPENAI_COMPATIBLE_API_KEY` if set).
pub(super) fn adapters() -> Vec<ProviderAdapter> {
    let mut all: Vec<ProviderAdapter> = PROFILES
        .iter()
        .map(|profile| ProviderAdapter {
            id: profile.id,
            name: profile.name,
            env: profile.env,
            default_protocol: "openai-compatible-chat",
            build: Build::Compatible(profile),
        })
        .collect();
    all.push(ProviderAdapter {
        id: "openai-compatible",
        name: "OpenAI-compatible endpoint",
        env: &["OPENAI_COMPATIBLE_API_KEY"],
        default_protocol: "openai-compatible-chat",
        build: Build::Custom(build_generic),
    });
    all
}

/// The route of a profile.
pub(super) fn profile_route(profile: &Profile, config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Route {
    let auth =
        if profile.env.is_empty() && config.api_key.is_none() { Auth::None } else { bearer(config, profile.env) };
    Route::new(profile.id, protocol, profile.base_url, auth)
}

fn build_generic(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    let Some(base_url) = &config.base_url else {
        return Err(LlmError::configuration("the `openai-compatible` provider needs a base URL"));
    };
    let key = crate::Secret::env("OPENAI_COMPATIBLE_API_KEY");
    let auth = match (&config.api_key, key.lookup()) {
        (Some(value), _) => Auth::Bearer(crate::Secret::Value(value.clone())),
        (None, Some(_)) => Auth::Bearer(key),
        (None, None) => Auth::None,
    };
    Ok(Route::new("openai-compatible", protocol, base_url.clone(), auth))
}
