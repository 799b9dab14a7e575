//! Commands: `GET /command` lists the instance's commands and `POST /session/{id}/command` expands
//! one and sends it as a prompt; `POST /session/{id}/init` runs `init` with the given model. The
//! definitions and the expansion are `opencode_config::commands` (shared with `opencode run
//! --command`): `$ARGUMENTS`, `$1`..`$n`, ``!`shell` `` substitutions run in the session's directory,
//! and `@path` references whose content is shown to the model after the prompt.
//!
//! A command with `subtask: true`, or whose agent is a subagent (unless `subtask: false`), is sent as
//! OpenCode does: one `subtask` part (the expanded text as its prompt, the command's agent and model)
//! in a user message of the caller's agent and model; the runtime runs it as a `task` call in a
//! child session before the model answers. Plugins' commands are listed and run too (a configured
//! command of the same name wins): their answer is recorded in the session without a model call, or
//! their prompt sent. Not supported (yet): MCP prompts and skills as commands.

use std::path::Path;

use axum::Json;
use axum::extract::State;
use indexmap::IndexMap;
use opencode_config::commands::Expander;
use opencode_config::commands::MAX_FILE_BYTES;
use opencode_config::commands::SystemShell;
use opencode_session_store::MessageWithParts;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use super::Op;
use super::session::check_id;
use super::session::prompt;
use super::session::session;
use crate::driver::FilePartInput;
use crate::driver::PartInput;
use crate::driver::PromptBody;
use crate::driver::PromptModel;
use crate::driver::SubtaskPartInput;
use crate::driver::TextPartInput;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;
use opencode_session_runtime::CommandRun;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/command", "command.list", "Commands of the instance", list_route).returns::<Vec<Command>>(),
        Op::post(
            "/session/{sessionID}/command",
            "session.command",
            "Expand a command template and prompt with it; waits for the reply",
            command_route,
        )
        .body::<CommandBody>()
        .returns_named("MessageWithParts"),
        Op::post(
            "/session/{sessionID}/init",
            "session.init",
            "Analyse the project and write AGENTS.md (the init command); waits for the reply",
            init_route,
        )
        .body::<InitBody>()
        .returns_bool(),
    ]
}

/// `Command`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct Command {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// Always `command` here (configured and plugin commands; no MCP prompts or skills).
    source: &'static str,
    template: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    subtask: Option<bool>,
    /// The placeholders the template uses (`$1`, `$2`, ..., `$ARGUMENTS`).
    hints: Vec<String>,
}

/// `POST /session/{id}/command` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandBody {
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    /// `provider/model`.
    #[serde(default)]
    model: Option<String>,
    arguments: String,
    command: String,
    #[serde(default)]
    variant: Option<String>,
    /// Files attached to the prompt.
    #[serde(default)]
    parts: Vec<CommandFilePart>,
}

/// A file part of a command (`type` must be `file`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandFilePart {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "type")]
    kind: FileKind,
    mime: String,
    #[serde(default)]
    filename: Option<String>,
    url: String,
    #[serde(default)]
    source: Option<Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum FileKind {
    File,
}

/// `POST /session/{id}/init` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InitBody {
    #[serde(rename = "modelID")]
    model_id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(rename = "messageID")]
    message_id: String,
}

async fn list_route(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<Vec<Command>>, ApiError> {
    let mut listed = blocking(move || Ok(commands(&i))).await?;
    // The plugins' commands, unless the configuration defines one by the same name (which wins).
    for command in s.inner.driver.plugin_commands() {
        if !listed.contains_key(&command.name) {
            listed.insert(command.name.clone(), Command::from(command));
        }
    }
    Ok(Json(listed.into_values().collect()))
}

async fn command_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(id): P<String>,
    JsonBody(body): JsonBody<CommandBody>,
) -> Result<Json<MessageWithParts>, ApiError> {
    if let Some(message) = &body.message_id {
        check_id(message, "msg", "message")?;
    }
    let name = body.command.trim_start_matches('/').to_owned();
    let lookup = std::sync::Arc::clone(&i);
    let found = blocking(move || Ok(definitions(&lookup).shift_remove(&name))).await?;
    let Some(command) = found else { return plugin_command(&s, &id, body).await.map(Json) };
    // As OpenCode: the command's own model and agent win over the caller's.
    let model = match command.model.as_deref().or(body.model.as_deref()) {
        Some(model) => Some(parse_model(model)?),
        None => None,
    };
    let directory = session(&s, &id).await?.directory;
    let agents = std::sync::Arc::clone(&i);
    let agent_name = command.agent.clone().or_else(|| body.agent.clone());
    let agent = blocking(move || Ok(agents.agents().resolve(agent_name.as_deref()))).await?;
    let agent = agent.ok_or_else(|| {
        ApiError::bad(format!(
            "agent {:?} not found (GET /agent lists them)",
            command.agent.as_ref().or(body.agent.as_ref())
        ))
    })?;
    let subtask = command.runs_as_subtask(agent.mode).then(|| (agent.name.clone(), command.description.clone()));
    let (expander_instance, arguments, template) = (std::sync::Arc::clone(&i), body.arguments, command.template);
    let text = blocking(move || {
        let shell = SystemShell::new(expander_instance.config().config.shell.as_deref());
        let home = home(&expander_instance);
        let expander = Expander { directory: Path::new(&directory), home: home.as_deref(), shell: &shell };
        Ok(expander.expand_template(&template, &arguments).prompt_text(MAX_FILE_BYTES))
    })
    .await?;
    if let Some((agent, description)) = subtask {
        // The caller's agent and model keep the session; the command's run the child.
        let request = PromptBody {
            message_id: body.message_id,
            model: body.model.as_deref().map(parse_model).transpose()?,
            agent: body.agent,
            variant: body.variant,
            parts: vec![PartInput::Subtask(SubtaskPartInput {
                id: None,
                prompt: text,
                description: description.unwrap_or_default(),
                agent,
                model,
                command: Some(command.name),
            })],
            ..PromptBody::default()
        };
        return prompt(&s, &id, request).await.map(Json);
    }
    let mut parts = vec![PartInput::Text(TextPartInput { text, ..TextPartInput::default() })];
    parts.extend(body.parts.into_iter().map(|part| {
        let FileKind::File = part.kind;
        PartInput::File(FilePartInput {
            id: part.id,
            mime: part.mime,
            filename: part.filename,
            url: part.url,
            source: part.source,
        })
    }));
    let request = PromptBody {
        message_id: body.message_id,
        model,
        agent: command.agent.or(body.agent),
        variant: body.variant.or(command.variant),
        parts,
        ..PromptBody::default()
    };
    prompt(&s, &id, request).await.map(Json)
}

/// A command no configuration defines: a plugin's, if one offers it. Its answer is returned as it
/// was recorded, or its prompt sent to the model.
async fn plugin_command(s: &AppState, id: &str, body: CommandBody) -> Result<MessageWithParts, ApiError> {
    session(s, id).await?;
    let name = body.command.trim_start_matches('/').to_owned();
    let Some(run) = s.inner.driver.run_plugin_command(id.to_owned(), name, body.arguments) else {
        return Err(ApiError::not_found(format!("command {:?} not found (GET /command lists them)", body.command)));
    };
    match run.await? {
        CommandRun::Answered(message) => Ok(*message),
        CommandRun::Prompt(text) => {
            let request = PromptBody {
                message_id: body.message_id,
                model: body.model.as_deref().map(parse_model).transpose()?,
                agent: body.agent,
                variant: body.variant,
                parts: vec![PartInput::Text(TextPartInput { text, ..TextPartInput::default() })],
                ..PromptBody::default()
            };
            prompt(s, id, request).await
        }
    }
}

async fn init_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<InitBody>,
) -> Result<Json<bool>, ApiError> {
    check_id(&body.message_id, "msg", "message")?;
    let request = PromptBody {
        message_id: Some(body.message_id),
        model: Some(PromptModel { provider_id: body.provider_id, model_id: body.model_id }),
        parts: vec![PartInput::Text(TextPartInput {
            text: opencode_config::commands::substitute_arguments(opencode_config::commands::INIT_TEMPLATE, "")
                .trim()
                .to_owned(),
            ..TextPartInput::default()
        })],
        ..PromptBody::default()
    };
    prompt(&s, &id, request).await?;
    Ok(Json(true))
}

/// `provider/model` as a prompt model.
fn parse_model(model: &str) -> Result<PromptModel, ApiError> {
    match model.split_once('/') {
        Some((provider, id)) if !provider.is_empty() && !id.is_empty() => {
            Ok(PromptModel { provider_id: provider.to_owned(), model_id: id.to_owned() })
        }
        _ => Err(ApiError::bad(format!("model {model:?} must be written provider/model"))),
    }
}

/// The instance's commands by name (the shared definitions, as this route lists them).
pub(crate) fn commands(instance: &Instance) -> IndexMap<String, Command> {
    definitions(instance).into_iter().map(|(name, command)| (name, Command::from(command))).collect()
}

fn definitions(instance: &Instance) -> IndexMap<String, opencode_config::commands::Command> {
    opencode_config::commands::commands(&instance.config().config)
}

/// The home directory `@~/...` references resolve against.
fn home(instance: &Instance) -> Option<std::path::PathBuf> {
    let env = instance.env();
    env.get("OPENCODE_TEST_HOME").or_else(|| env.get("HOME")).map(std::path::PathBuf::from)
}

impl From<opencode_session_runtime::PluginCommand> for Command {
    fn from(command: opencode_session_runtime::PluginCommand) -> Self {
        Self {
            name: command.name,
            description: Some(command.description),
            agent: None,
            model: None,
            source: "command",
            template: String::new(),
            subtask: None,
            hints: command.hint.into_iter().collect(),
        }
    }
}

impl From<opencode_config::commands::Command> for Command {
    fn from(command: opencode_config::commands::Command) -> Self {
        Self {
            hints: command.hints(),
            name: command.name,
            description: command.description,
            agent: command.agent,
            model: command.model,
            source: "command",
            template: command.template,
            subtask: command.subtask,
        }
    }
}
