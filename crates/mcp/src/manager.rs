//! [`McpManager`]: every configured server, connected in the background, its status, its tools
//! kept in step with the attached tool registries, and its instructions.
//!
//! Nothing here blocks start-up: [`McpManager::start`] only spawns one connect task per enabled
//! server. A server's tools join every attached registry when its handshake and first listing
//! succeed (within its timeout), are replaced when it sends `notifications/tools/list_changed`, and
//! leave when its connection ends. Dropping the last handle (or [`McpManager::shutdown`]) stops every
//! connection and kills every local server's process group.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::Weak;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;

use indexmap::IndexMap;
use opencode_config::McpConfig;
use opencode_config::McpServerConfig;
use opencode_tool_registry::RegistrationId;
use opencode_tool_registry::Tool;
use opencode_tool_registry::ToolRegistry;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::sync::watch;

use crate::connect::Connection;
use crate::connect::Transport;
use crate::connect::connect;
use crate::connect::timeout_error;
use crate::error::McpError;
use crate::oauth::McpAuthStore;
use crate::oauth::OAuthSettings;
use crate::tool::McpTool;
use crate::tool::SharedTool;

/// Connect (handshake + first tool listing) deadline when the entry sets no `timeout`. OpenCode's
/// code uses 30 s (its config description says 5 s; the code wins).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Deadline of one tool call or tool listing (OpenCode: the MCP SDK's 60 s request default).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where and how servers run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpOptions {
    /// Working directory of local servers (the Location / project directory).
    pub directory: PathBuf,
    /// Deadline of each tool call (`experimental.mcp_timeout` in OpenCode).
    pub call_timeout: Duration,
    /// Connect deadline for entries without `timeout`.
    pub connect_timeout: Duration,
    /// Where remote servers' OAuth tokens are kept (`mcp-auth.json`); `None` sends none.
    pub auth_store: Option<McpAuthStore>,
}

impl McpOptions {
    pub fn new(directory: impl Into<PathBuf>) -> Self {
        Self {
            directory: directory.into(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            auth_store: Some(McpAuthStore::from_env()),
        }
    }

    /// Reads OAuth tokens from `store` instead of the environment's data directory (`None`: none).
    pub fn with_auth_store(mut self, store: Option<McpAuthStore>) -> Self {
        self.auth_store = store;
        self
    }

    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
}

/// A server's state, as OpenCode reports it (`{"status": "connected"}`, `{"status": "failed",
/// "error": …}`), plus `connecting` while the background connect runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ServerStatus {
    Connecting,
    Connected,
    Disabled,
    Failed { error: String },
    NeedsAuth,
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connecting => f.write_str("connecting"),
            Self::Connected => f.write_str("connected"),
            Self::Disabled => f.write_str("disabled"),
            Self::Failed { error } => write!(f, "failed: {error}"),
            Self::NeedsAuth => f.write_str("needs auth"),
        }
    }
}

/// One server as reported to users: its status and the registry names of its tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerReport {
    pub name: String,
    #[serde(flatten)]
    pub status: ServerStatus,
    pub tools: Vec<String>,
    /// `local` or `remote` (absent for a bare `{"enabled": …}` entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
}

/// The MCP servers of one configuration. Cheap to clone; clones share the servers.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpManager").field("servers", &self.statuses()).finish()
    }
}

impl McpManager {
    /// Starts connecting every enabled server of the config's `mcp` map in the background and
    /// returns at once. Must be called within a tokio runtime; without one every server is reported
    /// failed.
    pub fn start(servers: &IndexMap<String, McpConfig>, options: McpOptions) -> Self {
        let (changes, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            options,
            servers: Mutex::new(IndexMap::new()),
            attached: Mutex::new(Vec::new()),
            changes,
            closed: AtomicBool::new(false),
        });
        let runtime = tokio::runtime::Handle::try_current().ok();
        for (name, entry) in servers {
            let plan = plan(name, entry, &inner.options);
            let kind = plan.kind();
            let status = match (&plan, &runtime) {
                (Plan::Disabled, _) => ServerStatus::Disabled,
                (Plan::Invalid(err), _) => ServerStatus::Failed { error: err.to_string() },
                (Plan::Connect(..), None) => ServerStatus::Failed { error: "no async runtime to connect in".into() },
                (Plan::Connect(..), Some(_)) => ServerStatus::Connecting,
            };
            lock(&inner.servers).insert(name.clone(), Server::new(status, kind));
            if let (Plan::Connect(transport, timeout), Some(runtime)) = (plan, &runtime) {
                let store = inner.options.auth_store.clone();
                runtime.spawn(run_server(Arc::downgrade(&inner), name.clone(), transport, store, timeout));
            }
        }
        Self { inner }
    }

    /// Every configured server's status, in config order.
    pub fn statuses(&self) -> IndexMap<String, ServerStatus> {
        lock(&self.inner.servers).iter().map(|(name, server)| (name.clone(), server.status.clone())).collect()
    }

    /// One server's status.
    pub fn status(&self, name: &str) -> Option<ServerStatus> {
        lock(&self.inner.servers).get(name).map(|server| server.status.clone())
    }

    /// Every server with its status and tool names, in config order.
    pub fn reports(&self) -> Vec<ServerReport> {
        lock(&self.inner.servers)
            .iter()
            .map(|(name, server)| ServerReport {
                name: name.clone(),
                status: server.status.clone(),
                tools: server.tools.iter().map(|tool| tool.name.clone()).collect(),
                kind: server.kind,
            })
            .collect()
    }

    /// The tools of every connected server, in config order.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner.tools()
    }

    /// The instructions of every connected server that has some: `(server, text)` in config order.
    pub fn instructions(&self) -> Vec<(String, String)> {
        lock(&self.inner.servers)
            .iter()
            .filter_map(|(name, server)| {
                let text = server.connection.as_ref()?.instructions.clone()?;
                Some((name.clone(), text))
            })
            .collect()
    }

    /// Keeps `registry` in step with the servers' tools: the current ones are registered now, later
    /// ones as servers become ready or change their lists; tools of a server that goes away are
    /// removed. The registry is held weakly.
    pub fn attach(&self, registry: &Arc<ToolRegistry>) {
        lock(&self.inner.attached).push(Attached { registry: Arc::downgrade(registry), ids: Vec::new() });
        self.inner.sync_registries();
    }

    /// A receiver that sees a new value whenever a status or a tool list changes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Waits until no server is still connecting (each connect has its own deadline, so this ends).
    pub async fn settled(&self) {
        let mut changes = self.subscribe();
        loop {
            let connecting = lock(&self.inner.servers).values().any(|server| server.status == ServerStatus::Connecting);
            if !connecting || changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Closes every connection, kills every local server and removes the tools from the attached
    /// registries. Statuses stay as they were.
    pub fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        let connections: Vec<Arc<Connection>> = lock(&self.inner.servers)
            .values_mut()
            .filter_map(|server| {
                server.tools.clear();
                server.connection.take()
            })
            .collect();
        for connection in connections {
            connection.close();
        }
        self.inner.sync_registries();
        self.inner.changed();
    }
}

/// A weak handle: does not keep the servers alive.
#[derive(Clone)]
pub(crate) struct WeakManager(Weak<Inner>);

impl WeakManager {
    pub(crate) fn upgrade(&self) -> Option<McpManager> {
        self.0.upgrade().map(|inner| McpManager { inner })
    }
}

impl McpManager {
    pub(crate) fn downgrade(&self) -> WeakManager {
        WeakManager(Arc::downgrade(&self.inner))
    }
}

/// The shared state; tools hold it weakly.
pub(crate) struct Inner {
    options: McpOptions,
    servers: Mutex<IndexMap<String, Server>>,
    attached: Mutex<Vec<Attached>>,
    changes: watch::Sender<u64>,
    closed: AtomicBool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The connect tasks hold their connection too: close explicitly so nothing outlives us.
        for server in lock(&self.servers).values_mut() {
            if let Some(connection) = server.connection.take() {
                connection.close();
            }
        }
        for entry in lock(&self.attached).drain(..) {
            if let Some(registry) = entry.registry.upgrade() {
                for id in entry.ids {
                    registry.unregister(id);
                }
            }
        }
    }
}

struct Server {
    status: ServerStatus,
    kind: Option<&'static str>,
    connection: Option<Arc<Connection>>,
    tools: Vec<SharedTool>,
}

impl Server {
    fn new(status: ServerStatus, kind: Option<&'static str>) -> Self {
        Self { status, kind, connection: None, tools: Vec::new() }
    }
}

struct Attached {
    registry: Weak<ToolRegistry>,
    ids: Vec<RegistrationId>,
}

impl Inner {
    /// The live connection of `server` and the call deadline, or its status when it has none.
    pub(crate) fn connection(&self, server: &str) -> Result<(Arc<Connection>, Duration), ServerStatus> {
        let servers = lock(&self.servers);
        let entry = servers.get(server).ok_or(ServerStatus::Disabled)?;
        match &entry.connection {
            Some(connection) => Ok((Arc::clone(connection), self.options.call_timeout)),
            None => Err(entry.status.clone()),
        }
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        lock(&self.servers)
            .values()
            .flat_map(|server| server.tools.iter().map(|tool| Arc::clone(tool) as Arc<dyn Tool>))
            .collect()
    }

    fn update(&self, name: &str, change: impl FnOnce(&mut Server)) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if let Some(server) = lock(&self.servers).get_mut(name) {
            change(server);
        }
        self.sync_registries();
        self.changed();
    }

    fn changed(&self) {
        self.changes.send_modify(|generation| *generation += 1);
    }

    /// Registers the current tools in every attached registry, then removes the previous
    /// registrations (new before old, so a name never disappears in between).
    fn sync_registries(&self) {
        let tools = self.tools();
        let mut attached = lock(&self.attached);
        attached.retain(|entry| entry.registry.strong_count() > 0);
        for entry in attached.iter_mut() {
            let Some(registry) = entry.registry.upgrade() else { continue };
            let mut ids = Vec::with_capacity(tools.len());
            for tool in &tools {
                match registry.register(Arc::clone(tool)) {
                    Ok(id) => ids.push(id),
                    Err(err) => tracing::warn!(tool = tool.name(), "MCP tool not registered: {err}"),
                }
            }
            for old in std::mem::replace(&mut entry.ids, ids) {
                registry.unregister(old);
            }
        }
    }
}

/// What to do with one config entry.
enum Plan {
    Disabled,
    Invalid(McpError),
    Connect(Transport, Duration),
}

impl Plan {
    fn kind(&self) -> Option<&'static str> {
        match self {
            Self::Connect(Transport::Local { .. }, _) => Some("local"),
            Self::Connect(Transport::Remote { .. }, _) => Some("remote"),
            _ => None,
        }
    }
}

fn plan(name: &str, entry: &McpConfig, options: &McpOptions) -> Plan {
    let server = match entry {
        McpConfig::Toggle { enabled: false } => return Plan::Disabled,
        McpConfig::Toggle { enabled: true } => {
            return Plan::Invalid(McpError::Config {
                server: name.to_owned(),
                reason: "enabled, but no server is configured under this name (no `type`)".into(),
            });
        }
        McpConfig::Server(server) => server,
    };
    let (enabled, timeout, transport) = match server {
        McpServerConfig::Local { command, environment, enabled, timeout } => (
            enabled,
            timeout,
            Transport::Local {
                command: command.clone(),
                environment: environment.clone(),
                cwd: options.directory.clone(),
            },
        ),
        McpServerConfig::Remote { url, headers, enabled, timeout, oauth } => {
            // OAuth is on unless the entry says `oauth: false`.
            let oauth = match oauth {
                None => Some(OAuthSettings::default()),
                Some(oauth) => oauth.settings().map(|config| OAuthSettings::from_config(&config)),
            };
            (enabled, timeout, Transport::Remote { url: url.clone(), headers: headers.clone(), oauth })
        }
    };
    if *enabled == Some(false) {
        return Plan::Disabled;
    }
    if let Transport::Local { command, .. } = &transport
        && command.first().is_none_or(|program| program.trim().is_empty())
    {
        return Plan::Invalid(McpError::Config { server: name.to_owned(), reason: "`command` is empty".into() });
    }
    let timeout = timeout.map(Duration::from_millis).unwrap_or(options.connect_timeout);
    Plan::Connect(transport, timeout)
}

/// Connects one server, then follows it: tool-list changes refresh its tools; the end of the
/// connection marks it failed. Holds the manager only weakly once connected.
async fn run_server(
    inner: Weak<Inner>,
    name: String,
    transport: Transport,
    store: Option<McpAuthStore>,
    timeout: Duration,
) {
    let (events, mut received) = mpsc::unbounded_channel();
    let connected = tokio::time::timeout(timeout, async {
        let (connection, waiter) = connect(&name, &transport, store.as_ref(), events).await?;
        let tools = list_tools(&connection, timeout).await?;
        Ok::<_, McpError>((connection, waiter, tools))
    })
    .await
    .unwrap_or_else(|_elapsed| Err(timeout_error(timeout)));
    let Some(manager) = inner.upgrade() else { return };
    let (connection, mut waiter) = match connected {
        Ok((connection, waiter, tools)) => {
            let connection = Arc::new(connection);
            let tools = build_tools(&name, &tools, &inner);
            let shared = Arc::clone(&connection);
            manager.update(&name, move |server| {
                server.status = ServerStatus::Connected;
                server.connection = Some(shared);
                server.tools = tools;
            });
            (connection, waiter)
        }
        Err(err) => {
            tracing::warn!(server = %name, "MCP server not connected: {err}");
            let status = match err {
                McpError::NeedsAuth => ServerStatus::NeedsAuth,
                other => ServerStatus::Failed { error: other.to_string() },
            };
            manager.update(&name, |server| server.status = status);
            return;
        }
    };
    drop(manager);
    let call_timeout = inner.upgrade().map(|manager| manager.options.call_timeout).unwrap_or(DEFAULT_CALL_TIMEOUT);
    loop {
        tokio::select! {
            // A closed channel disables this branch; the waiter then reports the end.
            Some(_event) = received.recv() => refresh_tools(&inner, &name, &connection, call_timeout).await,
            reason = &mut waiter => {
                let reason = reason.unwrap_or_else(|err| err.to_string());
                let stderr = connection.stderr_tail();
                let detail = if stderr.is_empty() { String::new() } else { format!(" (stderr: {stderr})") };
                let error = McpError::Closed(format!(": {reason}{detail}")).to_string();
                if let Some(manager) = inner.upgrade() {
                    manager.update(&name, |server| {
                        if server.connection.as_ref().is_some_and(|current| Arc::ptr_eq(current, &connection)) {
                            server.connection = None;
                            server.tools.clear();
                            server.status = ServerStatus::Failed { error };
                        }
                    });
                }
                return;
            }
        }
    }
}

async fn refresh_tools(inner: &Weak<Inner>, name: &str, connection: &Arc<Connection>, timeout: Duration) {
    match list_tools(connection, timeout).await {
        Ok(tools) => {
            let Some(manager) = inner.upgrade() else { return };
            let tools = build_tools(name, &tools, inner);
            manager.update(name, |server| server.tools = tools);
        }
        Err(err) => tracing::warn!(server = %name, "MCP tool list refresh failed: {err}"),
    }
}

async fn list_tools(connection: &Connection, timeout: Duration) -> Result<Vec<rmcp::model::Tool>, McpError> {
    match tokio::time::timeout(timeout, connection.peer.list_all_tools()).await {
        Ok(Ok(tools)) => Ok(tools),
        Ok(Err(err)) => Err(McpError::Protocol(format!("tools/list failed: {err}"))),
        Err(_elapsed) => Err(timeout_error(timeout)),
    }
}

/// Registry tools of a listing; names the registry cannot take are skipped with a warning.
fn build_tools(server: &str, tools: &[rmcp::model::Tool], inner: &Weak<Inner>) -> Vec<SharedTool> {
    tools
        .iter()
        .map(|tool| McpTool::new(server, tool, inner.clone()))
        .filter(|tool| match opencode_tool_registry::validate_name(&tool.name) {
            Ok(()) => true,
            Err(err) => {
                tracing::warn!(server, tool = %tool.remote, "MCP tool skipped: {err}");
                false
            }
        })
        .map(Arc::new)
        .collect()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
