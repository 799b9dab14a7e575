//! The catalog in OpenCode's wire shapes: `Provider` and `Model` of `/provider` and `/config/providers`,
//! and the agent list of `/agent`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use opencode_catalog::Catalog;
use opencode_catalog::CredentialOrigin;
use opencode_catalog::Model;
use opencode_catalog::Provider;
use opencode_catalog::models_dev::Interleaved;
use opencode_config::AgentConfig;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::Env;
use opencode_tool_registry::Agent;
use opencode_tool_registry::Agents;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

/// Provider JSON rendered once per catalog and credential source: a full catalog is megabytes of
/// JSON, and clients ask `/provider` and `/config/providers` at every start. Keyed by the catalog it
/// was rendered from (held, so the key stays unique); a rebuilt catalog starts a new cache.
#[derive(Default)]
pub(crate) struct ProviderCache {
    rendered: Mutex<Option<(Arc<Catalog>, RenderedBySource)>>,
}

/// Rendered providers by provider id and credential source.
type RenderedBySource = HashMap<(String, &'static str), Arc<RenderedProvider>>;

/// One provider's wire JSON as text, with the model `default` names for it when config names none.
pub(crate) struct RenderedProvider {
    pub id: String,
    pub json: String,
    newest_model: Option<String>,
}

impl ProviderCache {
    /// Every enabled provider with whether it is usable now (has a credential), rendered.
    pub(crate) fn providers(
        &self,
        catalog: &Arc<Catalog>,
        config: &Config,
        auth: &AuthStore,
        env: &Env,
    ) -> Vec<(bool, Arc<RenderedProvider>)> {
        let mut guard = self.rendered.lock().unwrap_or_else(PoisonError::into_inner);
        if !guard.as_ref().is_some_and(|(built, _)| Arc::ptr_eq(built, catalog)) {
            *guard = Some((Arc::clone(catalog), HashMap::new()));
        }
        let Some((_, rendered)) = guard.as_mut() else { return Vec::new() };
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
                    Some(CredentialOrigin::AuthFile) | None => "api",
                };
                let entry = rendered
                    .entry((provider.id.clone(), source))
                    .or_insert_with(|| Arc::new(RenderedProvider::new(provider, source)));
                (credential.is_some(), Arc::clone(entry))
            })
            .collect()
    }
}

impl RenderedProvider {
    fn new(provider: &Provider, source: &str) -> Self {
        let value = provider_json(provider, source);
        let newest_model = newest_model(&value);
        Self { id: provider.id.clone(), json: value.to_string(), newest_model }
    }
}

/// `{providerID: modelID}`: the configured model for its provider, else each provider's newest model.
pub(crate) fn defaults<'a>(
    catalog: &Catalog,
    config: &Config,
    providers: impl Iterator<Item = &'a RenderedProvider>,
) -> Map<String, Value> {
    let configured = config.model_ref();
    providers
        .filter_map(|provider| {
            let chosen = match configured {
                Some((p, m)) if p == provider.id && catalog.provider(p).is_some_and(|p| p.models.contains_key(m)) => {
                    m.to_owned()
                }
                _ => provider.newest_model.clone()?,
            };
            Some((provider.id.clone(), Value::String(chosen)))
        })
        .collect()
}

/// A JSON array of already-rendered values.
pub(crate) fn array<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from("[");
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
    out
}

/// The newest model that is not deprecated.
fn newest_model(provider: &Value) -> Option<String> {
    let models = provider.get("models")?.as_object()?;
    let newest = models
        .values()
        .filter(|m| m.get("status").and_then(Value::as_str) != Some("deprecated"))
        .max_by_key(|m| m.get("release_date").and_then(Value::as_str).unwrap_or(""))?;
    Some(newest.get("id")?.as_str()?.to_owned())
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
    // The pickers' variants (`{name: options}`), as the runtime resolves them for this route.
    let variants: serde_json::Map<String, Value> = opencode_catalog::route::plan(provider, model)
        .map(|plan| opencode_catalog::status::variants(model, &plan))
        .unwrap_or_default()
        .into_iter()
        .map(|variant| (variant.name, Value::Object(variant.options)))
        .collect();
    if let Value::Object(map) = &mut value {
        map.insert("variants".to_owned(), Value::Object(variants));
    }
    value
}

/// The agent list of `/agent`: the instance's [`Agents`] (the same agents the runtime runs and the
/// tool host checks permissions for), built-ins first. Hidden built-ins (`compaction`, `title`,
/// `summary`) are left out unless configuration names them; disabled agents are absent already.
pub(crate) fn agents(agents: &Agents, config: &Config) -> Vec<Value> {
    agents
        .iter()
        .filter(|agent| !(agent.native && agent.hidden) || config.agent.contains_key(&agent.name))
        .map(|agent| agent_json(agent, config.agent.get(&agent.name)))
        .collect()
}

/// Descriptions the list has always shown for these built-ins: the first sentence of what the `task`
/// tool tells the model.
const LIST_DESCRIPTIONS: [(&str, &str); 2] = [
    ("general", "General-purpose agent for researching complex questions and executing multi-step tasks."),
    ("explore", "Fast agent specialized for exploring codebases."),
];

/// One agent in OpenCode's wire shape. Keys keep their historical order (built-ins lead with their
/// description); optional keys appear only when set (`hidden` when configured); `permission` is
/// listed as `[]`.
fn agent_json(agent: &Agent, configured: Option<&AgentConfig>) -> Value {
    let configured_description = configured.and_then(|c| c.description.as_ref());
    let description = match LIST_DESCRIPTIONS.iter().find(|(name, _)| *name == agent.name) {
        Some((_, short)) if agent.native && configured_description.is_none() => Some((*short).to_owned()),
        _ => agent.description.clone(),
    };
    let mut map = Map::new();
    map.insert("name".into(), json!(agent.name));
    if agent.native
        && let Some(description) = &description
    {
        map.insert("description".into(), json!(description));
    }
    map.insert("mode".into(), json!(agent.mode));
    map.insert("native".into(), json!(agent.native));
    map.insert("permission".into(), json!([]));
    map.insert("options".into(), Value::Object(agent.options.clone()));
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            map.insert(key.to_owned(), value);
        }
    };
    set("description", description.filter(|_| !agent.native).map(|d| json!(d)));
    set("hidden", configured.and_then(|c| c.hidden).map(|_| json!(agent.hidden)));
    set("temperature", agent.temperature.map(|t| json!(t)));
    set("topP", agent.top_p.map(|t| json!(t)));
    set("color", agent.color.as_ref().map(|c| json!(c)));
    set("prompt", agent.prompt.as_ref().map(|p| json!(p)));
    set("variant", agent.variant.as_ref().map(|v| json!(v)));
    set("steps", agent.steps.map(|s| json!(s)));
    set(
        "model",
        agent
            .model
            .as_deref()
            .and_then(|m| m.split_once('/'))
            .map(|(provider, model)| json!({ "providerID": provider, "modelID": model })),
    );
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly by design")]

    use super::*;

    fn listed(config: Value) -> String {
        let config: Config = serde_json::from_value(config).unwrap();
        let agents = Agents::from_config(&opencode_tool_registry::AgentDirs::default(), &config);
        serde_json::to_string(&super::agents(&agents, &config)).unwrap()
    }

    #[test]
    fn the_agent_list_shows_the_builtins_without_the_hidden_ones() {
        assert_eq!(
            listed(json!({})),
            r#"[{"name":"build","description":"The default agent. Executes tools based on configured permissions.","mode":"primary","native":true,"permission":[],"options":{}},{"name":"plan","description":"Plan mode. Disallows all edit tools.","mode":"primary","native":true,"permission":[],"options":{}},{"name":"general","description":"General-purpose agent for researching complex questions and executing multi-step tasks.","mode":"subagent","native":true,"permission":[],"options":{}},{"name":"explore","description":"Fast agent specialized for exploring codebases.","mode":"subagent","native":true,"permission":[],"options":{}}]"#
        );
    }

    #[test]
    fn configured_agents_are_merged_over_builtins_in_the_wire_shape() {
        let config = json!({"agent": {
            "build": {"description": "Builds.", "temperature": 0.2, "hidden": false},
            "general": {"model": "openai/gpt-5", "variant": "high"},
            "explore": {"disable": true},
            "reviewer": {"description": "Reviews", "mode": "subagent", "top_p": 0.9, "color": "#ff0000",
                         "prompt": "Review.", "steps": 4, "options": {"a": 1}, "reasoningEffort": "low",
                         "permission": {"bash": "deny"}},
            "bare": {}
        }});
        assert_eq!(
            listed(config),
            r##"[{"name":"build","description":"Builds.","mode":"primary","native":true,"permission":[],"options":{},"hidden":false,"temperature":0.2},{"name":"plan","description":"Plan mode. Disallows all edit tools.","mode":"primary","native":true,"permission":[],"options":{}},{"name":"general","description":"General-purpose agent for researching complex questions and executing multi-step tasks.","mode":"subagent","native":true,"permission":[],"options":{},"variant":"high","model":{"providerID":"openai","modelID":"gpt-5"}},{"name":"reviewer","mode":"subagent","native":false,"permission":[],"options":{"reasoningEffort":"low","a":1},"description":"Reviews","topP":0.9,"color":"#ff0000","prompt":"Review.","steps":4},{"name":"bare","mode":"all","native":false,"permission":[],"options":{}}]"##
        );
    }
}
