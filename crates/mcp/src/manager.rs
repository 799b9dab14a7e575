//! [`McpManager`]: every configured server, connected in the background, its status, its tools
//! kept in step with the attached tool registries, and its instructions.
//!
//! Nothing here blocks start-up: [`McpManager::start`] only spawns one connect task per enabled
//! server. A server's tools join every attached registry when its handshake and first listing
//! succeed (within its timeout), are replaced when it sends `notifications/tools/list_changed`, and
//! leave when its connection ends. Dropping the last handle (or [`McpManager::shutdown`]) stops every
//! connection and kills every local server's process group.
//!
//! At run time (OpenCode's `/mcp` routes) servers can be added ([`McpManager::add`], not written to
//! any config file), disconnected ([`McpManager::disconnect`]: `disabled`, tools gone) and connected
//! again ([`McpManager::connect`]). Every connect is an *attempt* with its own number: a connect that
//! finishes after a newer attempt (or a disconnect) began is closed and forgotten, so a late
//! handshake never resurrects a server the user turned off.

use std::collections::HashMap;
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
use tokio::sync::broadcast;
use tokio::sync::mpsc;
use tokio::sync::watch;

use crate::connect::Connection;
use crate::connect::Transport;
use crate::connect::connect;
use crate::connect::timeout_error;
use crate::error::McpError;
use crate::oauth::McpAuthStore;
use crate::oauth::OAuthSettings;
use crate::oauth::PendingAuthorization;
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
    Failed {
        error: String,
    },
    NeedsAuth,
    /// The authorization server offers no dynamic client registration and no `clientId` is set.
    NeedsClientRegistration {
        error: String,
    },
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connecting => f.write_str("connecting"),
            Self::Connected => f.write_str("connected"),
            Self::Disabled => f.write_str("disabled"),
            Self::Failed { error } => write!(f, "failed: {error}"),
            Self::NeedsAuth => f.write_str("needs auth"),
            Self::NeedsClientRegistration { error } => write!(f, "needs client registration: {error}"),
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
    pub(crate) inner: Arc<Inner>,
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
            events: broadcast::channel(EVENT_CAPACITY).0,
            pending: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        });
        for (name, entry) in servers {
            inner.launch(name, entry.clone(), false);
        }
        Self { inner }
    }

    /// Adds server `name` (replacing a server of that name: its connection closes, its tools
    /// leave) and starts connecting it in the background, as OpenCode's `POST /mcp` does. Nothing
    /// is written to configuration files. [`McpManager::wait`] waits for the connect to settle.
    pub fn add(&self, name: &str, entry: McpConfig) {
        self.inner.forget_pending(name);
        self.inner.launch(name, entry, false);
    }

    /// Connects server `name` again with its entry (enabled even if the entry says otherwise, as
    /// OpenCode does), closing its current connection first, and waits for the connect to settle
    /// (within the entry's timeout). Returns the resulting status; [`McpError::UnknownServer`] for
    /// a name this manager does not know.
    pub async fn connect(&self, name: &str) -> Result<ServerStatus, McpError> {
        let entry = self.entry(name).ok_or_else(|| McpError::UnknownServer { name: name.to_owned() })?;
        let mut changes = self.subscribe();
        let attempt = self.inner.launch(name, entry, true);
        loop {
            let current = lock(&self.inner.servers).get(name).map(|server| (server.attempt, server.status.clone()));
            match current {
                Some((now, ServerStatus::Connecting)) if now == attempt => {}
                Some((_, status)) => return Ok(status),
                None => return Err(McpError::UnknownServer { name: name.to_owned() }),
            }
            if changes.changed().await.is_err() {
                return Ok(ServerStatus::Connecting);
            }
        }
    }

    /// Closes server `name`'s connection (or abandons its connect), removes its tools from the
    /// attached registries and marks it `disabled`, as OpenCode's disconnect does. `false` for a name
    /// this manager does not know.
    pub fn disconnect(&self, name: &str) -> bool {
        let taken = self.inner.modify(name, |server| {
            server.attempt += 1;
            server.status = ServerStatus::Disabled;
            server.tools.clear();
            server.connection.take()
        });
        match taken {
            Some(connection) => {
                if let Some(connection) = connection {
                    connection.close();
                }
                true
            }
            None => false,
        }
    }

    /// Waits until server `name` is no longer connecting (its connect has its own deadline).
    pub async fn wait(&self, name: &str) {
        let mut changes = self.subscribe();
        loop {
            let connecting =
                lock(&self.inner.servers).get(name).is_some_and(|server| server.status == ServerStatus::Connecting);
            if !connecting || changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Server `name`'s config entry (as configured or added).
    pub fn entry(&self, name: &str) -> Option<McpConfig> {
        lock(&self.inner.servers).get(name).map(|server| server.entry.clone())
    }

    /// Whether a server of that name is configured or was added.
    pub fn contains(&self, name: &str) -> bool {
        lock(&self.inner.servers).contains_key(name)
    }

    /// Where OAuth tokens are kept (`None`: nowhere; remote servers then get none).
    pub fn auth_store(&self) -> Option<&McpAuthStore> {
        self.inner.options.auth_store.as_ref()
    }

    /// Events: a server's tool list changed, a browser could not be opened for a sign-in.
    pub fn events(&self) -> broadcast::Receiver<McpEvent> {
        self.inner.events.subscribe()
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

/// What happened to the servers, for event streams (OpenCode's `mcp.tools.changed` and
/// `mcp.browser.open.failed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpEvent {
    /// The server's tools changed: it connected, listed new tools, or went away.
    ToolsChanged { server: String },
    /// A sign-in waits for the browser at `url`, and none was opened: a client should show it.
    BrowserOpenFailed { server: String, url: String },
}

/// Events a slow receiver may fall behind by.
const EVENT_CAPACITY: usize = 64;

/// The shared state; tools hold it weakly.
pub(crate) struct Inner {
    pub(crate) options: McpOptions,
    servers: Mutex<IndexMap<String, Server>>,
    attached: Mutex<Vec<Attached>>,
    changes: watch::Sender<u64>,
    pub(crate) events: broadcast::Sender<McpEvent>,
    /// OAuth flows started over the API, waiting for their code, by server.
    pub(crate) pending: Mutex<HashMap<String, PendingAuthorization>>,
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
    entry: McpConfig,
    status: ServerStatus,
    kind: Option<&'static str>,
    connection: Option<Arc<Connection>>,
    tools: Vec<SharedTool>,
    /// The number of the latest connect attempt (or disconnect); older attempts are void.
    attempt: u64,
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

    /// Plans `entry` as server `name` (replacing any server of that name) and spawns its connect;
    /// returns the attempt's number. `force` connects even an entry with `enabled: false`.
    fn launch(self: &Arc<Self>, name: &str, entry: McpConfig, force: bool) -> u64 {
        let plan = if self.closed.load(Ordering::SeqCst) {
            Plan::Invalid(McpError::Closed(": the MCP servers were shut down".into()))
        } else {
            plan(name, &entry, &self.options, force)
        };
        let runtime = tokio::runtime::Handle::try_current().ok();
        let kind = plan.kind();
        let status = match (&plan, &runtime) {
            (Plan::Disabled, _) => ServerStatus::Disabled,
            (Plan::Invalid(err), _) => ServerStatus::Failed { error: err.to_string() },
            (Plan::Connect(..), None) => ServerStatus::Failed { error: "no async runtime to connect in".into() },
            (Plan::Connect(..), Some(_)) => ServerStatus::Connecting,
        };
        let (attempt, previous) = {
            let mut servers = lock(&self.servers);
            let (attempt, previous) = match servers.get_mut(name) {
                Some(server) => (server.attempt + 1, server.connection.take()),
                None => (1, None),
            };
            let had_tools = servers.get(name).is_some_and(|server| !server.tools.is_empty());
            let server = Server { entry, status, kind, connection: None, tools: Vec::new(), attempt };
            servers.insert(name.to_owned(), server);
            (attempt, previous.map(|connection| (connection, had_tools)))
        };
        if let Some((connection, had_tools)) = previous {
            connection.close();
            if had_tools {
                self.sync_registries();
                self.tools_changed(name);
            }
        }
        self.changed();
        if let (Plan::Connect(transport, timeout), Some(runtime)) = (plan, runtime) {
            let store = self.options.auth_store.clone();
            let target = Target { name: name.to_owned(), attempt };
            runtime.spawn(run_server(Arc::downgrade(self), target, transport, store, timeout));
        }
        attempt
    }

    /// Changes server `name` (if it exists), then brings the registries in step and tells
    /// subscribers; a change of its tool list is announced as [`McpEvent::ToolsChanged`].
    fn modify<R>(&self, name: &str, change: impl FnOnce(&mut Server) -> R) -> Option<R> {
        let (result, tools_changed) = {
            let mut servers = lock(&self.servers);
            let server = servers.get_mut(name)?;
            let before: Vec<String> = server.tools.iter().map(|tool| tool.name.clone()).collect();
            let result = change(server);
            let changed = server.tools.len() != before.len()
                || server.tools.iter().zip(&before).any(|(tool, name)| tool.name != *name);
            (result, changed)
        };
        self.sync_registries();
        if tools_changed {
            self.tools_changed(name);
        }
        self.changed();
        Some(result)
    }

    /// [`Inner::modify`] for the connect task of `target`: nothing happens once the servers were
    /// shut down or a newer attempt began (`None`).
    fn update<R>(&self, target: &Target, change: impl FnOnce(&mut Server) -> R) -> Option<R> {
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let current = lock(&self.servers).get(&target.name).is_some_and(|server| server.attempt == target.attempt);
        if !current {
            return None;
        }
        self.modify(&target.name, change)
    }

    /// Sets server `name`'s status (a sign-in learnt something a connect cannot).
    pub(crate) fn set_status(&self, name: &str, status: ServerStatus) {
        self.modify(name, |server| server.status = status);
    }

    fn tools_changed(&self, name: &str) {
        // Nobody listening is fine.
        let _receivers = self.events.send(McpEvent::ToolsChanged { server: name.to_owned() });
    }

    /// Drops an OAuth flow started for `name` (its server was replaced or its credentials removed).
    pub(crate) fn forget_pending(&self, name: &str) {
        lock(&self.pending).remove(name);
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

fn plan(name: &str, entry: &McpConfig, options: &McpOptions, force: bool) -> Plan {
    let server = match entry {
        McpConfig::Toggle { enabled: false } if !force => return Plan::Disabled,
        McpConfig::Toggle { enabled: false } => {
            return Plan::Invalid(McpError::Config {
                server: name.to_owned(),
                reason: "no server is configured under this name (no `type`)".into(),
            });
        }
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
    if *enabled == Some(false) && !force {
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

/// Which connect attempt of which server a task runs.
struct Target {
    name: String,
    attempt: u64,
}

/// Connects one server, then follows it: tool-list changes refresh its tools; the end of the
/// connection marks it failed. Holds the manager only weakly once connected. A connection that is
/// no longer wanted (a newer attempt began, the server was disconnected) is closed at once.
async fn run_server(
    inner: Weak<Inner>,
    target: Target,
    transport: Transport,
    store: Option<McpAuthStore>,
    timeout: Duration,
) {
    let name = target.name.clone();
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
            let adopted = manager.update(&target, move |server| {
                server.status = ServerStatus::Connected;
                server.connection = Some(shared);
                server.tools = tools;
            });
            if adopted.is_none() {
                connection.close();
                return;
            }
            (connection, waiter)
        }
        Err(err) => {
            tracing::warn!(server = %name, "MCP server not connected: {err}");
            let status = match err {
                McpError::NeedsAuth => ServerStatus::NeedsAuth,
                McpError::NeedsClientRegistration => {
                    ServerStatus::NeedsClientRegistration { error: format!("{err}; {}", err.hint()) }
                }
                other => ServerStatus::Failed { error: other.to_string() },
            };
            manager.update(&target, |server| server.status = status);
            return;
        }
    };
    drop(manager);
    let call_timeout = inner.upgrade().map(|manager| manager.options.call_timeout).unwrap_or(DEFAULT_CALL_TIMEOUT);
    loop {
        tokio::select! {
            // A closed channel disables this branch; the waiter then reports the end.
            Some(_event) = received.recv() => refresh_tools(&inner, &target, &connection, call_timeout).await,
            reason = &mut waiter => {
                let reason = reason.unwrap_or_else(|err| err.to_string());
                let stderr = connection.stderr_tail();
                let detail = if stderr.is_empty() { String::new() } else { format!(" (stderr: {stderr})") };
                let error = McpError::Closed(format!(": {reason}{detail}")).to_string();
                if let Some(manager) = inner.upgrade() {
                    manager.update(&target, |server| {
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

async fn refresh_tools(inner: &Weak<Inner>, target: &Target, connection: &Arc<Connection>, timeout: Duration) {
    match list_tools(connection, timeout).await {
        Ok(tools) => {
            let Some(manager) = inner.upgrade() else { return };
            let tools = build_tools(&target.name, &tools, inner);
            manager.update(target, |server| server.tools = tools);
        }
        Err(err) => tracing::warn!(server = %target.name, "MCP tool list refresh failed: {err}"),
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

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
