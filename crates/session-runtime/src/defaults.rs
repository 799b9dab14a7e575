//! The model a turn uses when nobody chose one, and the small model of side requests (titles).
//!
//! As OpenCode: config `model` first; otherwise the first provider that can be called (a provider
//! from config, or one with a credential in the environment or `auth.json`), and its best model by
//! OpenCode's model priority (ids containing `gpt-5`, `claude-sonnet-4`, `big-pickle`,
//! `gemini-3-pro` first, then `latest`, then the highest id). When config declares providers only
//! those are considered, in config order; otherwise providers are tried in [`PROVIDER_PRIORITY`]
//! order, then in catalog order.
//!
//! The small model: config `small_model`, else the main model's provider's first model matching
//! OpenCode's small-model priority (Haiku, Gemini Flash, `gpt-5-nano`), else the main model.

use std::cmp::Reverse;

use opencode_catalog::Catalog;
use opencode_catalog::ModelStatus;
use opencode_catalog::Provider;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::Env;

use crate::runtime::ModelChoice;

/// The order in which providers with credentials are tried for the default model.
pub const PROVIDER_PRIORITY: &[&str] =
    &["opencode", "anthropic", "openai", "google", "github-copilot", "openrouter", "amazon-bedrock", "azure", "vertex"];

/// Model-id fragments that OpenCode prefers for the main model, best first.
const MODEL_PRIORITY: &[&str] = &["gpt-5", "claude-sonnet-4", "big-pickle", "gemini-3-pro"];

/// Model-id fragments that OpenCode prefers for the small model, best first.
const SMALL_MODEL_PRIORITY: &[&str] = &[
    "claude-haiku-4-5",
    "claude-haiku-4.5",
    "3-5-haiku",
    "3.5-haiku",
    "gemini-3-flash",
    "gemini-2.5-flash",
    "gpt-5-nano",
];

/// The default model: config `model`, else the best model of the first provider that can be called.
/// `None` when no provider has credentials.
pub fn default_model(catalog: &Catalog, config: &Config, auth: &AuthStore, env: &Env) -> Option<ModelChoice> {
    if let Some(reference) = &config.model {
        return ModelChoice::parse(reference).ok();
    }
    let candidates = callable_providers(catalog, config, auth, env);
    let provider = candidates.first()?;
    let model = best(provider, MODEL_PRIORITY)?;
    Some(ModelChoice { provider: provider.id.clone(), model, variant: None })
}

/// The providers a turn can call, with models, most preferred first: custom or configured ones, or
/// those with credentials (an environment key or `auth.json`); only the configured ones when config
/// names any.
pub fn callable_providers<'c>(catalog: &'c Catalog, config: &Config, auth: &AuthStore, env: &Env) -> Vec<&'c Provider> {
    let callable = |provider: &Provider| {
        provider.custom
            || config.provider.contains_key(&provider.id)
            || opencode_catalog::credentials::resolve(provider, auth.get(&provider.id).ok().flatten().as_ref(), env)
                .is_some()
    };
    let mut candidates: Vec<&Provider> = if config.provider.is_empty() {
        let mut all: Vec<&Provider> = catalog.providers().filter(|p| !p.models.is_empty() && callable(p)).collect();
        // A stable sort keeps catalog order among providers without a priority.
        all.sort_by_key(|p| PROVIDER_PRIORITY.iter().position(|id| *id == p.id).unwrap_or(PROVIDER_PRIORITY.len()));
        all
    } else {
        config.provider.keys().filter_map(|id| catalog.provider(id)).filter(|p| callable(p)).collect()
    };
    candidates.retain(|p| !p.models.is_empty());
    candidates
}

/// The small model for side requests such as titles (see the module docs).
pub fn small_model(catalog: &Catalog, config: &Config, main: &ModelChoice) -> ModelChoice {
    if let Some(choice) = config.small_model.as_deref().and_then(|reference| ModelChoice::parse(reference).ok()) {
        return choice;
    }
    let small = catalog.provider(&main.provider).and_then(|provider| {
        SMALL_MODEL_PRIORITY.iter().find_map(|fragment| {
            provider
                .models
                .values()
                .filter(|m| m.status != ModelStatus::Deprecated && m.id.contains(fragment))
                .map(|m| m.id.clone())
                .max()
        })
    });
    match small {
        Some(model) => ModelChoice { provider: main.provider.clone(), model, variant: None },
        None => ModelChoice { variant: None, ..main.clone() },
    }
}

/// The provider's best model by `priority`, then `latest`, then the highest id.
fn best(provider: &Provider, priority: &[&str]) -> Option<String> {
    provider
        .models
        .values()
        .filter(|m| m.status != ModelStatus::Deprecated)
        .min_by_key(|m| {
            let rank = priority.iter().position(|fragment| m.id.contains(fragment)).unwrap_or(priority.len());
            (rank, !m.id.contains("latest"), Reverse(m.id.clone()))
        })
        .map(|m| m.id.clone())
}
