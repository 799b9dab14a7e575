//! A session's modes and configuration options as ACP shows them: modes are the primary agents
//! (neither subagents nor hidden); the config options are `mode`, `model` (`provider/model`) and
//! `thought_level` (the current model's variants, plus `default` for none).

use std::path::Path;

use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelect,
    SessionConfigSelectOption, SessionMode, SessionModeState,
};
use opencode_config::AgentMode;
use opencode_session_runtime::{ModelChoice, SessionRuntime};
use opencode_session_store::Session;

use crate::error::AgentError;

pub(crate) const MODE: &str = "mode";
pub(crate) const MODEL: &str = "model";
pub(crate) const THOUGHT_LEVEL: &str = "thought_level";
/// The `thought_level` value that selects no variant.
pub(crate) const DEFAULT_LEVEL: &str = "default";

/// What a session offers: its modes and its config options.
pub(crate) struct SessionView {
    pub(crate) modes: SessionModeState,
    pub(crate) options: Vec<SessionConfigOption>,
}

/// The modes and options of `session` as they are now.
pub(crate) fn view(runtime: &SessionRuntime, session: &Session) -> Result<SessionView, AgentError> {
    let directory = Path::new(&session.directory);
    let agents = runtime.agents(directory)?;
    let current = agents
        .resolve(session.agent.as_deref())
        .map(|agent| agent.name.clone())
        .unwrap_or_else(|| opencode_tool_registry::DEFAULT_AGENT.to_owned());
    let modes: Vec<SessionMode> = agents
        .iter()
        .filter(|agent| agent.mode != AgentMode::Subagent && !agent.hidden)
        .map(|agent| SessionMode::new(agent.name.clone(), agent.name.clone()).description(agent.description.clone()))
        .collect();
    let mode_option = select(
        MODE,
        "Mode",
        SessionConfigOptionCategory::Mode,
        &current,
        modes.iter().map(|mode| SessionConfigSelectOption::new(mode.id.0.to_string(), mode.name.clone())).collect(),
    );
    let mut options = vec![mode_option];
    options.extend(model_options(runtime, session)?);
    Ok(SessionView { modes: SessionModeState::new(current, modes), options })
}

/// `model` and `thought_level`, when the session has a model at all.
fn model_options(runtime: &SessionRuntime, session: &Session) -> Result<Vec<SessionConfigOption>, AgentError> {
    let directory = Path::new(&session.directory);
    let Some(current) = runtime.next_model(session)? else { return Ok(Vec::new()) };
    let catalog = runtime.catalog(directory)?;
    let current_id = format!("{}/{}", current.provider, current.model);
    let mut models = runtime.models(directory)?;
    if !models.iter().any(|model| model.provider == current.provider && model.model == current.model) {
        models.insert(0, ModelChoice { variant: None, ..current.clone() });
    }
    let values = models
        .iter()
        .map(|model| {
            let id = format!("{}/{}", model.provider, model.model);
            let name = catalog
                .model(&model.provider, &model.model)
                .map(|found| found.info.name.clone())
                .ok()
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| id.clone());
            SessionConfigSelectOption::new(id, name)
        })
        .collect();
    let model = select(MODEL, "Model", SessionConfigOptionCategory::Model, &current_id, values);
    let variants = catalog.variants(&current.provider, &current.model).unwrap_or_default();
    let mut levels = vec![SessionConfigSelectOption::new(DEFAULT_LEVEL, "Default")];
    levels.extend(
        variants.iter().map(|variant| SessionConfigSelectOption::new(variant.name.clone(), variant.name.clone())),
    );
    let level = current.variant.as_deref().unwrap_or(DEFAULT_LEVEL);
    let thought = select(THOUGHT_LEVEL, "Thinking", SessionConfigOptionCategory::ThoughtLevel, level, levels);
    Ok(vec![model, thought])
}

fn select(
    id: &str,
    name: &str,
    category: SessionConfigOptionCategory,
    current: &str,
    values: Vec<SessionConfigSelectOption>,
) -> SessionConfigOption {
    SessionConfigOption::new(
        id.to_owned(),
        name.to_owned(),
        SessionConfigKind::Select(SessionConfigSelect::new(current.to_owned(), values)),
    )
    .category(category)
}

/// The model a `model` value names: `provider/model`, or `provider/model/variant` when the whole is
/// not a model itself (model ids may contain `/`).
pub(crate) fn parse_model(runtime: &SessionRuntime, directory: &Path, value: &str) -> Result<ModelChoice, AgentError> {
    let catalog = runtime.catalog(directory)?;
    let whole = ModelChoice::parse(value).map_err(|_| AgentError::invalid(bad_model(value)))?;
    if catalog.model(&whole.provider, &whole.model).is_ok() {
        return Ok(whole);
    }
    if let Some((model, variant)) = value.rsplit_once('/')
        && let Ok(choice) = ModelChoice::parse(model)
        && catalog.model(&choice.provider, &choice.model).is_ok()
    {
        let known = catalog.variants(&choice.provider, &choice.model).unwrap_or_default();
        if !known.iter().any(|known| known.name == variant) {
            return Err(AgentError::invalid(format!("model {model} has no variant `{variant}`")));
        }
        return Ok(ModelChoice { variant: Some(variant.to_owned()), ..choice });
    }
    Err(AgentError::invalid(format!("unknown model `{value}`; pick one of the `model` option's values")))
}

fn bad_model(value: &str) -> String {
    format!("model `{value}` is not of the form provider/model[/variant]")
}
