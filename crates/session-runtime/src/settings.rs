//! What applies in one directory: its Location's own configuration, agents and model catalog, else
//! the runtime's. The only place a turn reads configuration from.

use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_session_store::Session;
use opencode_tool_registry::Agent;
use opencode_tool_registry::Agents;

use crate::compaction::CompactionSettings;
use crate::error::Result;
use crate::error::RuntimeError;
use crate::location::Location;
use crate::runtime::Inner;
use crate::runtime::ModelChoice;

impl Inner {
    /// What applies in `directory`: its Location's own configuration, agents and catalog, else the
    /// runtime's.
    pub(crate) fn settings(&self, directory: &str) -> Result<Settings> {
        self.settings_in(&*self.location(directory)?)
    }

    /// What applies in an open Location: its own configuration, agents and catalog, else the
    /// runtime's.
    pub(crate) fn settings_in(&self, location: &Location) -> Result<Settings> {
        Ok(match &location.own {
            Some(own) => Settings {
                config: Arc::clone(&own.config),
                agents: Arc::clone(&own.agents),
                catalog: Arc::clone(&own.catalog),
            },
            None => Settings {
                config: Arc::clone(&self.config),
                agents: Arc::clone(&self.agents),
                catalog: self.catalog.get()?,
            },
        })
    }
}

/// The configuration, agents and model catalog that apply in one directory.
pub(crate) struct Settings {
    pub(crate) config: Arc<Config>,
    pub(crate) agents: Arc<Agents>,
    pub(crate) catalog: Arc<Catalog>,
}

impl Settings {
    /// The model when neither the session, its agent nor config names one: the best model of the
    /// first provider with credentials.
    pub(crate) fn default_model(&self, inner: &Inner) -> Option<ModelChoice> {
        crate::defaults::default_model(&self.catalog, &self.config, &inner.auth, &inner.env)
    }

    /// The model of a turn of `session` under `agent`: the session's, else the agent's, else config
    /// `model`, else the default (`None` when there is none).
    pub(crate) fn model_for(&self, inner: &Inner, session: &Session, agent: &Agent) -> Result<Option<ModelChoice>> {
        Ok(match (&session.model, &agent.model, &self.config.model) {
            (Some(chosen), _, _) => Some(ModelChoice {
                provider: chosen.provider_id.clone(),
                model: chosen.id.clone(),
                variant: chosen.variant.clone(),
            }),
            (None, Some(reference), _) | (None, None, Some(reference)) => {
                let choice = ModelChoice::parse(reference)?;
                let variant = if agent.model.is_some() { agent.variant.clone() } else { None };
                Some(ModelChoice { variant, ..choice })
            }
            (None, None, None) => self.default_model(inner),
        })
    }

    /// When and how much to compact (config `compaction`).
    pub(crate) fn compaction(&self) -> CompactionSettings {
        CompactionSettings::from_config(&self.config)
    }

    /// The agent named `name`, or the default one.
    pub(crate) fn agent(&self, name: Option<&str>) -> Result<Arc<Agent>> {
        resolve_agent(&self.agents, name)
    }
}

fn resolve_agent(agents: &Agents, name: Option<&str>) -> Result<Arc<Agent>> {
    agents.resolve(name).ok_or_else(|| RuntimeError::UnknownAgent {
        name: name.unwrap_or(opencode_tool_registry::DEFAULT_AGENT).to_owned(),
        known: agents.iter().map(|agent| agent.name.as_str()).collect::<Vec<_>>().join(", "),
    })
}
