//! Location-scoped services: the System Context Registry and the tools of one directory. A session's
//! drain runs against the Location of the session's directory; the runtime opens each Location once
//! and keeps it.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_plugin_host::PluginHost;
use opencode_system_context::Contribution;
use opencode_system_context::SystemContextRegistry;
use opencode_system_context::builtin;
use opencode_system_context::builtin::DateSource;
use opencode_system_context::builtin::Environment;
use opencode_system_context::builtin::InstructionSettings;
use opencode_system_context::builtin::Instructions;

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

type ToolsFor = Arc<dyn Fn(&Path) -> Result<Arc<dyn ToolHost>> + Send + Sync>;

/// The standard Location: the built-in Context Sources (environment, host-local date, ambient
/// instructions from `AGENTS.md`/`CLAUDE.md` and config `instructions`) and the tools `tools` builds
/// for the directory (none by default).
#[derive(Clone)]
pub struct StandardLocations {
    paths: Paths,
    env: Env,
    instructions: Vec<String>,
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
            instructions: config.instructions.clone(),
            date: DateSource::host_local(),
            tools: Arc::new(|_| Ok(Arc::new(NoTools))),
            plugins: None,
        }
    }

    /// Replaces the date source (tests pin the date).
    pub fn with_date(mut self, date: DateSource) -> Self {
        self.date = date;
        self
    }

    /// Builds each Location's tools with `tools` (for example [`crate::RegistryTools::standard`]).
    pub fn with_tools(mut self, tools: impl Fn(&Path) -> Result<Arc<dyn ToolHost>> + Send + Sync + 'static) -> Self {
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
        let instructions = Instructions::new(InstructionSettings {
            global_config_dir: self.paths.config.clone(),
            home_dir: self.env.get("HOME").map(PathBuf::from),
            directory: directory.to_path_buf(),
            project_root: root,
            instructions: self.instructions.clone(),
            disable_project_config: self.env.flag("OPENCODE_DISABLE_PROJECT_CONFIG"),
            disable_claude_code: self.env.flag("OPENCODE_DISABLE_CLAUDE_CODE")
                || self.env.flag("OPENCODE_DISABLE_CLAUDE_CODE_PROMPT"),
        });
        let context = SystemContextRegistry::new();
        let mut contributions = builtin::register_builtins(&context, environment, self.date.clone(), instructions)?;
        let tools = (self.tools)(directory)?;
        contributions.extend(tools.register_context(&context)?);
        for failure in self.plugins.iter().flat_map(|plugins| plugins.attach_context(&context)) {
            tracing::warn!(plugin = %failure.plugin, "plugin context source not registered: {}", failure.error);
        }
        Ok(Location { directory: directory.to_path_buf(), context, tools, contributions })
    }
}
