//! Location-scoped services: the System Context Registry, the tools, and (when it differs from the
//! runtime's) the configuration of one directory, with its agents and model catalog. A session's drain
//! runs against the Location of the session's directory; the runtime opens each Location on first
//! use and keeps it until it is reloaded ([`crate::SessionRuntime::reload_location`]).

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_config::Env;
use opencode_config::LoadOptions;
use opencode_config::Paths;
use opencode_plugin_host::PluginHost;
use opencode_system_context::Contribution;
use opencode_system_context::SystemContextRegistry;
use opencode_system_context::builtin;
use opencode_system_context::builtin::DateSource;
use opencode_system_context::builtin::Environment;
use opencode_system_context::builtin::InstructionSettings;
use opencode_system_context::builtin::Instructions;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;

use crate::error::Result;
use crate::tools::NoTools;
use crate::tools::ToolHost;

/// The services of one Location.
pub struct Location {
    pub directory: PathBuf,
    pub context: SystemContextRegistry,
    pub tools: Arc<dyn ToolHost>,
    /// Keeps the registered contributions alive for as long as the Location lives.
    pub contributions: Vec<Contribution>,
    /// The directory's own configuration when it is not the runtime's (`None`: the runtime's applies).
    pub own: Option<Arc<LocationConfig>>,
}

/// A directory's own configuration: its `model`, agents (with their models, prompts and permission
/// rules) and providers, which the runner uses for the sessions of that directory.
#[derive(Debug, Clone)]
pub struct LocationConfig {
    pub config: Arc<Config>,
    pub agents: Arc<Agents>,
    /// The model catalog with this configuration's providers and options applied.
    pub catalog: Arc<Catalog>,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Location").field("directory", &self.directory).field("context", &self.context).finish()
    }
}

/// Opens the Location of a directory.
pub trait LocationFactory: Send + Sync {
    fn open(&self, directory: &Path) -> Result<Location>;
}

type ToolsFor = Arc<dyn Fn(&Path, &Config) -> Result<Arc<dyn ToolHost>> + Send + Sync>;

/// The standard Location: the built-in Context Sources (environment, host-local date, ambient
/// instructions from `AGENTS.md`/`CLAUDE.md` and config `instructions`) and the tools `tools` builds
/// for the directory (none by default). With [`StandardLocations::per_directory`], each directory's
/// own configuration applies to it.
#[derive(Clone)]
pub struct StandardLocations {
    paths: Paths,
    env: Env,
    /// The runtime's configuration (the start directory's).
    config: Arc<Config>,
    /// Load each directory's own configuration.
    per_directory: bool,
    date: DateSource,
    tools: ToolsFor,
    plugins: Option<Arc<PluginHost>>,
}

impl std::fmt::Debug for StandardLocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandardLocations").field("paths", &self.paths).finish_non_exhaustive()
    }
}

impl StandardLocations {
    pub fn new(config: &Config, paths: Paths, env: Env) -> Self {
        Self {
            paths,
            env,
            config: Arc::new(config.clone()),
            per_directory: false,
            date: DateSource::host_local(),
            tools: Arc::new(|_, _| Ok(Arc::new(NoTools))),
            plugins: None,
        }
    }

    /// Loads each directory's configuration (global, then the project's files and `.opencode/`) when
    /// its Location opens; where it differs from the runtime's, the directory's `model`, agents,
    /// providers and instructions apply to its sessions, and its tools are built with it.
    /// Unreadable files are skipped with a warning in the log.
    pub fn per_directory(mut self) -> Self {
        self.per_directory = true;
        self
    }

    /// Replaces the date source (tests pin the date).
    pub fn with_date(mut self, date: DateSource) -> Self {
        self.date = date;
        self
    }

    /// Builds each Location's tools with `tools` (for example [`crate::RegistryTools::standard`]).
    pub fn with_tools(mut self, tools: impl Fn(&Path) -> Result<Arc<dyn ToolHost>> + Send + Sync + 'static) -> Self {
        self.tools = Arc::new(move |directory, _| tools(directory));
        self
    }

    /// Builds each Location's tools with `tools`, given the configuration that applies in the
    /// directory (its own with [`StandardLocations::per_directory`], else the runtime's).
    pub fn with_configured_tools(
        mut self,
        tools: impl Fn(&Path, &Config) -> Result<Arc<dyn ToolHost>> + Send + Sync + 'static,
    ) -> Self {
        self.tools = Arc::new(tools);
        self
    }

    /// Registers the ready plugins' Context Sources in every Location (their tools join through the
    /// `tools` builder: [`PluginHost::attach_tools`]).
    pub fn with_plugins(mut self, plugins: Arc<PluginHost>) -> Self {
        self.plugins = Some(plugins);
        self
    }
}

impl LocationFactory for StandardLocations {
    fn open(&self, directory: &Path) -> Result<Location> {
        let worktree = opencode_config::find_worktree(directory);
        let root = worktree.clone().unwrap_or_else(|| directory.to_path_buf());
        let environment = Environment::new(directory, &root, worktree.is_some());
        let own = if self.per_directory { self.own_config(directory)? } else { None };
        let config = own.as_ref().map_or(&self.config, |own| &own.config);
        let instructions = Instructions::new(InstructionSettings {
            global_config_dir: self.paths.config.clone(),
            home_dir: self.env.get("HOME").map(PathBuf::from),
            directory: directory.to_path_buf(),
            project_root: root,
            instructions: config.instructions.clone(),
            disable_project_config: self.env.flag("OPENCODE_DISABLE_PROJECT_CONFIG"),
            disable_claude_code: self.env.flag("OPENCODE_DISABLE_CLAUDE_CODE")
                || self.env.flag("OPENCODE_DISABLE_CLAUDE_CODE_PROMPT"),
        });
        let context = SystemContextRegistry::new();
        let mut contributions = builtin::register_builtins(&context, environment, self.date.clone(), instructions)?;
        let tools = (self.tools)(directory, config)?;
        contributions.extend(tools.register_context(&context)?);
        for failure in self.plugins.iter().flat_map(|plugins| plugins.attach_context(&context)) {
            tracing::warn!(plugin = %failure.plugin, "plugin context source not registered: {}", failure.error);
        }
        Ok(Location { directory: directory.to_path_buf(), context, tools, contributions, own })
    }
}

impl StandardLocations {
    /// The directory's configuration, with its agents and catalog, when it differs from the
    /// runtime's (the start directory and folders without configuration of their own share it).
    fn own_config(&self, directory: &Path) -> Result<Option<Arc<LocationConfig>>> {
        let mut load = LoadOptions::new(self.env.clone(), directory);
        load.paths = self.paths.clone();
        let loaded = opencode_config::load(&load);
        for err in &loaded.errors {
            tracing::warn!(directory = %directory.display(), "{err} (skipped; {})", err.hint());
        }
        if loaded.config == *self.config {
            return Ok(None);
        }
        // Read on demand: only directories with configuration of their own pay for a catalog.
        let (catalog, _origin, problems) = opencode_catalog::source::load(&self.paths, &self.env)?;
        for problem in problems {
            tracing::warn!(directory = %directory.display(), %problem, "model catalog source skipped");
        }
        let catalog = catalog.with_config(&loaded.config)?;
        let agents = Agents::from_config(&AgentDirs::standard(&self.paths), &loaded.config);
        Ok(Some(Arc::new(LocationConfig {
            config: Arc::new(loaded.config),
            agents: Arc::new(agents),
            catalog: Arc::new(catalog),
        })))
    }
}
