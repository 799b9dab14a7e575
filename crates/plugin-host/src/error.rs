//! Plugin failures: one-line causes naming the plugin, each with a hint.

use std::path::PathBuf;

/// A plugin that could not be loaded, started, or answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// A required plugin did not become ready; sessions must not start.
    #[error("required plugin `{plugin}` failed to start: {reason}")]
    RequiredFailed { plugin: String, reason: String },
    /// Two plugins declared the same namespace.
    #[error("plugin namespace `{namespace}` is already taken")]
    DuplicateNamespace { namespace: String },
    /// A namespace that is not `[a-z0-9][a-z0-9._-]*`.
    #[error("plugin namespace `{namespace}` is invalid")]
    InvalidNamespace { namespace: String },
    /// The plugin program could not be started.
    #[error("cannot start plugin `{plugin}` ({command}): {reason}")]
    Spawn { plugin: String, command: String, reason: String },
    /// The plugin program did not answer within its time limit.
    #[error("plugin `{plugin}` did not answer `{method}` within {after_ms} ms")]
    Timeout { plugin: String, method: String, after_ms: u64 },
    /// The plugin program exited (or closed its output).
    #[error("plugin `{plugin}` exited: {reason}")]
    Exited { plugin: String, reason: String },
    /// The plugin program broke the protocol (bad JSON, bad handshake).
    #[error("plugin `{plugin}` broke the protocol: {reason}")]
    Protocol { plugin: String, reason: String },
    /// The plugin answered a request with an error.
    #[error("plugin `{plugin}` failed `{method}`: {message}")]
    Remote { plugin: String, method: String, message: String },
    /// A `plugin[]` entry or plugin file this host cannot run.
    #[error("plugin `{spec}` is not supported: {reason}")]
    Unsupported { spec: String, reason: String },
    /// The plugin directory could not be read.
    #[error("cannot read plugin directory {}: {reason}", path.display())]
    Directory { path: PathBuf, reason: String },
}

impl PluginError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::RequiredFailed { .. } => {
                "fix the plugin or mark it optional (`\"required\": false`) to start without it"
            }
            Self::DuplicateNamespace { .. } => "remove one of the two plugins from `plugin[]` or `.opencode/plugin/`",
            Self::InvalidNamespace { .. } => "namespaces are lowercase letters, digits, `.`, `_` and `-`",
            Self::Spawn { .. } => "check that the command exists and is executable",
            Self::Timeout { .. } => "the plugin is hung or slow; raise its `timeout` or fix the plugin",
            Self::Exited { .. } => "run the plugin command by hand to see why it stops (its stderr is in the log)",
            Self::Protocol { .. } => "the plugin must speak the protocol in docs/PLUGINS.md",
            Self::Remote { .. } => "the plugin reported the failure; see its message",
            Self::Unsupported { .. } => {
                "use an executable plugin (see docs/PLUGINS.md) or `[name, {\"command\": [...]}]`"
            }
            Self::Directory { .. } => "check the directory's permissions",
        }
    }
}
