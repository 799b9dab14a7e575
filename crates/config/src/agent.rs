//! `agent.<name>` entries (and `.opencode/agent/*.md` front matter) as OpenCode accepts them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::PermissionConfig;

/// Where an agent may be selected: as the session's primary agent, as a subagent, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    Primary,
    Subagent,
    All,
}

/// One agent's configuration. Every field is optional so that layers can merge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AgentMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// Maximum agentic steps per promoted input (`maxSteps` is the deprecated spelling).
    #[serde(default, alias = "maxSteps", skip_serializing_if = "Option::is_none")]
    pub steps: Option<u32>,
    /// Deprecated `{ tool: bool }` switches; converted to permission rules by the tool registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<indexmap::IndexMap<String, bool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionConfig>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
    /// Keys this version does not know; OpenCode treats them as provider options.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentConfig {
    /// `options` plus the unknown keys, the way OpenCode folds them together.
    pub fn provider_options(&self) -> Map<String, Value> {
        let mut options = self.extra.clone();
        options.extend(self.options.clone());
        options
    }
}
