//! The effective agent of a provider turn: OpenCode's built-in agents with `agent.<name>` from
//! configuration layered over them. Only what the runner needs (prompt, step allowance, model,
//! generation controls); permissions belong to the tool host.

use std::sync::Arc;

use indexmap::IndexMap;
use opencode_config::AgentConfig;
use opencode_config::AgentMode;
use opencode_config::Config;
use serde_json::Map;
use serde_json::Value;

use crate::error::Result;
use crate::error::RuntimeError;

/// The agent a session starts with when nothing else is selected.
pub const DEFAULT_AGENT: &str = "build";

/// One resolved agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProfile {
    pub name: String,
    pub mode: AgentMode,
    pub hidden: bool,
    /// Replaces the default provider prompt as the first system part.
    pub prompt: Option<String>,
    /// Maximum provider turns per promoted batch; the last one is text-only.
    pub steps: Option<u32>,
    /// `provider/model`.
    pub model: Option<String>,
    pub variant: Option<String>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub options: Map<String, Value>,
}

impl AgentProfile {
    fn builtin(name: &str, mode: AgentMode, hidden: bool) -> Self {
        Self {
            name: name.to_owned(),
            mode,
            hidden,
            prompt: None,
            steps: None,
            model: None,
            variant: None,
            temperature: None,
            top_p: None,
            options: Map::new(),
        }
    }

    fn apply(&mut self, config: &AgentConfig) {
        let set = |slot: &mut Option<String>, value: &Option<String>| {
            if value.is_some() {
                slot.clone_from(value);
            }
        };
        set(&mut self.prompt, &config.prompt);
        set(&mut self.model, &config.model);
        set(&mut self.variant, &config.variant);
        self.steps = config.steps.or(self.steps);
        self.temperature = config.temperature.or(self.temperature);
        self.top_p = config.top_p.or(self.top_p);
        self.mode = config.mode.unwrap_or(self.mode);
        self.hidden = config.hidden.unwrap_or(self.hidden);
        self.options.extend(config.provider_options());
    }
}

/// Every agent available to sessions, by name.
#[derive(Debug, Clone)]
pub struct AgentSet {
    agents: IndexMap<String, Arc<AgentProfile>>,
    default: String,
}

impl AgentSet {
    /// The built-in agents (`build`, `plan`, `general`, `explore`, hidden `compaction` and `title`) with
    /// `agent.<name>` (and the deprecated `mode.<name>`) from `config` over them.
    pub fn from_config(config: &Config) -> Self {
        let mut agents: IndexMap<String, AgentProfile> = [
            AgentProfile::builtin("build", AgentMode::Primary, false),
            AgentProfile::builtin("plan", AgentMode::Primary, false),
            AgentProfile::builtin("general", AgentMode::Subagent, false),
            AgentProfile::builtin("explore", AgentMode::Subagent, false),
            AgentProfile::builtin("compaction", AgentMode::Primary, true),
            AgentProfile::builtin("title", AgentMode::Primary, true),
        ]
        .into_iter()
        .map(|agent| (agent.name.clone(), agent))
        .collect();
        for (name, entry) in config.mode.iter().chain(&config.agent) {
            if entry.disable == Some(true) {
                agents.shift_remove(name);
                continue;
            }
            agents
                .entry(name.clone())
                .or_insert_with(|| AgentProfile::builtin(name, AgentMode::All, false))
                .apply(entry);
        }
        let default = config
            .default_agent
            .clone()
            .filter(|name| agents.get(name).is_some_and(|a| a.mode != AgentMode::Subagent && !a.hidden))
            .unwrap_or_else(|| DEFAULT_AGENT.to_owned());
        Self { agents: agents.into_iter().map(|(name, agent)| (name, Arc::new(agent))).collect(), default }
    }

    /// The agent named `name`, or the default agent when `None`.
    pub fn get(&self, name: Option<&str>) -> Result<Arc<AgentProfile>> {
        let name = name.unwrap_or(&self.default);
        self.agents.get(name).cloned().ok_or_else(|| RuntimeError::UnknownAgent {
            name: name.to_owned(),
            known: self.agents.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// The default agent's name.
    pub fn default_name(&self) -> &str {
        &self.default
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_layers_over_builtins_and_adds_agents() {
        let config: Config = serde_json::from_value(serde_json::json!({
            "agent": {"build": {"steps": 3, "prompt": "Be terse."}, "reviewer": {"model": "openai/gpt-5"},
                      "plan": {"disable": true}}
        }))
        .unwrap();
        let agents = AgentSet::from_config(&config);
        let build = agents.get(None).unwrap();
        assert_eq!((build.name.as_str(), build.steps, build.prompt.as_deref()), ("build", Some(3), Some("Be terse.")));
        assert_eq!(agents.get(Some("reviewer")).unwrap().model.as_deref(), Some("openai/gpt-5"));
        assert!(matches!(agents.get(Some("plan")), Err(RuntimeError::UnknownAgent { .. })));
    }
}
