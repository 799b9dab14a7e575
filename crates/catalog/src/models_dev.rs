//! The models.dev `api.json` shape: `{providerID: {id, env, npm, api?, name, doc, models: {modelID: {...}}}}`.
//!
//! Deserialization is tolerant: unknown fields are ignored and most fields default, so a newer
//! models.dev (or a partial custom model from config) still loads.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The whole catalog document, providers in file order.
pub type ApiJson = IndexMap<String, ProviderInfo>;

/// The catalog document with each provider's `models` left as raw JSON, to be parsed on first use.
pub(crate) type RawApiJson = IndexMap<String, ProviderInfo<Option<Box<RawValue>>>>;

/// Parses an `api.json` document.
pub fn parse(bytes: &[u8]) -> Result<ApiJson, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// Parses an `api.json` document's provider layer only (checking that it is well-formed JSON).
pub(crate) fn parse_raw(bytes: &[u8]) -> Result<RawApiJson, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// One provider; `M` is how its models are held (parsed, or raw JSON in [`RawApiJson`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderInfo<M = IndexMap<String, ModelInfo>> {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Environment variables the provider reads (keys, and for some, resource names or regions).
    #[serde(default)]
    pub env: Vec<String>,
    /// The AI SDK package: which wire protocol the provider speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    /// Base URL; may contain `${ENV_VAR}` placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    #[serde(default)]
    pub models: M,
}

/// One model of a provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Accepts file attachments.
    #[serde(default)]
    pub attachment: bool,
    #[serde(default)]
    pub reasoning: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning_options: Vec<ReasoningOption>,
    #[serde(default)]
    pub tool_call: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<Interleaved>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<bool>,
    /// Whether the model accepts a temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_date: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<String>,
    #[serde(default)]
    pub modalities: Modalities,
    #[serde(default)]
    pub open_weights: bool,
    #[serde(default)]
    pub limit: Limit,
    /// `alpha`, `beta` or `deprecated` (absent: generally available).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Experimental>,
    /// Per-model override of the provider's package, URL and request shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ModelProvider>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    /// Options from config (`provider.<id>.models.<id>.options`): legacy / AI-SDK shaped.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
    /// Extra request headers from config.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// Variants from config: `{<name>: {disabled?, ...options}}`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub variants: IndexMap<String, Map<String, Value>>,
}

/// One way a reasoning model can be steered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningOption {
    /// Reasoning on or off.
    Toggle,
    /// Named effort levels (`low`, `medium`, `high`, ...).
    Effort {
        #[serde(default)]
        values: Vec<Option<String>>,
    },
    /// A token budget.
    BudgetTokens {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<i64>,
    },
    /// A kind this version does not know.
    #[serde(other)]
    Other,
}

/// Interleaved reasoning: `true`, or the OpenAI-compatible delta field that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Interleaved {
    Enabled(bool),
    Field { field: String },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Modalities {
    #[serde(default)]
    pub input: Vec<String>,
    #[serde(default)]
    pub output: Vec<String>,
}

/// Token limits (0 when unknown).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limit {
    #[serde(default)]
    pub context: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    #[serde(default)]
    pub output: u64,
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    #[serde(default)]
    pub input: f64,
    #[serde(default)]
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_audio: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_audio: Option<f64>,
    /// Prices above a context size (the newer form of `context_over_200k`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<CostTier>,
    /// Prices when the prompt exceeds 200k tokens (legacy form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_over_200k: Option<Box<Cost>>,
}

/// Prices that apply from a context size on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostTier {
    #[serde(flatten)]
    pub prices: Cost,
    #[serde(default)]
    pub tier: TierBound,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierBound {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub size: u64,
}

/// Per-model provider override.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelProvider {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// `responses` or `completions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// Extra JSON merged into the request body.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub body: Map<String, Value>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
}

/// Experimental settings, notably alternative modes (`fast`) with their own prices and request fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Experimental {
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub modes: IndexMap<String, ExperimentalMode>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExperimentalMode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<ModelProvider>,
}
