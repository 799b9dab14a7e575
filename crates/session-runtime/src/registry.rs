//! The adapter from the runner's [`ToolHost`] seam to `opencode-tool-registry`: definitions per
//! agent, and execution through the registry (bounding, managed output files, Location authority,
//! permissions asked under the issuing turn's agent, doom-loop detection). The agent is the runtime's
//! own [`Agent`] (one model): its permission ruleset is what the registry enforces.

use std::path::Path;
use std::sync::Arc;
use std::sync::OnceLock;

use futures_util::future::BoxFuture;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::ToolDefinition;
use opencode_mcp::McpAuthStore;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginPermissions;
use opencode_plugin_host::PluginShellEnv;
use opencode_system_context::Contribution;
use opencode_system_context::SystemContextRegistry;
use opencode_tool_registry::Agent;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::Lsp;
use opencode_tool_registry::OutputStore;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolOutput;
use opencode_tool_registry::ToolRegistry;
use opencode_tool_registry::tools::EnvOverlay;
use opencode_tool_registry::tools::NoEnv;
use opencode_tool_registry::tools::task::SubagentRunner;
use opencode_tool_registry::tools::task::Task;
use opencode_tool_registry::typed;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::tools::ToolHost;
use crate::tools::ToolInvocation;
use crate::tools::ToolResult;
use crate::tools::ToolRunContext;
use crate::tools::ToolStatus;

/// A Location's tool registry as the runner's tool host.
#[derive(Debug, Clone)]
pub struct RegistryTools {
    registry: Arc<ToolRegistry>,
    permissions: Arc<Permissions>,
    /// The agents of the Location's own configuration, when it has one: a directory's permission
    /// rules apply to its tools even when the runtime's agents come from another directory's config.
    agents: Option<Arc<Agents>>,
    /// The Location's MCP servers (absent only for hosts built with [`RegistryTools::new`]); their
    /// tools join the registry as each server becomes ready, and the servers stop when the last
    /// clone is dropped.
    mcp: Option<McpManager>,
    /// The agents the attached `task` tool delegates to: its description is listed per caller.
    task_agents: Arc<OnceLock<Agents>>,
}

impl RegistryTools {
    pub fn new(registry: Arc<ToolRegistry>, permissions: Arc<Permissions>) -> Self {
        Self { registry, permissions, agents: None, mcp: None, task_agents: Arc::default() }
    }

    /// The standard tools of `directory` (`read`, `write`, `edit`, `apply_patch`, `glob`, `grep`,
    /// `list`, `bash`, `webfetch`, and plan mode's `plan_enter`/`plan_exit`), checked against the
    /// permissions of the calling turn's agent. `websearch` is absent (no search backend is
    /// configured; the registry says so when it is called). `lsp` is offered when config `lsp` names
    /// servers; the config's `mcp` servers connect in the background and their `<server>_<tool>`
    /// tools join as each becomes ready. `task` joins when the runtime opens the Location
    /// ([`ToolHost::attach_subagents`]). `permissions` holds pending requests; share one across
    /// Locations so a client can answer them (asks raised inside subagent sessions included).
    pub fn standard(directory: &Path, config: &Config, paths: &Paths, permissions: Arc<Permissions>) -> Result<Self> {
        Self::build(directory, config, paths, permissions, Arc::new(NoEnv))
    }

    /// [`RegistryTools::standard`] with the plugins behind the tool seams: `bash` runs with their
    /// `shell.env` overlay, and `permissions` asks their `permission.ask` before asking the user
    /// (installed on the shared service, so it holds for every Location using it). Plugin tools
    /// join through [`PluginHost::attach_tools`]. With no plugin implementing either hook, each
    /// costs one atomic load.
    pub fn standard_with_plugins(
        directory: &Path,
        config: &Config,
        paths: &Paths,
        permissions: Arc<Permissions>,
        plugins: &PluginHost,
    ) -> Result<Self> {
        permissions.set_hook(PluginPermissions::hook(plugins.clone()));
        Self::build(directory, config, paths, permissions, Arc::new(PluginShellEnv::new(plugins.clone())))
    }

    fn build(
        directory: &Path,
        config: &Config,
        paths: &Paths,
        permissions: Arc<Permissions>,
        env: Arc<dyn EnvOverlay>,
    ) -> Result<Self> {
        let tool_output = paths.tool_output_dir();
        let location = opencode_tool_registry::Location::new(directory, &tool_output)
            .map_err(|err| RuntimeError::Tools(format!("cannot open {}: {err}", directory.display())))?;
        let output = OutputStore::new(&tool_output, config.tool_output.unwrap_or_default());
        let registry = ToolRegistry::new(location, output).map_err(|err| RuntimeError::Tools(err.to_string()))?;
        opencode_tool_registry::tools::register_filesystem_and_shell(&registry, env)
            .map_err(|err| RuntimeError::Tools(err.to_string()))?;
        opencode_tool_registry::tools::register_web(&registry, None)
            .map_err(|err| RuntimeError::Tools(err.to_string()))?;
        opencode_tool_registry::tools::register_plan_mode(
            &registry,
            opencode_tool_registry::tools::plan::PlanFiles::new(paths.plans_dir()),
        )
        .map_err(|err| RuntimeError::Tools(err.to_string()))?;
        let lsp = Lsp::from_config(directory, config.lsp.as_ref())
            .map_err(|err| RuntimeError::Tools(format!("{err} ({})", err.hint())))?;
        opencode_tool_registry::tools::lsp::register(&registry, Arc::new(lsp))
            .map_err(|err| RuntimeError::Tools(err.to_string()))?;
        let registry = Arc::new(registry);
        // MCP servers connect in the background: never on the path of the first turn. A Location
        // without any still gets a manager (no task, no process) so servers can be added at run
        // time; their OAuth tokens live in the data directory these paths name.
        let options = McpOptions::new(directory).with_auth_store(Some(McpAuthStore::new(&paths.data)));
        let mcp = McpManager::start(&config.mcp, options);
        mcp.attach(&registry);
        let mcp = Some(mcp);
        let agents = Some(Arc::new(Agents::from_config(&AgentDirs::standard(paths), config)));
        Ok(Self { agents, mcp, ..Self::new(registry, permissions) })
    }

    /// The Location's own version of the turn's agent (its permission rules), if it has one. A
    /// `task` denial the runtime put on the turn's agent (the subagent depth bound) carries over.
    fn local(&self, agent: &Agent) -> Option<Arc<Agent>> {
        let local = self.agents.as_ref().and_then(|agents| agents.get(&agent.name))?;
        if agent.permission.hides_tool("task") && !local.permission.hides_tool("task") {
            return Some(Arc::new(crate::subagent::deny_task(&local)));
        }
        Some(local)
    }

    /// The registry, for registering further tools (those that need services, e.g. `todowrite`).
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }
}

impl ToolHost for RegistryTools {
    fn definitions(&self, agent: &Agent) -> Vec<ToolDefinition> {
        let local = self.local(agent);
        let agent = local.as_deref().unwrap_or(agent);
        let mut definitions = self.registry.definitions(agent);
        if let Some(agents) = self.task_agents.get()
            && let Some(task) = definitions.iter_mut().find(|definition| definition.name == "task")
        {
            // Only the subagents this caller may delegate to (OpenCode filters per agent too).
            task.description = opencode_tool_registry::tools::task::description_for(agents, agent);
        }
        definitions
    }

    fn names(&self) -> Vec<String> {
        self.registry.names()
    }

    fn execute<'a>(&'a self, call: &'a ToolInvocation, ctx: &'a ToolRunContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let context = ToolContext {
                session_id: ctx.session_id.clone(),
                message_id: ctx.message_id.clone(),
                call_id: ctx.call_id.clone(),
                agent: self.local(&ctx.agent).unwrap_or_else(|| Arc::clone(&ctx.agent)),
                location: Arc::clone(self.registry.location()),
                cancel: ctx.cancel.clone(),
                permissions: Arc::clone(&self.permissions),
                progress: Arc::clone(&ctx.progress),
                output: self.registry.output().clone(),
                editor: self.registry.editor(),
            };
            let call = ToolCall { call_id: call.call_id.clone(), name: call.name.clone(), input: call.input.clone() };
            match self.registry.execute(&call, &context).await {
                Ok(settlement) => tool_result(settlement),
                Err(err) => ToolResult::error(err.to_string()),
            }
        })
    }

    fn bound_output<'a>(&'a self, call: &'a ToolInvocation, result: ToolResult) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match result.status {
                // The registry's settlement of a successful output: bounded, the rest spilled to a
                // managed tool-output file.
                ToolStatus::Completed => {
                    let call =
                        ToolCall { call_id: call.call_id.clone(), name: call.name.clone(), input: call.input.clone() };
                    let ToolResult { title, output, metadata, managed_path, .. } = result;
                    let output = ToolOutput { title, text: output, metadata, managed_path, ..ToolOutput::default() };
                    tool_result(self.registry.settle(&call, output).await)
                }
                // As the registry bounds a failure's text.
                ToolStatus::Error | ToolStatus::Declined => {
                    let bounded = self.registry.output().bound(&result.output);
                    ToolResult { output: bounded.text, managed_path: bounded.managed_path, ..result }
                }
                ToolStatus::Interrupted => result,
            }
        })
    }

    fn attach_subagents(&self, runner: Arc<dyn SubagentRunner>, agents: &Agents) {
        if self.registry.get("task").is_some() {
            return; // A host shared by several Locations is attached once.
        }
        let agents = self.agents.as_deref().unwrap_or(agents).clone();
        let _already = self.task_agents.set(agents.clone());
        if let Err(err) = self.registry.register(typed(Task::new(runner, agents))) {
            tracing::warn!("the task tool is not available: {err}");
        }
    }

    fn mcp(&self) -> Option<McpManager> {
        self.mcp.clone()
    }

    fn register_context(&self, context: &SystemContextRegistry) -> Result<Vec<Contribution>> {
        match &self.mcp {
            Some(mcp) => Ok(vec![mcp.register_context(context)?]),
            None => Ok(Vec::new()),
        }
    }
}

/// The runner's view of a registry settlement.
fn tool_result(settlement: Settlement) -> ToolResult {
    ToolResult {
        status: match settlement.status {
            SettlementStatus::Completed => ToolStatus::Completed,
            SettlementStatus::Error => ToolStatus::Error,
            SettlementStatus::Declined => ToolStatus::Declined,
            SettlementStatus::Interrupted => ToolStatus::Interrupted,
        },
        title: settlement.title,
        output: settlement.text,
        metadata: settlement.metadata,
        managed_path: settlement.managed_path,
    }
}
