//! Connecting to one server: a local server is a child process in its own process group speaking
//! MCP over stdio; a remote server is reached over streamable HTTP, falling back to the legacy
//! HTTP+SSE transport when the POST is refused, with stored OAuth tokens as `Authorization: Bearer`
//! (refreshed when expired, and once more on a 401). The handshake and the first tool listing share
//! one deadline.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use indexmap::IndexMap;
use process_wrap::tokio::CommandWrap;
use process_wrap::tokio::KillOnDrop;
use process_wrap::tokio::ProcessGroup;
use rmcp::ClientHandler;
use rmcp::RoleClient;
use rmcp::ServiceExt;
use rmcp::model::ClientConfig;
use rmcp::model::Implementation;
use rmcp::service::ClientInitializeError;
use rmcp::service::NotificationContext;
use rmcp::service::Peer;
use rmcp::service::QuitReason;
use rmcp::service::RunningService;
use rmcp::service::RunningServiceCancellationToken;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::TokioChildProcess;
use rmcp::transport::streamable_http_client::AuthRequiredError;
use rmcp::transport::streamable_http_client::InsufficientScopeError;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

use crate::error::McpError;
use crate::oauth;
use crate::oauth::Challenge;
use crate::oauth::Credentials;
use crate::oauth::McpAuthStore;
use crate::oauth::OAuthSettings;
use crate::oauth::OAuthTarget;
use crate::sse::LegacySse;
use crate::sse::LegacySseError;

/// How to reach one server, resolved from its config entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Local { command: Vec<String>, environment: IndexMap<String, String>, cwd: PathBuf },
    /// Streamable HTTP (or legacy HTTP+SSE) at `url`, with extra headers on every request, and
    /// OAuth unless it is disabled (`oauth: None`).
    Remote { url: String, headers: IndexMap<String, String>, oauth: Option<OAuthSettings> },
}

/// A live connection: the peer to send requests to, and what keeps the server alive.
pub(crate) struct Connection {
    pub peer: Peer<RoleClient>,
    pub instructions: Option<String>,
    cancel: Mutex<Option<RunningServiceCancellationToken>>,
    group: Option<ProcessGroupGuard>,
    stderr: Arc<StderrTail>,
}

impl Connection {
    /// The last lines the server wrote to stderr, for failure reports.
    pub fn stderr_tail(&self) -> String {
        self.stderr.text()
    }

    /// Stops the MCP service and kills the server's process group.
    pub fn close(&self) {
        if let Some(cancel) = lock(&self.cancel).take() {
            cancel.cancel();
        }
        if let Some(group) = &self.group {
            group.kill();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// Events the client handler reports to the manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerEvent {
    ToolsChanged,
}

/// Connects and runs the handshake. Events (`tools/list_changed`) arrive on `events`; `closed`
/// receives the quit reason once the connection ends.
/// `name` and `store` locate the server's OAuth tokens (no store: none are sent).
pub(crate) async fn connect(
    name: &str,
    transport: &Transport,
    store: Option<&McpAuthStore>,
    events: mpsc::UnboundedSender<ServerEvent>,
) -> Result<(Connection, tokio::task::JoinHandle<String>), McpError> {
    let handler = Handler { events };
    match transport {
        Transport::Local { command, environment, cwd } => connect_local(handler, command, environment, cwd).await,
        Transport::Remote { url, headers, oauth } => {
            let target = oauth.as_ref().map(|settings| OAuthTarget {
                name: name.to_owned(),
                url: url.clone(),
                headers: headers.clone(),
                settings: settings.clone(),
            });
            connect_remote(handler, url, headers, target.as_ref(), store).await
        }
    }
}

async fn connect_local(
    handler: Handler,
    command: &[String],
    environment: &IndexMap<String, String>,
    cwd: &std::path::Path,
) -> Result<(Connection, tokio::task::JoinHandle<String>), McpError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| McpError::Spawn { command: String::new(), reason: "the command is empty".into() })?;
    let mut wrapped = CommandWrap::with_new(program, |cmd| {
        cmd.args(args).envs(environment).current_dir(cwd);
        // OpenCode's own binary runs as a plain runtime when it is the server.
        if program == "opencode" {
            cmd.env("BUN_BE_BUN", "1");
        }
    });
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (process, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| McpError::Spawn { command: command.join(" "), reason: err.to_string() })?;
    let group = process.id().map(ProcessGroupGuard);
    let tail = Arc::new(StderrTail::default());
    if let Some(stderr) = stderr {
        tokio::spawn(Arc::clone(&tail).drain(stderr));
    }
    let running = handler.serve(process).await.map_err(|err| {
        let stderr = tail.text();
        let detail = if stderr.is_empty() { String::new() } else { format!(" (stderr: {stderr})") };
        McpError::Protocol(format!("handshake failed: {}{detail}", root_cause(&err)))
    })?;
    Ok(finish(running, group, tail))
}

async fn connect_remote(
    handler: Handler,
    url: &str,
    headers: &IndexMap<String, String>,
    oauth: Option<&OAuthTarget>,
    store: Option<&McpAuthStore>,
) -> Result<Connected, McpError> {
    let custom = header_map(headers)?;
    let http = oauth::client()?;
    // A configured `Authorization` header wins over stored tokens.
    let explicit = custom.contains_key(&http::header::AUTHORIZATION);
    let credentials = match (oauth, store) {
        (Some(target), Some(store)) if !explicit => Some(Credentials { target, store, http: &http }),
        _ => None,
    };
    let mut tokens = match &credentials {
        Some(credentials) => credentials.current().await,
        None => None,
    };
    let mut refreshed = false;
    loop {
        let bearer = tokens.as_ref().map(|tokens| tokens.access_token.as_str());
        let challenge = match attempt_remote(handler.clone(), &http, url, &custom, bearer).await {
            Ok(connected) => return Ok(connected),
            Err(Attempt::Failed(err)) => return Err(err),
            Err(Attempt::Unauthorized(challenge)) => challenge,
        };
        if oauth.is_none() {
            return Err(McpError::Unauthorized);
        }
        let Some((credentials, current)) = credentials.as_ref().zip(tokens.as_ref()) else {
            return Err(McpError::NeedsAuth);
        };
        if refreshed {
            return Err(McpError::NeedsAuth);
        }
        refreshed = true;
        tokens = Some(credentials.refresh(current, &challenge).await.ok_or(McpError::NeedsAuth)?);
    }
}

/// Why one remote attempt did not connect.
enum Attempt {
    Unauthorized(Challenge),
    Failed(McpError),
}

/// Streamable HTTP first; when that fails for another reason than authorization, legacy HTTP+SSE.
async fn attempt_remote(
    handler: Handler,
    http: &reqwest::Client,
    url: &str,
    custom: &HashMap<http::HeaderName, http::HeaderValue>,
    bearer: Option<&str>,
) -> Result<Connected, Attempt> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom.clone());
    if let Some(bearer) = bearer {
        config = config.auth_header(bearer);
    }
    let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
    let streamable = match handler.clone().serve(transport).await {
        Ok(running) => return Ok(finish(running, None, Arc::new(StderrTail::default()))),
        Err(err) => match unauthorized(&err) {
            Some(challenge) => return Err(Attempt::Unauthorized(challenge)),
            None => format!("handshake failed: {}", init_cause(&err)),
        },
    };
    tracing::debug!(url, "streamable HTTP refused ({streamable}); trying the legacy HTTP+SSE transport");
    let mut sse_headers = custom.clone();
    if let Some(bearer) = bearer
        && let Ok(value) = http::HeaderValue::try_from(format!("Bearer {bearer}"))
    {
        sse_headers.insert(http::header::AUTHORIZATION, value);
    }
    let legacy = match LegacySse::open(http.clone(), url, sse_headers).await {
        Ok(legacy) => legacy,
        Err(LegacySseError::Unauthorized(header)) => return Err(Attempt::Unauthorized(Challenge::parse(&header))),
        Err(LegacySseError::Http(reason)) => {
            return Err(Attempt::Failed(McpError::Protocol(format!("{streamable} (legacy SSE: {reason})"))));
        }
    };
    match handler.serve(legacy).await {
        Ok(running) => Ok(finish(running, None, Arc::new(StderrTail::default()))),
        Err(err) => match unauthorized(&err) {
            Some(challenge) => Err(Attempt::Unauthorized(challenge)),
            None => Err(Attempt::Failed(McpError::Protocol(format!(
                "{streamable} (legacy SSE handshake: {})",
                init_cause(&err)
            )))),
        },
    }
}

fn header_map(headers: &IndexMap<String, String>) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpError> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = http::HeaderName::try_from(name.as_str())
            .map_err(|err| McpError::Protocol(format!("invalid header name {name}: {err}")))?;
        let value = http::HeaderValue::try_from(value.as_str())
            .map_err(|err| McpError::Protocol(format!("invalid value for header {name}: {err}")))?;
        custom.insert(header, value);
    }
    Ok(custom)
}

/// The challenge of a handshake refused with 401 (or 403 with a challenge), wherever rmcp put it.
fn unauthorized(err: &ClientInitializeError) -> Option<Challenge> {
    let ClientInitializeError::TransportError { error, .. } = err else { return None };
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(layer) = current {
        if let Some(required) = layer.downcast_ref::<AuthRequiredError>() {
            return Some(Challenge::parse(&required.www_authenticate_header));
        }
        if let Some(insufficient) = layer.downcast_ref::<InsufficientScopeError>() {
            return Some(Challenge::parse(&insufficient.www_authenticate_header));
        }
        if let Some(LegacySseError::Unauthorized(header)) = layer.downcast_ref::<LegacySseError>() {
            return Some(Challenge::parse(header));
        }
        if layer.downcast_ref::<reqwest::Error>().and_then(reqwest::Error::status)
            == Some(reqwest::StatusCode::UNAUTHORIZED)
        {
            return Some(Challenge::default());
        }
        current = layer.source();
    }
    err.is_authorization_required().then(Challenge::default)
}

/// The cause of a failed handshake (rmcp's transport errors keep theirs in a field).
fn init_cause(err: &ClientInitializeError) -> String {
    match err {
        ClientInitializeError::TransportError { error, .. } => root_cause(error),
        other => root_cause(other),
    }
}

type Connected = (Connection, tokio::task::JoinHandle<String>);

/// Splits a running service into the connection and a task that resolves with why it ended.
fn finish(
    running: RunningService<RoleClient, Handler>,
    group: Option<ProcessGroupGuard>,
    stderr: Arc<StderrTail>,
) -> (Connection, tokio::task::JoinHandle<String>) {
    let peer = running.peer().clone();
    let instructions =
        peer.peer_info().and_then(|info| info.instructions.clone()).filter(|text| !text.trim().is_empty());
    let cancel = running.cancellation_token();
    let waiter = tokio::spawn(async move {
        match running.waiting().await {
            Ok(QuitReason::Cancelled) => "cancelled".to_owned(),
            Ok(QuitReason::Closed) => "the server closed the connection".to_owned(),
            Ok(other) => format!("{other:?}"),
            Err(err) => format!("the service task failed: {err}"),
        }
    });
    let connection = Connection { peer, instructions, cancel: Mutex::new(Some(cancel)), group, stderr };
    (connection, waiter)
}

/// Forwards server notifications the manager cares about.
#[derive(Clone)]
struct Handler {
    events: mpsc::UnboundedSender<ServerEvent>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _closed = self.events.send(ServerEvent::ToolsChanged);
    }

    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.client_info = Implementation::new("opencode", env!("CARGO_PKG_VERSION"));
        config
    }
}

/// Kills a local server's whole process group (the server and anything it started, e.g. `npx`'s
/// node) when the connection goes away, whether or not a runtime is still there to do it.
struct ProcessGroupGuard(u32);

impl ProcessGroupGuard {
    fn kill(&self) {
        let Ok(pid) = i32::try_from(self.0) else { return };
        // ESRCH (already gone) is the expected outcome after a clean exit.
        let _gone = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

impl Drop for ProcessGroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last lines of a local server's stderr (also logged at debug level).
#[derive(Default)]
struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

const STDERR_LINES: usize = 5;

impl StderrTail {
    async fn drain(self: Arc<Self>, stderr: tokio::process::ChildStderr) {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(target: "opencode_mcp::stderr", "{line}");
            let mut tail = lock(&self.lines);
            if tail.len() == STDERR_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }

    fn text(&self) -> String {
        lock(&self.lines).iter().map(String::as_str).collect::<Vec<_>>().join(" | ")
    }
}

/// The innermost cause of an error, without the Rust type paths rmcp puts in its messages.
fn root_cause(err: &(dyn std::error::Error + 'static)) -> String {
    let mut current = err;
    while let Some(source) = current.source() {
        current = source;
    }
    let mut text = current.to_string();
    while let Some(start) = text.find(" [") {
        let Some(length) = text[start..].find(']') else { break };
        if !text[start..start + length].contains("::") {
            break;
        }
        text.replace_range(start..=start + length, "");
    }
    text
}

/// The connect deadline as a user-facing error.
pub(crate) fn timeout_error(timeout: Duration) -> McpError {
    McpError::Timeout { millis: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX) }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("Send message error Transport [rmcp::transport::worker::WorkerTransport<X>] error: refused")]
    struct Noisy;

    #[test]
    fn type_paths_are_removed_from_causes() {
        assert_eq!(root_cause(&Noisy), "Send message error Transport error: refused");
    }
}
