//! The three option domains (FR-02), and the one ingestion adapter that fills them.
//!
//! Options reach a model from legacy OpenCode config (`provider.<id>.options`,
//! `provider.<id>.models.<id>.options`, variants) and from models.dev (`provider.body`,
//! `provider.headers`), written the AI SDK way (`reasoningEffort`, `thinking.budgetTokens`,
//! `thinkingConfig`, `maxOutputTokens`...). [`partition`] sorts each key into exactly one domain:
//!
//! - **Model Request Options**: provider-semantic settings, namespaced the way `opencode-llm`'s
//!   protocol adapters read them (`openai`, `openai_compatible`, `anthropic`, `google`, `bedrock`);
//! - **Generation Controls**: provider-neutral sampling and length controls;
//! - **compatibility body fields**: anything else, sent verbatim as an HTTP body overlay (this is
//!   how OpenAI-compatible providers receive their own extensions).
//!
//! Connection settings (`apiKey`, `baseURL`, `timeout`...) belong to none of them and are dropped.

use std::collections::BTreeMap;

use opencode_llm::{GenerationControls, ProviderOptions};
use serde_json::{Map, Value};

use crate::route::RoutePlan;
use crate::status::Variant;
use crate::{Model, Provider};

/// A model's options, partitioned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelOptions {
    /// Provider-semantic Model Request Options (`LlmRequest::options`).
    pub request: ProviderOptions,
    /// Provider-neutral Generation Controls (`LlmRequest::generation`).
    pub generation: GenerationControls,
    /// Compatibility request-body fields (`LlmRequest::http.body`).
    pub body: Map<String, Value>,
    /// Extra request headers (`LlmRequest::http.headers`).
    pub headers: BTreeMap<String, String>,
}

/// The `opencode-llm` options namespace a protocol reads.
pub fn namespace(protocol: &str) -> &'static str {
    match protocol {
        "openai-compatible-chat" => "openai_compatible",
        "anthropic-messages" => "anthropic",
        "gemini" => "google",
        "bedrock-converse" => "bedrock",
        _ => "openai",
    }
}

/// Sorts legacy / AI-SDK shaped options into the three domains for `protocol`.
pub fn partition(options: &Map<String, Value>, protocol: &str) -> ModelOptions {
    let mut out = ModelOptions::default();
    let mut request = Map::new();
    for (key, value) in options {
        if CONNECTION_KEYS.contains(&key.as_str()) {
            if key == "headers" {
                out.headers.extend(string_map(value));
            }
            continue;
        }
        if generation(&mut out.generation, key, value) {
            continue;
        }
        if !request_option(&mut request, protocol, key, value) {
            out.body.insert(key.clone(), value.clone());
        }
    }
    if !request.is_empty() {
        out.request.set(namespace(protocol), Value::Object(request));
    }
    out
}

/// Every option layer of a model, merged (later wins) and partitioned; models.dev's per-model
/// `provider.body`/`headers` are compatibility fields by definition.
pub(crate) fn for_model(
    provider: &Provider,
    model: &Model,
    plan: &RoutePlan,
    variant: Option<&Variant>,
) -> ModelOptions {
    let mut merged = provider.options.extra.clone();
    merged.extend(model.info.options.clone());
    if let Some(variant) = variant {
        merged.extend(variant.options.clone());
    }
    let mut out = partition(&merged, plan.protocol);
    if let Some(over) = &model.info.provider {
        for (key, value) in &over.body {
            out.body.entry(key.clone()).or_insert_with(|| value.clone());
        }
        for (name, value) in &over.headers {
            out.headers.entry(name.clone()).or_insert_with(|| value.clone());
        }
    }
    out.headers.extend(model.info.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// Settings of the connection, not of the request.
const CONNECTION_KEYS: &[&str] = &[
    "apiKey",
    "baseURL",
    "timeout",
    "chunkTimeout",
    "headerTimeout",
    "headers",
    "setCacheKey",
    "enterpriseUrl",
    "resourceName",
    "useCompletionUrls",
    "includeUsage",
    "name",
    "project",
    "location",
    "region",
    "profile",
    "accessKeyId",
    "secretAccessKey",
    "sessionToken",
];

/// Generation controls, in either spelling. Returns whether `key` was one.
fn generation(controls: &mut GenerationControls, key: &str, value: &Value) -> bool {
    match key {
        "temperature" => controls.temperature = value.as_f64(),
        "topP" | "top_p" => controls.top_p = value.as_f64(),
        "topK" | "top_k" => controls.top_k = value.as_u64().and_then(|n| u32::try_from(n).ok()),
        "maxOutputTokens" | "maxTokens" | "max_tokens" => {
            controls.max_tokens = value.as_u64().and_then(|n| u32::try_from(n).ok());
        }
        "frequencyPenalty" | "frequency_penalty" => controls.frequency_penalty = value.as_f64(),
        "presencePenalty" | "presence_penalty" => controls.presence_penalty = value.as_f64(),
        "seed" => controls.seed = value.as_i64(),
        "stopSequences" | "stop" => {
            controls.stop =
                value.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect();
        }
        _ => return false,
    }
    true
}

/// Provider-semantic options of the protocol's family, renamed to `opencode-llm`'s fields.
/// Returns whether `key` was one.
fn request_option(request: &mut Map<String, Value>, protocol: &str, key: &str, value: &Value) -> bool {
    let mut put = |field: &str, value: Value| {
        request.insert(field.to_owned(), value);
        true
    };
    match namespace(protocol) {
        "openai" | "openai_compatible" => match key {
            "reasoningEffort" | "reasoning_effort" => put("reasoning_effort", value.clone()),
            "reasoningSummary" | "reasoning_summary" => put("reasoning_summary", value.clone()),
            "textVerbosity" | "text_verbosity" => put("text_verbosity", value.clone()),
            "promptCacheKey" | "prompt_cache_key" => put("prompt_cache_key", value.clone()),
            "serviceTier" => put("service_tier", value.clone()),
            "parallelToolCalls" | "parallel_tool_calls" => put("parallel_tool_calls", value.clone()),
            "store" | "include" => put(key, value.clone()),
            _ => false,
        },
        "anthropic" => match key {
            "thinking" | "effort" => put(key, value.clone()),
            "disableParallelToolUse" => put("disable_parallel_tool_use", value.clone()),
            "serviceTier" => put("service_tier", value.clone()),
            _ => false,
        },
        "google" => match key {
            "thinkingConfig" => {
                let config = value.as_object().cloned().unwrap_or_default();
                let renames = [
                    ("thinkingBudget", "thinking_budget"),
                    ("includeThoughts", "include_thoughts"),
                    ("thinkingLevel", "thinking_level"),
                ];
                for (from, to) in renames {
                    if let Some(value) = config.get(from) {
                        request.insert(to.to_owned(), value.clone());
                    }
                }
                true
            }
            "responseModalities" => put("response_modalities", value.clone()),
            "safetySettings" => put("safety_settings", value.clone()),
            "cachedContent" => put("cached_content", value.clone()),
            _ => false,
        },
        "bedrock" => match key {
            "reasoningConfig" => match value.get("budgetTokens").or_else(|| value.get("budget_tokens")) {
                Some(budget) => put("thinking_budget_tokens", budget.clone()),
                None => {
                    let mut fields = Map::new();
                    fields.insert("reasoningConfig".into(), value.clone());
                    put("additional_model_request_fields", Value::Object(fields))
                }
            },
            "additionalModelRequestFields" => put("additional_model_request_fields", value.clone()),
            "serviceTier" => put("service_tier", value.clone()),
            _ => false,
        },
        _ => false,
    }
}

fn string_map(value: &Value) -> impl Iterator<Item = (String, String)> + '_ {
    value
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(key, value)| value.as_str().map(|value| (key.clone(), value.to_owned())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn openai_options_split_into_three_domains() {
        let options = map(json!({
            "apiKey": "sk", "reasoningEffort": "high", "textVerbosity": "low", "temperature": 0.2,
            "maxOutputTokens": 4096, "service_tier": "priority", "headers": {"x-team": "a"}
        }));
        let out = partition(&options, "openai-responses");
        assert_eq!(out.request.0["openai"], json!({"reasoning_effort": "high", "text_verbosity": "low"}));
        assert_eq!(out.generation.temperature, Some(0.2));
        assert_eq!(out.generation.max_tokens, Some(4096));
        assert_eq!(out.body, map(json!({"service_tier": "priority"})));
        assert_eq!(out.headers["x-team"], "a");
    }

    #[test]
    fn compatible_extensions_stay_body_fields() {
        let options = map(json!({"reasoningEffort": "low", "enable_thinking": true, "reasoning": {"enabled": true}}));
        let out = partition(&options, "openai-compatible-chat");
        assert_eq!(out.request.0["openai_compatible"], json!({"reasoning_effort": "low"}));
        assert_eq!(out.body, map(json!({"enable_thinking": true, "reasoning": {"enabled": true}})));
    }

    #[test]
    fn google_and_anthropic_thinking_are_renamed_for_their_adapters() {
        let google =
            partition(&map(json!({"thinkingConfig": {"thinkingBudget": 8000, "includeThoughts": true}})), "gemini");
        assert_eq!(google.request.0["google"], json!({"thinking_budget": 8000, "include_thoughts": true}));
        let anthropic =
            partition(&map(json!({"thinking": {"type": "enabled", "budgetTokens": 16000}})), "anthropic-messages");
        let decoded: opencode_llm::protocol::anthropic_messages::AnthropicOptions =
            anthropic.request.get("anthropic").unwrap();
        assert!(decoded.thinking.is_some());
        let bedrock =
            partition(&map(json!({"reasoningConfig": {"type": "enabled", "budgetTokens": 4000}})), "bedrock-converse");
        assert_eq!(bedrock.request.0["bedrock"], json!({"thinking_budget_tokens": 4000}));
    }
}
