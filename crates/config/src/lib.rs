//! OpenCode's configuration, read the way OpenCode users already write it.
//!
//! This crate owns the typed shape of `opencode.json(c)` ([`Config`]), where the files are found and
//! how they merge ([`load`], with the source of every top-level key), JSONC and `{env:}`/`{file:}`
//! substitution, agent and command markdown files, command template expansion ([`commands`]), the XDG paths every other crate uses ([`Paths`]) and stored
//! provider credentials ([`AuthStore`]). Nothing here reads the process environment on its own: the
//! caller passes an [`Env`].

mod agent;
mod auth;
pub mod commands;
mod config;
mod env;
mod error;
pub mod id;
pub mod jsonc;
mod load;
mod markdown;
mod paths;
mod permission;
mod substitute;
mod tool_output;

pub use agent::{AgentConfig, AgentMode};
pub use auth::{
    AuthEntry, AuthInfo, AuthStore, CredentialRefresher, REFRESH_MARGIN_MS, RefreshError, RefreshFuture, write_private,
};
pub use config::{
    Autoupdate, CommandConfig, CompactionConfig, Config, EnterpriseConfig, KNOWN_KEYS, McpConfig, McpOAuth,
    McpOAuthConfig, McpServerConfig, MemoryConfig, NotifyOnly, PluginSpec, ProviderConfig, ProviderOptionsConfig,
    ServerConfig, ShareMode, SkillsConfig, WatcherConfig,
};
pub use env::Env;
pub use error::{ConfigError, ConfigWarning};
pub use load::{ConfigSource, LoadOptions, LoadedConfig, find_worktree, load, merge_values, project_id};
pub use markdown::{AgentFile, agent_files, agent_from_markdown, front_matter, split_front_matter};
pub use paths::Paths;
pub use permission::{PermissionAction, PermissionConfig, PermissionRule};
pub use tool_output::ToolOutputConfig;
