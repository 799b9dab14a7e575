//! Plugin start-up, the same for every front end (`opencode run`, `opencode serve`, the server
//! binary): the built-in plugins (provider sign-ins) and the external ones that config `plugin[]` and
//! `.opencode/plugin(s)/` name, one [`PluginHost`] per process, wired into the runtime as its hooks
//! and into every Location (Context Sources through [`StandardLocations::with_plugins`], tools through
//! [`Plugins::attach_tools`] in the Location's tool builder).
//!
//! Building the host starts nothing: [`Plugins::start`] starts every plugin (once) and waits. A
//! front end that must answer at once (the server) calls it in the background and awaits
//! [`Plugins::ready`] before a prompt; a failed optional plugin is a warning line, a failed required
//! one the error every prompt gets.

use std::path::Path;
use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_plugin_host::CommandInput;
use opencode_plugin_host::CommandOutcome;
use opencode_plugin_host::PluginCommand;
use opencode_plugin_host::PluginError;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginState;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::StartContext;
use opencode_plugin_host::auth::builtin_plugins;
use opencode_plugin_host::loader::discover;
use opencode_session_store::MessageWithParts;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::ToolRegistry;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::hooks::PluginHooks;
use crate::location::StandardLocations;
use crate::registry::RegistryTools;
use crate::runtime::RuntimeBuilder;
use crate::runtime::SessionRuntime;

/// What a plugin command gave.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandRun {
    /// Answered without a model call: the answer's message, already in the session.
    Answered(Box<MessageWithParts>),
    /// A prompt for the model.
    Prompt(String),
}

/// The plugins of one process (cheap to clone).
#[derive(Debug, Clone)]
pub struct Plugins {
    host: Arc<PluginHost>,
}

impl Plugins {
    /// The built-in plugins (optional; Magic Context when configured) plus the external ones from `config.plugin` (paths relative to
    /// `directory`) and `directory/.opencode/plugin(s)/`; with `pure`, no external plugin runs (they
    /// are reported as skipped). Reads directories; starts nothing.
    pub fn discover(env: &Env, config: &Config, directory: &Path, pure: bool) -> Self {
        let builder = builtin_plugins(env)
            .into_iter()
            .fold(PluginHost::builder(), |builder, plugin| builder.plugin(plugin, Requirement::Optional));
        let project = directory.join(".opencode");
        let dirs = [project.join("plugin"), project.join("plugins")];
        let start =
            StartContext { directory: directory.to_path_buf(), worktree: opencode_config::find_worktree(directory) };
        // Magic Context is built in and off unless the `magic_context` section turns it on.
        let builder = opencode_magic_context::register(builder, config, &env.paths().data);
        let host = discover(&config.plugin, directory, &dirs, pure)
            .register(builder)
            .start_context(start)
            .config(Arc::new(config.clone()))
            .build();
        Self { host: Arc::new(host) }
    }

    /// Plugins over an existing host (tests, embedders with plugins of their own).
    pub fn from_host(host: Arc<PluginHost>) -> Self {
        Self { host }
    }

    pub fn host(&self) -> &Arc<PluginHost> {
        &self.host
    }

    /// Starts every plugin (once; later calls wait for the same start) and reports the ones that did
    /// not start or were not loaded, one warning line each. Fails when a required plugin failed.
    pub async fn start(&self) -> Result<Vec<String>, PluginError> {
        let report = self.host.ready().await?;
        let warnings = report
            .problems()
            .filter_map(|problem| match &problem.state {
                PluginState::Failed(reason) | PluginState::NotLoaded(reason) => {
                    Some(format!("plugin {}: {reason}", problem.name))
                }
                PluginState::Ready => None,
            })
            .collect();
        Ok(warnings)
    }

    /// Waits until the plugins have started (starting them if nobody did); the error of a failed
    /// required plugin. What a prompt awaits before it runs.
    pub async fn ready(&self) -> Result<(), PluginError> {
        self.host.ready().await.map(drop)
    }

    /// A Location's standard tools with the plugins behind the tool seams (`permission.ask` before
    /// the user is asked, `shell.env` for `bash`) and the plugins' own tools attached; one warning
    /// line per plugin tool that could not be registered.
    pub fn standard_tools(
        &self,
        directory: &Path,
        config: &Config,
        paths: &Paths,
        permissions: Arc<Permissions>,
    ) -> Result<(RegistryTools, Vec<String>)> {
        let tools = RegistryTools::standard_with_plugins(directory, config, paths, permissions, &self.host)?;
        let warnings = self.attach_tools(tools.registry());
        Ok((tools, warnings))
    }

    /// Adds the plugins' tools to a Location's registry (now, and those of plugins that become ready
    /// later); one line per tool that could not be registered.
    pub fn attach_tools(&self, registry: &Arc<ToolRegistry>) -> Vec<String> {
        let failures = self.host.attach_tools(registry);
        failures
            .iter()
            .map(|failure| format!("plugin {}: tool not registered: {}", failure.plugin, failure.error))
            .collect()
    }

    /// The slash commands the ready plugins contribute.
    pub fn commands(&self) -> Vec<PluginCommand> {
        self.host.commands()
    }

    /// Runs the plugin command `name` in `session_id` on `runtime`; `None` when no ready plugin
    /// offers it. An answer given without a model call is recorded in the session (the command as
    /// the user's message, the answer as the assistant's); a prompt is the caller's to send, as it
    /// sends a command template's expansion.
    pub async fn run_command(
        &self,
        runtime: &SessionRuntime,
        name: &str,
        session_id: &str,
        arguments: &str,
    ) -> Option<Result<CommandRun>> {
        let input = CommandInput { session_id: session_id.to_owned(), arguments: arguments.to_owned() };
        let outcome = self.host.run_command(name, &input).await?;
        Some(match outcome {
            Err(err) => Err(RuntimeError::Plugin(format!("/{name} failed: {err}"))),
            Ok(CommandOutcome::Prompt(text)) => Ok(CommandRun::Prompt(text)),
            Ok(CommandOutcome::Reply(answer)) => {
                let asked = format!("/{name} {arguments}").trim_end().to_owned();
                let message = runtime.reply(session_id, asked, answer).await;
                message.map(|message| CommandRun::Answered(Box::new(message)))
            }
        })
    }

    /// The runtime with the plugins as its hooks, and `locations` registering their Context Sources.
    pub fn wire(&self, builder: RuntimeBuilder, locations: StandardLocations) -> RuntimeBuilder {
        builder
            .locations(locations.with_plugins(Arc::clone(&self.host)))
            .hooks(Arc::new(PluginHooks::new(Arc::clone(&self.host))))
    }
}
