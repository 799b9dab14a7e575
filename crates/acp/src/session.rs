//! Sessions: `session/new`, `session/load` (the history replayed), `session/list`, modes and config
//! options, and the commands a session offers. An ACP session id is the session's own id, so the
//! sessions of an editor are those of `opencode session list`, the server and the TUI.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ConfigOptionUpdate, CurrentModeUpdate,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest,
    NewSessionResponse, ResumeSessionRequest, ResumeSessionResponse, SessionConfigOptionValue, SessionInfo,
    SessionNotification, SessionUpdate, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse, UnstructuredCommandInput,
};
use opencode_config::McpConfig;
use opencode_session_runtime::{ModelChoice, Plugins, SessionRuntime};
use opencode_session_store::{NewSession, Session, SessionQuery};
use serde_json::json;

use crate::error::AgentError;
use crate::options::{self, DEFAULT_LEVEL, MODE, MODEL, THOUGHT_LEVEL};
use crate::server::Shared;

/// The built-in command that compacts the session now.
pub(crate) const COMPACT: &str = "compact";
/// Sessions per `session/list` page.
const PAGE: usize = 50;

/// The `available_commands_update` a session gets once it is ready.
#[derive(Clone)]
pub(crate) struct Commands {
    session: String,
    commands: Vec<AvailableCommand>,
}

impl Commands {
    pub(crate) fn send(&self, cx: &ConnectionTo<Client>) {
        let update = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(self.commands.clone()));
        notify(cx, &self.session, update);
    }
}

/// Sends one `session/update`; a client gone is not an error here (the connection's end is noticed
/// where it matters).
pub(crate) fn notify(cx: &ConnectionTo<Client>, session: &str, update: SessionUpdate) {
    if let Err(err) = cx.send_notification(SessionNotification::new(session.to_owned(), update)) {
        tracing::debug!(%err, session.id = %session, "cannot send a session update");
    }
}

/// Runs blocking runtime work (configuration, Locations, the database) off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, AgentError> + Send + 'static,
) -> Result<T, AgentError> {
    tokio::task::spawn_blocking(work).await.map_err(|err| AgentError::Internal(format!("a task stopped: {err}")))?
}

/// The directory a client names: absolute and existing.
fn directory(cwd: &Path) -> Result<PathBuf, AgentError> {
    if !cwd.is_absolute() {
        return Err(AgentError::invalid(format!("cwd `{}` is not an absolute path", cwd.display())));
    }
    if !cwd.is_dir() {
        return Err(AgentError::invalid(format!("cwd `{}` is not a directory", cwd.display())));
    }
    Ok(cwd.to_path_buf())
}

impl Shared {
    pub(crate) async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<(NewSessionResponse, Commands), AgentError> {
        self.ready()?;
        let directory = directory(&request.cwd)?;
        // Checked before anything is created: a refused request leaves no session behind.
        let servers = request.mcp_servers.iter().map(mcp_entry).collect::<Result<Vec<_>, _>>()?;
        // The plugins' commands are listed once they have started (built-in ones start at once; a
        // failed one is left out).
        let _started = self.engine.plugins.ready().await;
        let (runtime, plugins) = (self.engine.runtime.clone(), self.engine.plugins.clone());
        let session = runtime.create_session(&directory, NewSession::default()).await?;
        tracing::info!(session.id = %session.id, directory = %directory.display(), "session created");
        let (view, commands) = blocking(move || {
            connect_servers(&runtime, &directory, servers)?;
            Ok((options::view(&runtime, &session)?, commands(&runtime, &plugins, &session)?))
        })
        .await?;
        let response = NewSessionResponse::new(commands.session.clone()).modes(view.modes).config_options(view.options);
        Ok((response, commands))
    }

    /// Replays the session's whole history as `session/update` notifications, then answers.
    pub(crate) async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<(LoadSessionResponse, Commands), AgentError> {
        let (attached, commands) = self.attach(&request.session_id.0, &request.mcp_servers, true).await?;
        for update in attached.updates {
            notify(cx, &commands.session, update);
        }
        let view = attached.view;
        Ok((LoadSessionResponse::new().modes(view.modes).config_options(view.options), commands))
    }

    /// `session/resume`: the session continues on this connection without its history being
    /// replayed (the client shows what it kept).
    pub(crate) async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<(ResumeSessionResponse, Commands), AgentError> {
        let (attached, commands) = self.attach(&request.session_id.0, &request.mcp_servers, false).await?;
        let view = attached.view;
        Ok((ResumeSessionResponse::new().modes(view.modes).config_options(view.options), commands))
    }

    /// A stored session taken up on this connection: the client's MCP servers connected for its
    /// directory, its modes and options, and (`replay`) its history as updates.
    async fn attach(
        &self,
        session_id: &str,
        mcp_servers: &[McpServer],
        replay: bool,
    ) -> Result<(Attached, Commands), AgentError> {
        self.ready()?;
        // The plugins' commands are listed once they have started (built-in ones start at once; a
        // failed one is left out).
        let _started = self.engine.plugins.ready().await;
        let (runtime, plugins) = (self.engine.runtime.clone(), self.engine.plugins.clone());
        let session = runtime.session(session_id).await?;
        let servers = mcp_servers.iter().map(mcp_entry).collect::<Result<Vec<_>, _>>()?;
        blocking(move || {
            // The session's own directory is where it runs, whatever the client's cwd.
            let directory = PathBuf::from(&session.directory);
            connect_servers(&runtime, &directory, servers)?;
            let updates = if replay {
                let history = runtime.store().read(|r| r.full_history(&session.id))?;
                let todos = runtime.store().read(|r| r.todos(&session.id))?;
                crate::replay::updates(&history, &todos, &directory)
            } else {
                Vec::new()
            };
            let attached = Attached { updates, view: options::view(&runtime, &session)? };
            Ok((attached, commands(&runtime, &plugins, &session)?))
        })
        .await
    }

    pub(crate) async fn list_sessions(&self, request: ListSessionsRequest) -> Result<ListSessionsResponse, AgentError> {
        self.ready()?;
        let query = SessionQuery {
            directory: request.cwd.as_ref().map(|cwd| cwd.display().to_string()),
            roots_only: true,
            limit: PAGE,
            cursor: request.cursor.clone(),
            ..SessionQuery::default()
        };
        let store = Arc::clone(self.engine.runtime.store());
        let page = blocking(move || Ok(store.read(|r| r.list_sessions(&query))?)).await?;
        let sessions = page.sessions.iter().map(session_info).collect();
        Ok(ListSessionsResponse::new(sessions).next_cursor(page.next))
    }

    pub(crate) async fn set_mode(
        &self,
        request: SetSessionModeRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<SetSessionModeResponse, AgentError> {
        self.ready()?;
        let session = self.switch_agent(&request.session_id.0, &request.mode_id.0).await?;
        let view = self.view(session).await?;
        let update = SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(view.options));
        notify(cx, &request.session_id.0, update);
        Ok(SetSessionModeResponse::new())
    }

    pub(crate) async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<SetSessionConfigOptionResponse, AgentError> {
        self.ready()?;
        let id = request.session_id.0.as_ref();
        let SessionConfigOptionValue::ValueId { value } = &request.value else {
            return Err(AgentError::invalid(format!(
                "option `{}` takes one of its values, not a boolean",
                request.config_id.0
            )));
        };
        let value = value.0.as_ref();
        let session = match request.config_id.0.as_ref() {
            MODE => {
                let session = self.switch_agent(id, value).await?;
                notify(cx, id, SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(value.to_owned())));
                session
            }
            MODEL => self.switch_model(id, value).await?,
            THOUGHT_LEVEL => self.switch_level(id, value).await?,
            other => {
                return Err(AgentError::invalid(format!(
                    "unknown config option `{other}` (known: {MODE}, {MODEL}, {THOUGHT_LEVEL})"
                )));
            }
        };
        Ok(SetSessionConfigOptionResponse::new(self.view(session).await?.options))
    }

    async fn view(&self, session: Session) -> Result<options::SessionView, AgentError> {
        let runtime = self.engine.runtime.clone();
        blocking(move || options::view(&runtime, &session)).await
    }

    /// Switches the session's agent to a primary one.
    async fn switch_agent(&self, session: &str, agent: &str) -> Result<Session, AgentError> {
        let runtime = self.engine.runtime.clone();
        let current = runtime.session(session).await?;
        let directory = PathBuf::from(&current.directory);
        let agents = blocking(move || Ok(runtime.agents(&directory)?)).await?;
        let offered: Vec<String> = agents
            .iter()
            .filter(|known| known.mode != opencode_config::AgentMode::Subagent && !known.hidden)
            .map(|known| known.name.clone())
            .collect();
        if !offered.iter().any(|name| name == agent) {
            return Err(AgentError::invalid(format!("unknown mode `{agent}` (known: {})", offered.join(", "))));
        }
        Ok(self.engine.runtime.configure(session, Some(agent.to_owned()), None).await?)
    }

    async fn switch_model(&self, session: &str, value: &str) -> Result<Session, AgentError> {
        let runtime = self.engine.runtime.clone();
        let current = runtime.session(session).await?;
        let (value, directory) = (value.to_owned(), PathBuf::from(&current.directory));
        let model = blocking(move || options::parse_model(&runtime, &directory, &value)).await?;
        Ok(self.engine.runtime.configure(session, None, Some(model)).await?)
    }

    /// Pins the current model with the variant `level` (`default`: none).
    async fn switch_level(&self, session: &str, level: &str) -> Result<Session, AgentError> {
        let runtime = self.engine.runtime.clone();
        let current = runtime.session(session).await?;
        let level = level.to_owned();
        let model = blocking(move || {
            let Some(model) = runtime.next_model(&current)? else {
                return Err(AgentError::State(
                    "the session has no model yet; pick one with the `model` option".to_owned(),
                ));
            };
            let variants = runtime.catalog(Path::new(&current.directory))?.variants(&model.provider, &model.model);
            let names: Vec<String> = variants.unwrap_or_default().into_iter().map(|variant| variant.name).collect();
            let variant = (level != DEFAULT_LEVEL).then_some(level);
            if let Some(variant) = &variant
                && !names.contains(variant)
            {
                return Err(AgentError::invalid(format!(
                    "model {}/{} has no thought level `{variant}` (known: {DEFAULT_LEVEL}{})",
                    model.provider,
                    model.model,
                    names.iter().map(|name| format!(", {name}")).collect::<String>()
                )));
            }
            Ok(ModelChoice { variant, ..model })
        })
        .await?;
        Ok(self.engine.runtime.configure(session, None, Some(model)).await?)
    }
}

/// `session/list`'s view of a session.
fn session_info(session: &Session) -> SessionInfo {
    let updated = jiff::Timestamp::from_millisecond(session.time.updated).ok().map(|time| time.to_string());
    SessionInfo::new(session.id.clone(), session.directory.clone()).title(session.title.clone()).updated_at(updated)
}

/// Connects the MCP servers the client sent for the session's directory (its Location's next turns
/// get their tools; the first turn waits until they have connected or failed).
fn connect_servers(
    runtime: &SessionRuntime,
    directory: &Path,
    servers: Vec<(String, McpConfig)>,
) -> Result<(), AgentError> {
    if servers.is_empty() {
        return Ok(());
    }
    let Some(mcp) = runtime.mcp(directory)? else {
        return Err(AgentError::Internal("MCP is not available in this directory".to_owned()));
    };
    for (name, entry) in servers {
        tracing::info!(server = %name, "connecting a client's MCP server");
        mcp.add(&name, entry);
    }
    Ok(())
}

/// The configuration entry of a client's MCP server.
fn mcp_entry(server: &McpServer) -> Result<(String, McpConfig), AgentError> {
    let (name, value) = match server {
        McpServer::Stdio(stdio) => {
            let mut command = vec![stdio.command.display().to_string()];
            command.extend(stdio.args.iter().cloned());
            let environment: serde_json::Map<String, serde_json::Value> =
                stdio.env.iter().map(|var| (var.name.clone(), var.value.clone().into())).collect();
            (stdio.name.clone(), json!({ "type": "local", "command": command, "environment": environment }))
        }
        McpServer::Http(http) => {
            let headers: serde_json::Map<String, serde_json::Value> =
                http.headers.iter().map(|header| (header.name.clone(), header.value.clone().into())).collect();
            (http.name.clone(), json!({ "type": "remote", "url": http.url, "headers": headers }))
        }
        McpServer::Sse(sse) => {
            return Err(AgentError::invalid(format!(
                "MCP server `{}` uses SSE, which is not supported; use its streamable HTTP endpoint",
                sse.name
            )));
        }
        _ => return Err(AgentError::invalid("an MCP server of an unsupported transport was sent")),
    };
    let entry = serde_json::from_value(value)
        .map_err(|err| AgentError::invalid(format!("MCP server `{name}` does not fit: {err}")))?;
    Ok((name, entry))
}

/// The commands the session offers: `/compact` and the configured commands (with `/init`).
fn commands(runtime: &SessionRuntime, plugins: &Plugins, session: &Session) -> Result<Commands, AgentError> {
    let config = runtime.config(Path::new(&session.directory))?;
    let mut commands =
        vec![AvailableCommand::new(COMPACT, "Summarise the conversation so far to free up the context window")];
    for command in opencode_config::commands::commands(&config).into_values() {
        let description = command.description.clone().unwrap_or_else(|| format!("Run the `{}` command", command.name));
        let hints = command.hints();
        let input = (!hints.is_empty())
            .then(|| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hints.join(" "))));
        commands.push(AvailableCommand::new(command.name.as_str(), description).input(input));
    }
    for command in plugins.commands() {
        if commands.iter().any(|listed| listed.name == command.name) {
            continue;
        }
        let input = command.hint.map(|hint| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint)));
        commands.push(AvailableCommand::new(command.name, command.description).input(input));
    }
    Ok(Commands { session: session.id.clone(), commands })
}

/// What taking up a stored session produces.
struct Attached {
    updates: Vec<SessionUpdate>,
    view: options::SessionView,
}
