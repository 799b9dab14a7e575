//! The catalog in OpenCode's wire shapes: `Provider` and `Model` of `/provider` and `/config/providers`,
//! and the agent list of `/agent`.

use opencode_catalog::Catalog;
use opencode_catalog::CredentialOrigin;
use opencode_catalog::Model;
use opencode_catalog::Provider;
use opencode_catalog::models_dev::Interleaved;
use opencode_config::AgentMode;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::Env;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

/// Every provider with whether it is usable now (has a credential) and its wire JSON.
pub(crate) fn providers(catalog: &Catalog, config: &Config, auth: &AuthStore, env: &Env) -> Vec<(bool, Value)> {
    catalog
        .providers()
        .filter(|provider| config.provider_enabled(&provider.id))
        .map(|provider| {
            let info = auth.get(&provider.id).ok().flatten();
            let credential = opencode_catalog::credentials::resolve(provider, info.as_ref(), env);
            let source = match credential.as_ref().map(|c| &c.origin) {
                _ if provider.custom => "custom",
                Some(CredentialOrigin::Env(_)) => "env",
                Some(CredentialOrigin::Config) => "config",
                Some(CredentialOrigin::AuthFile) => "api",
                None => "api",
            };
            (credential.is_some(), provider_json(provider, source))
        })
        .collect()
}

/// `{providerID: modelID}`: the configured model for its provider, else each provider's newest model.
pub(crate) fn defaults<'a>(config: &Config, providers: impl Iterator<Item = &'a Value>) -> Map<String, Value> {
    let configured = config.model_ref();
    providers
        .filter_map(|provider| {
            let id = provider.get("id")?.as_str()?;
            let models = provider.get("models")?.as_object()?;
            let chosen = match configured {
                Some((p, m)) if p == id && models.contains_key(m) => m.to_owned(),
                _ => models
                    .values()
                    .filter(|m| m.get("status").and_then(Value::as_str) != Some("deprecated"))
                    .max_by_key(|m| m.get("release_date").and_then(Value::as_str).unwrap_or("").to_owned())?
                    .get("id")?
                    .as_str()?
                    .to_owned(),
            };
            Some((id.to_owned(), Value::String(chosen)))
        })
        .collect()
}

fn provider_json(provider: &Provider, source: &str) -> Value {
    let models: Map<String, Value> =
        provider.models.iter().map(|(id, model)| (id.clone(), model_json(provider, model))).collect();
    json!({
        "id": provider.id,
        "name": provider.name,
        "source": source,
        "env": provider.env,
        "options": serde_json::to_value(&provider.options).unwrap_or_else(|_| json!({})),
        "models": models,
    })
}

fn model_json(provider: &Provider, model: &Model) -> Value {
    let info = &model.info;
    let has = |list: &[String], kind: &str| list.iter().any(|m| m == kind);
    let modalities = |list: &[String]| {
        json!({ "text": has(list, "text") || list.is_empty(), "audio": has(list, "audio"), "image": has(list, "image"),
                "video": has(list, "video"), "pdf": has(list, "pdf") })
    };
    let interleaved = match &info.interleaved {
        Some(Interleaved::Enabled(enabled)) => json!(enabled),
        Some(Interleaved::Field { field }) => json!({ "field": field }),
        None => json!(false),
    };
    let cost = info.cost.as_ref();
    let status = match model.status.as_str() {
        "available" => "active",
        other => other,
    };
    let mut value = json!({
        "id": model.id,
        "providerID": provider.id,
        "api": {
            "id": model.api_id,
            "url": info.provider.as_ref().and_then(|p| p.api.clone()).or_else(|| provider.api.clone()).unwrap_or_default(),
            "npm": info.provider.as_ref().and_then(|p| p.npm.clone()).or_else(|| provider.npm.clone()).unwrap_or_default(),
        },
        "name": info.name,
        "capabilities": {
            "temperature": info.temperature.unwrap_or(true),
            "reasoning": info.reasoning,
            "attachment": info.attachment,
            "toolcall": info.tool_call,
            "input": modalities(&info.modalities.input),
            "output": modalities(&info.modalities.output),
            "interleaved": interleaved,
        },
        "cost": {
            "input": cost.map_or(0.0, |c| c.input),
            "output": cost.map_or(0.0, |c| c.output),
            "cache": {
                "read": cost.and_then(|c| c.cache_read).unwrap_or(0.0),
                "write": cost.and_then(|c| c.cache_write).unwrap_or(0.0),
            },
        },
        "limit": { "context": info.limit.context, "output": info.limit.output },
        "status": status,
        "options": info.options,
        "headers": info.headers,
        "release_date": info.release_date.clone().unwrap_or_default(),
    });
    if let (Some(family), Value::Object(map)) = (&info.family, &mut value) {
        map.insert("family".to_owned(), json!(family));
    }
    value
}

/// The built-in agents (OpenCode's names and modes) with config agents merged over them; disabled ones
/// are left out.
pub(crate) fn agents(config: &Config) -> Vec<Value> {
    let builtins = [
        ("build", "The default agent. Executes tools based on configured permissions.", AgentMode::Primary),
        ("plan", "Plan mode. Disallows all edit tools.", AgentMode::Primary),
        (
            "general",
            "General-purpose agent for researching complex questions and executing multi-step tasks.",
            AgentMode::Subagent,
        ),
        ("explore", "Fast agent specialized for exploring codebases.", AgentMode::Subagent),
    ];
    let mut list: Vec<(String, Map<String, Value>)> = builtins
        .iter()
        .map(|(name, description, mode)| {
            let mut agent = Map::new();
            agent.insert("name".into(), json!(name));
            agent.insert("description".into(), json!(description));
            agent.insert("mode".into(), json!(mode));
            agent.insert("native".into(), json!(true));
            agent.insert("permission".into(), json!([]));
            agent.insert("options".into(), json!({}));
            ((*name).to_owned(), agent)
        })
        .collect();
    for (name, configured) in &config.agent {
        let position = list.iter().position(|(n, _)| n == name);
        if configured.disable == Some(true) {
            if let Some(position) = position {
                list.remove(position);
            }
            continue;
        }
        let agent = match position {
            Some(position) => &mut list[position].1,
            None => {
                let mut fresh = Map::new();
                fresh.insert("name".into(), json!(name));
                fresh.insert("mode".into(), json!(AgentMode::All));
                fresh.insert("native".into(), json!(false));
                fresh.insert("permission".into(), json!([]));
                fresh.insert("options".into(), json!({}));
                list.push((name.clone(), fresh));
                let last = list.len() - 1;
                &mut list[last].1
            }
        };
        apply_agent_config(agent, configured);
    }
    list.into_iter().map(|(_, agent)| Value::Object(agent)).collect()
}

fn apply_agent_config(agent: &mut Map<String, Value>, configured: &opencode_config::AgentConfig) {
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            agent.insert(key.to_owned(), value);
        }
    };
    set("description", configured.description.as_ref().map(|d| json!(d)));
    set("mode", configured.mode.map(|m| json!(m)));
    set("hidden", configured.hidden.map(|h| json!(h)));
    set("temperature", configured.temperature.map(|t| json!(t)));
    set("topP", configured.top_p.map(|t| json!(t)));
    set("color", configured.color.as_ref().map(|c| json!(c)));
    set("prompt", configured.prompt.as_ref().map(|p| json!(p)));
    set("variant", configured.variant.as_ref().map(|v| json!(v)));
    set("steps", configured.steps.map(|s| json!(s)));
    set(
        "model",
        configured
            .model
            .as_deref()
            .and_then(|m| m.split_once('/'))
            .map(|(provider, model)| json!({ "providerID": provider, "modelID": model })),
    );
    let options = configured.provider_options();
    if !options.is_empty() {
        set("options", Some(Value::Object(options)));
    }
}
