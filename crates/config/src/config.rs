//! The typed shape of `opencode.json(c)` (OpenCode's `https://opencode.ai/config.json` schema).
//!
//! Every field is optional so layers can merge. Keys this version does not know are kept in
//! [`Config::extra`] (the loader warns about them) so nothing a user wrote is silently lost.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{AgentConfig, PermissionConfig, ToolOutputConfig};

/// One merged (or single-file) configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Config {
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// The default model, `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model for small tasks (titles, summaries), `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_agent: Option<String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub provider: IndexMap<String, ProviderConfig>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub agent: IndexMap<String, AgentConfig>,
    /// Deprecated spelling of primary agents; the loader moves entries into `agent`.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub mode: IndexMap<String, AgentConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionConfig>,
    /// Deprecated `{ tool: bool }` switches, kept for the tool registry to turn into permissions.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub tools: IndexMap<String, bool>,
    /// Instruction files: paths, globs or http(s) URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions: Vec<String>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub mcp: IndexMap<String, McpConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugin: Vec<PluginSpec>,
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub command: IndexMap<String, CommandConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_output: Option<ToolOutputConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerConfig>,
    /// How much a long-lived process keeps in memory between turns (opencode-rs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryConfig>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_providers: Vec<String>,
    /// When set, only these providers are enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_providers: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<ShareMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoupdate: Option<Autoupdate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    #[serde(rename = "logLevel", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watcher: Option<WatcherConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<SkillsConfig>,
    /// Formatter settings (`false` or per-formatter objects), kept as written for the formatter owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formatter: Option<Value>,
    /// LSP settings (`false` or per-server objects), kept as written for the LSP owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsp: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Magic Context (`true`, `false` or its settings object), kept as written for its crate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub magic_context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enterprise: Option<EnterpriseConfig>,
    /// Keys this version does not know (filled by the loader, which warns about each).
    #[serde(skip)]
    pub extra: Map<String, Value>,
}

/// The top-level keys [`Config`] types, plus keys OpenCode accepts that are deliberately kept untyped.
pub const KNOWN_KEYS: &[&str] = &[
    "$schema",
    "model",
    "small_model",
    "default_agent",
    "provider",
    "agent",
    "mode",
    "permission",
    "tools",
    "instructions",
    "mcp",
    "plugin",
    "command",
    "compaction",
    "tool_output",
    "server",
    "memory",
    "disabled_providers",
    "enabled_providers",
    "share",
    "autoupdate",
    "snapshot",
    "username",
    "shell",
    "logLevel",
    "subagent_depth",
    "magic_context",
    "watcher",
    "skills",
    "formatter",
    "lsp",
    "experimental",
    "enterprise",
    // Accepted by OpenCode, unused here; listed so they do not warn.
    "theme",
    "keybinds",
    "tui",
    "layout",
    "autoshare",
    "attachment",
    "references",
    "reference",
];

/// `provider.<id>`: a catalog provider's overrides, or a whole custom provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The AI SDK package that says which wire protocol the provider speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npm: Option<String>,
    /// Base URL (models.dev's `api`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Environment variables holding the key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Only these models are listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub whitelist: Vec<String>,
    /// These models are hidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blacklist: Vec<String>,
    #[serde(default, skip_serializing_if = "ProviderOptionsConfig::is_empty")]
    pub options: ProviderOptionsConfig,
    /// Models added or overridden, models.dev-shaped and partial; the catalog merges them over its own.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub models: IndexMap<String, Map<String, Value>>,
}

/// `provider.<id>.options`: connection settings, plus provider options passed through.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderOptionsConfig {
    #[serde(rename = "apiKey", default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    #[serde(rename = "baseURL", default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Every other option (`timeout`, `headers`, `setCacheKey`, provider-specific settings).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProviderOptionsConfig {
    pub fn is_empty(&self) -> bool {
        self.api_key.is_none() && self.base_url.is_none() && self.extra.is_empty()
    }
}

/// `mcp.<name>`: a local (stdio) or remote server, or only a switch on an inherited one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum McpConfig {
    Server(McpServerConfig),
    Toggle { enabled: bool },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum McpServerConfig {
    Local {
        command: Vec<String>,
        #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
        environment: IndexMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        enabled: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
    Remote {
        url: String,
        #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
        headers: IndexMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        enabled: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
        /// OAuth settings, or `false` to never attempt OAuth (e.g. an API key in `headers`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        oauth: Option<McpOAuth>,
    },
}

/// `mcp.<name>.oauth`: `false` disables OAuth for the server; an object configures it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum McpOAuth {
    /// `false` disables OAuth; `true` is the same as `{}`.
    Enabled(bool),
    /// Boxed: most entries have none, and `McpConfig` stays small.
    Config(Box<McpOAuthConfig>),
}

impl McpOAuth {
    /// The settings when OAuth is enabled (`{}`-defaults for `true`), `None` for `false`.
    pub fn settings(&self) -> Option<McpOAuthConfig> {
        match self {
            Self::Enabled(false) => None,
            Self::Enabled(true) => Some(McpOAuthConfig::default()),
            Self::Config(config) => Some(McpOAuthConfig::clone(config)),
        }
    }
}

/// OAuth settings of a remote MCP server. Without `clientId` the client registers itself
/// dynamically (RFC 7591).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpOAuthConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Space-separated scopes to request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Port of the local callback (default 19876).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_port: Option<u16>,
    /// The full redirect URI (default `http://127.0.0.1:<callbackPort>/mcp/oauth/callback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
}

/// `plugin[]`: a package or path, optionally with options (`["name", {...}]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PluginSpec {
    Name(String),
    WithOptions(String, Value),
}

/// `command.<name>`: a reusable prompt template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommandConfig {
    pub template: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask: Option<bool>,
}

/// `compaction`: when and how conversations are compacted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactionConfig {
    /// Compact automatically when the context is full (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<bool>,
    /// Prune old tool outputs (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<bool>,
    /// Turns kept verbatim after the summary (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_turns: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_recent_tokens: Option<u64>,
    /// Tokens kept free for the model's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved: Option<u64>,
}

/// `memory`: what a long-lived process (`opencode serve`) keeps in memory between turns, and for how
/// long. opencode-rs only; absent keys take the defaults documented in `docs/MEMORY.md`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryConfig {
    /// Budget of the projected-history caches of all sessions, in MB (default 4; 0 keeps none
    /// between turns). Least recently used idle sessions are dropped first and reloaded from the
    /// store by their next turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_cache_mb: Option<f64>,
    /// A session's cached history is dropped after this many seconds without a turn (default 300;
    /// 0: only the budget applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_idle_seconds: Option<u64>,
    /// A directory's Location (its tools, MCP servers and language servers) that no session used for
    /// this many seconds is shut down, and started again by its next use (default 900; 0: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_idle_seconds: Option<u64>,
}

/// `server`: how `opencode serve` listens.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mdns: Option<bool>,
    #[serde(rename = "mdnsDomain", default, skip_serializing_if = "Option::is_none")]
    pub mdns_domain: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cors: Vec<String>,
    /// Host names requests may use besides loopback names and IP addresses (`.example.com` allows
    /// subdomains).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// `false` refuses configuration changes and new MCP servers over HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_config_changes: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShareMode {
    Manual,
    Auto,
    Disabled,
}

/// `autoupdate`: `true`, `false` or `"notify"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Autoupdate {
    Enabled(bool),
    Notify(NotifyOnly),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotifyOnly {
    Notify,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WatcherConfig {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillsConfig {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnterpriseConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Config {
    /// `model` split into `(provider, model)` at the first `/` (model ids may contain more).
    pub fn model_ref(&self) -> Option<(&str, &str)> {
        self.model.as_deref().and_then(|model| model.split_once('/'))
    }

    /// Whether a provider is enabled by `enabled_providers` / `disabled_providers`.
    pub fn provider_enabled(&self, id: &str) -> bool {
        let allowed = self.enabled_providers.as_ref().is_none_or(|enabled| enabled.iter().any(|p| p == id));
        allowed && !self.disabled_providers.iter().any(|p| p == id)
    }
}
