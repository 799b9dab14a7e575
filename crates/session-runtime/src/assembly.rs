//! One assembly of the runtime for every front end (`opencode run`, the server, the ACP agent), so
//! they cannot drift apart: the session store, each directory's own configuration, the standard tools
//! plus `todowrite`/`todoread` kept in the store (and `question` where someone can answer it), one
//! permission service whose requests are durable and whose `always` approvals are kept per project,
//! and the plugins (hooks, Context Sources, tools).
//!
//! ```no_run
//! # fn run() -> Result<(), opencode_session_runtime::RuntimeError> {
//! use opencode_session_runtime::Assembly;
//!
//! let env = opencode_config::Env::from_process();
//! let started = Assembly::new(env, std::path::PathBuf::from(".")).start()?;
//! // Inside a tokio runtime: start the plugins (prompts wait for them), then use the runtime.
//! # drop(started);
//! # Ok(())
//! # }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use opencode_catalog::LazyCatalog;
use opencode_config::Config;
use opencode_config::Env;
use opencode_config::LoadOptions;
use opencode_config::Paths;
use opencode_llm::LlmClient;
use opencode_session_store::Store;
use opencode_session_store::project_of;
use opencode_tool_registry::EditorFiles;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::tools::question::Question;
use opencode_tool_registry::tools::todo::TodoRead;
use opencode_tool_registry::tools::todo::TodoWrite;
use opencode_tool_registry::typed;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::location::StandardLocations;
use crate::plugins::Plugins;
use crate::runtime::RuntimeOptions;
use crate::runtime::SessionRuntime;
use crate::services::StorePending;
use crate::services::StoreTodos;
use crate::tools::ToolHost;

/// How a front end wants the runtime assembled.
#[derive(Clone)]
pub struct Assembly {
    pub env: Env,
    pub paths: Paths,
    /// The start directory: where configuration and plugins are read from, and the directory of
    /// sessions that name none.
    pub directory: PathBuf,
    /// Offer the `question` tool (a front end that can put a question to a person).
    pub questions: bool,
    /// Title new sessions with the small model in the background.
    pub titles: bool,
    /// Run no external plugin.
    pub pure: bool,
    /// The front end's open files (an editor's buffers): the file tools read and write text
    /// through it for the sessions it keeps.
    pub editor: Option<Arc<dyn EditorFiles>>,
}

impl std::fmt::Debug for Assembly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembly")
            .field("directory", &self.directory)
            .field("questions", &self.questions)
            .finish_non_exhaustive()
    }
}

/// An assembled runtime and the services a front end answers through.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub runtime: SessionRuntime,
    /// Where the tools' permission requests and questions wait for a reply.
    pub permissions: Arc<Permissions>,
    /// Not started yet: [`Plugins::start`] (awaited, or in the background; prompts wait for it).
    pub plugins: Plugins,
}

/// What [`Assembly::start`] opens besides the runtime.
#[derive(Clone)]
pub struct Started {
    pub assembled: Assembled,
    pub store: Arc<Store>,
    /// The start directory's configuration.
    pub config: Arc<Config>,
    /// The model catalog from its sources, configuration not applied (loaded on first use).
    pub models: LazyCatalog,
    /// Configuration files that could not be read, one line each (the rest was used).
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started").field("assembled", &self.assembled).finish_non_exhaustive()
    }
}

impl Assembly {
    /// Questions on, titles on, plugins as configured; paths from `env`.
    pub fn new(env: Env, directory: PathBuf) -> Self {
        Self { paths: env.paths(), env, directory, questions: true, titles: true, pure: false, editor: None }
    }

    /// Opens the store and the start directory's configuration, and assembles the runtime over them
    /// with the catalog decoded by the first turn that needs it (blocking: opens the database and
    /// reads configuration files).
    pub fn start(&self) -> Result<Started> {
        let store = self.open_store()?;
        let (config, warnings) = self.load_config();
        let config = Arc::new(config);
        let models = LazyCatalog::from_sources(self.paths.clone(), self.env.clone());
        let (base, catalog_config) = (models.clone(), Arc::clone(&config));
        let catalog = LazyCatalog::new(move || base.get()?.as_ref().clone().with_config(&catalog_config));
        let assembled = self.build(Arc::clone(&store), Arc::clone(&config), catalog);
        Ok(Started { assembled, store, config, models, warnings })
    }

    /// The session database (the data directory is created first).
    pub fn open_store(&self) -> Result<Arc<Store>> {
        let data = &self.paths.data;
        std::fs::create_dir_all(data)
            .map_err(|err| RuntimeError::DataDir(format!("cannot create {}: {err}", data.display())))?;
        Ok(Arc::new(Store::open(self.paths.database())?))
    }

    /// The start directory's configuration, and one line per file that could not be read.
    pub fn load_config(&self) -> (Config, Vec<String>) {
        let mut load = LoadOptions::new(self.env.clone(), &self.directory);
        load.paths = self.paths.clone();
        let loaded = opencode_config::load(&load);
        let warnings = loaded.errors.iter().map(|err| format!("{err} (skipped; {})", err.hint())).collect();
        (loaded.config, warnings)
    }

    /// The runtime over `store`, with `config` as the start directory's configuration and `catalog`
    /// as its model catalog (configuration applied).
    pub fn build(&self, store: Arc<Store>, config: Arc<Config>, catalog: impl Into<LazyCatalog>) -> Assembled {
        let permissions = Arc::new(Permissions::new(Arc::new(StorePending::new(Arc::clone(&store)))));
        let plugins = Plugins::discover(&self.env, &config, &self.directory, self.pure);
        let todos = Arc::new(StoreTodos::new(Arc::clone(&store)));
        let (tool_paths, tool_plugins, tool_permissions) =
            (self.paths.clone(), plugins.clone(), Arc::clone(&permissions));
        let (questions, editor) = (self.questions, self.editor.clone());
        let locations = StandardLocations::new(&config, self.paths.clone(), self.env.clone()).per_directory();
        let locations = locations.with_configured_tools(move |directory, config| {
            // `always` approvals are the project's: loaded when its first Location opens, never
            // shared with another project.
            let scoped = tool_permissions.scoped(&project_of(directory));
            let (tools, warnings) = tool_plugins.standard_tools(directory, config, &tool_paths, scoped)?;
            let mut extra = vec![typed(TodoWrite(todos.clone())), typed(TodoRead(todos.clone()))];
            if questions {
                extra.push(typed(Question));
            }
            for tool in extra {
                tools.registry().register(tool).map_err(|err| RuntimeError::Tools(err.to_string()))?;
            }
            if let Some(editor) = &editor {
                tools.registry().attach_editor(Arc::clone(editor));
            }
            for warning in warnings {
                tracing::warn!("{warning}");
            }
            Ok(Arc::new(tools) as Arc<dyn ToolHost>)
        });
        let options = RuntimeOptions { titles: self.titles, ..RuntimeOptions::default() };
        let builder = SessionRuntime::builder(store, LlmClient::new(), catalog, config, self.paths.clone())
            .env(self.env.clone())
            .options(options);
        let runtime = plugins.wire(builder, locations).build();
        Assembled { runtime, permissions, plugins }
    }
}
