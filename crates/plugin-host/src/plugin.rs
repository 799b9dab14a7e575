//! The Rust plugin API: a [`Plugin`] declares a namespace and the hooks it implements, starts (its
//! readiness), and implements any of OpenCode's hooks. Every hook method has a no-op default.

use crate::commands::CommandFuture;
use crate::commands::CommandInput;
use crate::commands::PluginCommand;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_config::Config;
use opencode_system_context::Producer;
use opencode_tool_registry::Tool;

use crate::auth::AuthProvider;
use crate::hooks::*;
use crate::side::SideModel;

/// What a plugin is told when it starts.
#[derive(Debug, Clone, Default)]
pub struct StartContext {
    /// The project directory (the Location root).
    pub directory: PathBuf,
    /// The worktree root, when the directory is inside a git repository.
    pub worktree: Option<PathBuf>,
}

/// A plugin-defined Context Source contribution: registered as `plugin.<namespace>/<name>` in the
/// System Context Registry.
pub struct PluginSource {
    /// `[a-z0-9][a-z0-9._/-]*`.
    pub name: String,
    pub producer: Arc<dyn Producer>,
}

impl std::fmt::Debug for PluginSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginSource").field("name", &self.name).finish_non_exhaustive()
    }
}

/// One plugin. Hooks take `(input, output)`: the output is mutable and what the previous plugin left.
///
/// `hooks()` must list every hook the plugin implements: the host dispatches a hook only to the
/// plugins that declare it (which is what makes an unused hook free).
pub trait Plugin: Send + Sync + 'static {
    /// The stable namespace of its hooks, sources and diagnostics (`[a-z0-9][a-z0-9._-]*`).
    fn namespace(&self) -> &str;

    /// The hooks this plugin implements.
    fn hooks(&self) -> HookSet;

    /// Becomes ready (connect, spawn, read state). The host awaits it before any session runs.
    fn start<'a>(&'a self, _ctx: &'a StartContext) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }

    /// Releases what `start` acquired (OpenCode's `dispose`).
    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// `event`: every bus event. Synchronous and called on the publisher's thread: keep it cheap.
    fn event(&self, _event: &PluginEvent) {}

    /// `tool`: tools this plugin contributes (asked once, after it is ready).
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    /// `auth`: the provider credential flows this plugin contributes.
    fn auth(&self) -> Option<Arc<dyn AuthProvider>> {
        None
    }

    /// Whether this plugin keeps the request inside the model's context window itself (it
    /// rewrites the history in `experimental.chat.messages.transform`). While a ready plugin says
    /// so, the runtime skips its proactive compaction (which judges the untransformed history) and
    /// keeps only the recovery from a provider's context-overflow error, so the built-in
    /// compaction stays the safety net without second-guessing the plugin. A plugin that failed to
    /// start is not ready, so the built-in compaction is back in charge.
    fn manages_context(&self) -> bool {
        false
    }

    /// The host's side model, for one-shot requests on the small model out of band. Called once
    /// the plugin is ready and the host has one (possibly after start-up; possibly more than once,
    /// with the same model); never called by a host without models.
    fn attach_side_model(&self, _model: Arc<dyn SideModel>) {}

    /// Slash commands this plugin contributes (asked while it is ready; see [`crate::commands`]).
    fn commands(&self) -> Vec<PluginCommand> {
        Vec::new()
    }

    /// Runs one of [`Plugin::commands`].
    fn run_command<'a>(&'a self, name: &'a str, _input: &'a CommandInput) -> CommandFuture<'a> {
        Box::pin(async move { Err(format!("the plugin has no command {name:?}")) })
    }

    /// Plugin-defined Context Sources (asked once, after it is ready).
    fn context_sources(&self) -> Vec<PluginSource> {
        Vec::new()
    }

    fn config<'a>(&'a self, _input: &'a (), _output: &'a mut Config) -> HookFuture<'a> {
        none()
    }

    fn provider<'a>(&'a self, _input: &'a ProviderInput, _output: &'a mut ProviderOutput) -> HookFuture<'a> {
        none()
    }

    fn chat_message<'a>(&'a self, _input: &'a ChatMessageInput, _output: &'a mut ChatMessageOutput) -> HookFuture<'a> {
        none()
    }

    fn chat_params<'a>(&'a self, _input: &'a ChatInput, _output: &'a mut ChatParamsOutput) -> HookFuture<'a> {
        none()
    }

    fn chat_headers<'a>(&'a self, _input: &'a ChatInput, _output: &'a mut ChatHeadersOutput) -> HookFuture<'a> {
        none()
    }

    fn permission_ask<'a>(&'a self, _input: &'a PermissionInput, _output: &'a mut PermissionOutput) -> HookFuture<'a> {
        none()
    }

    fn tool_execute_before<'a>(
        &'a self,
        _input: &'a ToolCallInput,
        _output: &'a mut ToolBeforeOutput,
    ) -> HookFuture<'a> {
        none()
    }

    fn tool_execute_after<'a>(
        &'a self,
        _input: &'a ToolAfterInput,
        _output: &'a mut ToolAfterOutput,
    ) -> HookFuture<'a> {
        none()
    }

    fn tool_definition<'a>(
        &'a self,
        _input: &'a ToolDefinitionInput,
        _output: &'a mut ToolDefinitionOutput,
    ) -> HookFuture<'a> {
        none()
    }

    fn shell_env<'a>(&'a self, _input: &'a ShellEnvInput, _output: &'a mut ShellEnvOutput) -> HookFuture<'a> {
        none()
    }

    fn chat_messages_transform<'a>(&'a self, _input: &'a ChatInput, _output: &'a mut MessagesOutput) -> HookFuture<'a> {
        none()
    }

    fn chat_system_transform<'a>(&'a self, _input: &'a ChatInput, _output: &'a mut SystemOutput) -> HookFuture<'a> {
        none()
    }

    fn session_compacting<'a>(&'a self, _input: &'a SessionInput, _output: &'a mut CompactingOutput) -> HookFuture<'a> {
        none()
    }

    fn text_complete<'a>(
        &'a self,
        _input: &'a TextCompleteInput,
        _output: &'a mut TextCompleteOutput,
    ) -> HookFuture<'a> {
        none()
    }
}

/// A finished hook call (boxing a zero-sized future does not allocate).
fn none<'a>() -> HookFuture<'a> {
    Box::pin(async { Ok(()) })
}

/// Whether `namespace` is a valid plugin namespace.
pub fn valid_namespace(namespace: &str) -> bool {
    let mut chars = namespace.chars();
    chars.next().is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_lowercase_words() {
        assert!(valid_namespace("acme"));
        assert!(valid_namespace("acme.tools-2"));
        assert!(!valid_namespace(""));
        assert!(!valid_namespace("Acme"));
        assert!(!valid_namespace("-acme"));
        assert!(!valid_namespace("acme/x"));
    }
}
