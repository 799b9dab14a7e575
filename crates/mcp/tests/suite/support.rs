//! Test support: Node (and the pinned `@modelcontextprotocol/server-everything`, installed with npm
//! into the target directory), a tool registry to attach servers to, and a context to call with.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::OnceLock;

use indexmap::IndexMap;
use opencode_config::McpConfig;
use opencode_config::ToolOutputConfig;
use opencode_mcp::McpManager;
use opencode_mcp::ServerStatus;
use opencode_tool_registry::Agent;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::Location;
use opencode_tool_registry::NoProgress;
use opencode_tool_registry::OutputStore;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolRegistry;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// Whether `node` runs; without it tests skip with a notice, except under CI.
pub fn node() -> bool {
    static NODE: OnceLock<bool> = OnceLock::new();
    let found = *NODE.get_or_init(|| Command::new("node").arg("--version").output().is_ok());
    if !found {
        assert!(std::env::var_os("CI").is_none(), "node is required under CI for the MCP tests");
        eprintln!("notice: node not found; skipping this MCP test");
    }
    found
}

/// The entry script of the pinned server-everything, installed once per target directory.
pub fn everything() -> Option<PathBuf> {
    static INSTALLED: OnceLock<Option<PathBuf>> = OnceLock::new();
    INSTALLED.get_or_init(install_everything).clone()
}

fn install_everything() -> Option<PathBuf> {
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-server-everything");
    let entry = prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let marker = prefix.join(format!("{}.installed", EVERYTHING.replace(['/', '@'], "_")));
    if marker.exists() && entry.exists() {
        return Some(entry);
    }
    let tools = Command::new("npm").arg("--version").output().is_ok() && node();
    if !tools {
        assert!(std::env::var_os("CI").is_none(), "npm and node are required under CI for the MCP tests");
        eprintln!("notice: npm/node not found; skipping the server-everything test");
        return None;
    }
    std::fs::create_dir_all(&prefix).unwrap();
    let status = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--no-save", "--prefix"])
        .arg(&prefix)
        .arg(EVERYTHING)
        .status()
        .unwrap();
    assert!(status.success(), "npm install {EVERYTHING} failed");
    std::fs::write(&marker, EVERYTHING).unwrap();
    Some(entry)
}

/// The scripted failure server.
pub fn scripted() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/scripted.mjs").display().to_string()
}

/// Parses an `mcp` map.
pub fn servers(json: Value) -> IndexMap<String, McpConfig> {
    serde_json::from_value(json).unwrap()
}

/// A project directory with a tool registry and a context to call tools with.
pub struct Env {
    pub _temp: tempfile::TempDir,
    pub project: PathBuf,
    pub registry: Arc<ToolRegistry>,
    agents: Agents,
    permissions: Arc<Permissions>,
}

impl Env {
    pub fn new() -> Self {
        Self::with_limits(ToolOutputConfig::default())
    }

    pub fn with_limits(limits: ToolOutputConfig) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        let output = OutputStore::new(root.join("tool-output"), limits);
        let location = Location::new(&project, output.dir()).unwrap();
        let registry = Arc::new(ToolRegistry::new(location, output).unwrap());
        let dirs =
            AgentDirs { tool_output: root.join("tool-output"), plans: root.join("plans"), ..AgentDirs::default() };
        let agents = Agents::new(&dirs, None, &IndexMap::new());
        Self { _temp: temp, project, registry, agents, permissions: Arc::new(Permissions::in_memory()) }
    }

    pub fn build(&self) -> Arc<Agent> {
        self.agents.get("build").unwrap()
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext {
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            call_id: "call_1".into(),
            agent: self.build(),
            location: Arc::clone(self.registry.location()),
            cancel: CancellationToken::new(),
            permissions: Arc::clone(&self.permissions),
            progress: Arc::new(NoProgress),
            output: self.registry.output().clone(),
            editor: None,
        }
    }

    /// Calls a tool through the registry, as the runtime does.
    pub async fn call(&self, name: &str, input: Value) -> Settlement {
        let call = ToolCall { call_id: "call_1".into(), name: name.into(), input };
        self.registry.execute(&call, &self.ctx()).await.unwrap()
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.registry.definitions(&self.build()).into_iter().map(|definition| definition.name).collect()
    }
}

/// Waits (without a deadline of its own: the servers' timeouts bound it) until `done` holds.
pub async fn wait_until(manager: &McpManager, mut done: impl FnMut(&McpManager) -> bool) {
    let mut changes = manager.subscribe();
    while !done(manager) {
        changes.changed().await.unwrap();
    }
}

pub fn failed(status: Option<ServerStatus>) -> String {
    match status {
        Some(ServerStatus::Failed { error }) => error,
        other => panic!("expected a failed server, got {other:?}"),
    }
}
