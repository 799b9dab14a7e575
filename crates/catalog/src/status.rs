//! Model status and variants, for pickers and UIs (FR-06).
//!
//! Variants are named option sets, mostly reasoning levels: generated from the model's
//! `reasoning_options` (effort levels, or `high`/`max` token budgets), with protocol-appropriate
//! defaults for reasoning models that list none, then config's `variants` merged over them
//! (`disabled: true` removes one). Options are AI-SDK shaped and go through the same partition as
//! every other option.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::Model;
use crate::models_dev::ReasoningOption;
use crate::route::RoutePlan;

/// models.dev's release status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelStatus {
    #[default]
    Available,
    Beta,
    Alpha,
    Deprecated,
}

/// What a picker should do with a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    Available,
    /// Listed but marked; still usable by users who pinned it.
    Deprecated,
    /// Not listed (alpha models unless experimental models are enabled).
    Hidden,
}

impl ModelStatus {
    pub fn from_models_dev(status: Option<&str>) -> Self {
        match status {
            Some("beta") => Self::Beta,
            Some("alpha") => Self::Alpha,
            Some("deprecated") => Self::Deprecated,
            _ => Self::Available,
        }
    }

    /// `experimental`: `OPENCODE_ENABLE_EXPERIMENTAL_MODELS` is on.
    pub fn visibility(self, experimental: bool) -> Visibility {
        match self {
            Self::Available | Self::Beta => Visibility::Available,
            Self::Alpha if experimental => Visibility::Available,
            Self::Alpha => Visibility::Hidden,
            Self::Deprecated => Visibility::Deprecated,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Available => "available",
            Self::Beta => "beta",
            Self::Alpha => "alpha",
            Self::Deprecated => "deprecated",
        }
    }
}

/// A named option set for a model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    pub name: String,
    /// AI-SDK shaped options (partitioned like any model option).
    pub options: Map<String, Value>,
}

/// The model's variants, in a stable order.
pub fn variants(model: &Model, plan: &RoutePlan) -> Vec<Variant> {
    let mut out = if model.info.reasoning { generated(model, plan) } else { Vec::new() };
    for (name, over) in &model.info.variants {
        let disabled = over.get("disabled").and_then(Value::as_bool).unwrap_or(false);
        let position = out.iter().position(|variant| variant.name == *name);
        match (disabled, position) {
            (true, Some(index)) => {
                out.remove(index);
            }
            (true, None) => {}
            (false, Some(index)) => out[index].options.extend(without_disabled(over)),
            (false, None) => out.push(Variant { name: name.clone(), options: without_disabled(over) }),
        }
    }
    out
}

fn without_disabled(options: &Map<String, Value>) -> Map<String, Value> {
    options.iter().filter(|(key, _)| *key != "disabled").map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn generated(model: &Model, plan: &RoutePlan) -> Vec<Variant> {
    let efforts: Vec<String> = model
        .info
        .reasoning_options
        .iter()
        .filter_map(|option| match option {
            ReasoningOption::Effort { values } => Some(values),
            _ => None,
        })
        .flatten()
        .flatten()
        .filter(|value| *value != "default")
        .cloned()
        .collect();
    if !efforts.is_empty() {
        return efforts.iter().map(|effort| effort_variant(effort, plan.protocol)).collect();
    }
    let budget = model.info.reasoning_options.iter().find_map(|option| match option {
        ReasoningOption::BudgetTokens { max, .. } => Some(*max),
        _ => None,
    });
    let budgets = |max: Option<i64>| {
        let cap = |n: u64| max.and_then(|max| u64::try_from(max).ok()).map_or(n, |max| n.min(max));
        vec![budget_variant("high", cap(16_000), plan.protocol), budget_variant("max", cap(31_999), plan.protocol)]
    };
    match (budget, plan.protocol) {
        (Some(max), _) => budgets(max),
        (None, "anthropic-messages" | "bedrock-converse" | "gemini") if model.info.reasoning_options.is_empty() => {
            budgets(None)
        }
        (None, _) if model.info.reasoning_options.is_empty() => {
            ["low", "medium", "high"].iter().map(|effort| effort_variant(effort, plan.protocol)).collect()
        }
        _ => Vec::new(),
    }
}

fn effort_variant(effort: &str, protocol: &str) -> Variant {
    let options = match protocol {
        "anthropic-messages" => json!({"effort": effort}),
        "gemini" => json!({"thinkingConfig": {"thinkingLevel": effort, "includeThoughts": true}}),
        "bedrock-converse" => json!({"reasoningConfig": {"type": "enabled", "maxReasoningEffort": effort}}),
        _ => json!({"reasoningEffort": effort}),
    };
    Variant { name: effort.to_owned(), options: into_map(options) }
}

fn budget_variant(name: &str, budget: u64, protocol: &str) -> Variant {
    let options = match protocol {
        "gemini" => json!({"thinkingConfig": {"thinkingBudget": budget, "includeThoughts": true}}),
        "bedrock-converse" => json!({"reasoningConfig": {"type": "enabled", "budgetTokens": budget}}),
        _ => json!({"thinking": {"type": "enabled", "budgetTokens": budget}}),
    };
    Variant { name: name.to_owned(), options: into_map(options) }
}

fn into_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
