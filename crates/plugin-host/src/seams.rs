//! The plugins behind other crates' seams: `permission.ask` as the tool registry's
//! [`PermissionHook`], `shell.env` as the `bash` tool's [`EnvOverlay`], and the `config` hook at
//! start-up. Each costs one atomic load (and no allocation) while no plugin implements its hook.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_config::Config;
use opencode_config::PermissionAction;
use opencode_tool_registry::PermissionHook;
use opencode_tool_registry::PermissionQuery;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::tools::EnvOverlay;

use crate::hooks::HookName;
use crate::hooks::PermissionInput;
use crate::hooks::PermissionOutput;
use crate::hooks::PermissionStatus;
use crate::hooks::ShellEnvInput;
use crate::hooks::ShellEnvOutput;
use crate::hooks::hook;
use crate::host::HookFailure;
use crate::host::PluginHost;

/// The plugins' `permission.ask`, for [`opencode_tool_registry::Permissions::set_hook`]: asked for
/// every request the rules leave at `ask`, before the user is; the last plugin's status wins.
#[derive(Debug, Clone)]
pub struct PluginPermissions {
    host: PluginHost,
}

impl PluginPermissions {
    pub fn new(host: PluginHost) -> Self {
        Self { host }
    }

    /// As an `Arc<dyn PermissionHook>`, ready for `Permissions::set_hook`.
    pub fn hook(host: PluginHost) -> Arc<dyn PermissionHook> {
        Arc::new(Self::new(host))
    }
}

impl PermissionHook for PluginPermissions {
    fn decide<'a>(&'a self, query: PermissionQuery<'a>) -> BoxFuture<'a, PermissionAction> {
        if !self.host.implements(HookName::PermissionAsk) {
            return Box::pin(async { PermissionAction::Ask });
        }
        Box::pin(async move {
            let input = PermissionInput {
                session_id: query.session_id.to_owned(),
                permission: query.ask.permission.clone(),
                patterns: query.ask.patterns.clone(),
                always: query.ask.always.clone(),
                metadata: query.ask.metadata.clone(),
                agent: query.agent.to_owned(),
                message_id: query.tool.map(|tool| tool.message_id.clone()),
                call_id: query.tool.map(|tool| tool.call_id.clone()),
            };
            let mut output = PermissionOutput::default();
            // A failing plugin is skipped (and logged by the host): the user is asked as usual.
            let _skipped = self.host.trigger::<hook::PermissionAsk>(&input, &mut output).await;
            match output.status {
                PermissionStatus::Ask => PermissionAction::Ask,
                PermissionStatus::Allow => PermissionAction::Allow,
                PermissionStatus::Deny => PermissionAction::Deny,
            }
        })
    }
}

/// The plugins' `shell.env`, as the `bash` tool's environment overlay: asked per call with the
/// resolved working directory, the session and the call id.
#[derive(Debug, Clone)]
pub struct PluginShellEnv {
    host: PluginHost,
}

impl PluginShellEnv {
    pub fn new(host: PluginHost) -> Self {
        Self { host }
    }
}

impl EnvOverlay for PluginShellEnv {
    fn env<'a>(&'a self, ctx: &'a ToolContext, cwd: &'a Path) -> BoxFuture<'a, Vec<(String, String)>> {
        if !self.host.implements(HookName::ShellEnv) {
            return Box::pin(async { Vec::new() });
        }
        Box::pin(async move {
            let input = ShellEnvInput {
                cwd: cwd.to_path_buf(),
                session_id: Some(ctx.session_id.clone()),
                call_id: Some(ctx.call_id.clone()),
            };
            self.host.shell_env(&input).await.into_iter().collect()
        })
    }
}

impl PluginHost {
    /// `shell.env`: the environment overlay of a shell or PTY started in `input.cwd` (empty when no
    /// plugin implements the hook). Any shell the runtime starts should apply it.
    pub async fn shell_env(&self, input: &ShellEnvInput) -> BTreeMap<String, String> {
        if !self.implements(HookName::ShellEnv) {
            return BTreeMap::new();
        }
        let mut output = ShellEnvOutput::default();
        let _skipped = self.trigger::<hook::ShellEnv>(input, &mut output).await;
        output.env
    }

    /// `config`: every ready plugin sees (and may amend) `config`, in dispatch order. The host
    /// calls it once at start-up with the configuration given to
    /// [`crate::PluginHostBuilder::config`]; embedders that load configuration later call it
    /// themselves.
    pub async fn apply_config(&self, config: &mut Config) -> Vec<HookFailure> {
        self.trigger::<hook::Config>(&(), config).await
    }
}
