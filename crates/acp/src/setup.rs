//! The session runtime the agent embeds: the same assembly as the HTTP server's (the session store,
//! each directory's own configuration, the standard tools plus `todowrite`/`todoread` kept in the
//! store, durable permission requests, the plugins), built in-process.

use std::path::Path;
use std::sync::Arc;

use opencode_catalog::LazyCatalog;
use opencode_config::{Env, LoadOptions};
use opencode_llm::LlmClient;
use opencode_session_runtime::{
    Plugins, RuntimeError, SessionRuntime, StandardLocations, StorePending, StoreTodos, ToolHost,
};
use opencode_session_store::Store;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::tools::todo::{TodoRead, TodoWrite};
use opencode_tool_registry::typed;

/// A runtime and the permission service its tools ask through.
#[derive(Clone)]
pub struct Engine {
    pub runtime: SessionRuntime,
    pub permissions: Arc<Permissions>,
    pub plugins: Plugins,
    /// Problems met while loading configuration, one line each.
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("runtime", &self.runtime).finish_non_exhaustive()
    }
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("cannot create the data directory {path}: {reason}")]
    DataDir { path: String, reason: String },
    #[error("cannot open the session database: {0}")]
    Store(String),
}

impl SetupError {
    pub fn hint(&self) -> &'static str {
        match self {
            Self::DataDir { .. } => "check that the data directory (XDG_DATA_HOME) is writable",
            Self::Store(_) => "check the session database, or move it aside to start afresh",
        }
    }
}

/// Builds the runtime from `env` and the configuration of `directory` (blocking: opens the database
/// and reads configuration). The catalog is decoded by the first turn that needs it, and the plugins
/// are started by [`Engine::start_plugins`], so that `initialize` is answered at once.
pub fn engine(env: &Env, directory: &Path) -> Result<Engine, SetupError> {
    let paths = env.paths();
    std::fs::create_dir_all(&paths.data)
        .map_err(|err| SetupError::DataDir { path: paths.data.display().to_string(), reason: err.to_string() })?;
    let store = Arc::new(Store::open(paths.database()).map_err(|err| SetupError::Store(err.to_string()))?);
    let mut load = LoadOptions::new(env.clone(), directory);
    load.paths = paths.clone();
    let loaded = opencode_config::load(&load);
    let warnings = loaded.errors.iter().map(|err| format!("{err} (skipped; {})", err.hint())).collect();
    let config = Arc::new(loaded.config);
    let models = LazyCatalog::from_sources(paths.clone(), env.clone());
    let catalog_config = Arc::clone(&config);
    let catalog = LazyCatalog::new(move || models.get()?.as_ref().clone().with_config(&catalog_config));
    let permissions = Arc::new(Permissions::new(Arc::new(StorePending::new(Arc::clone(&store)))));
    let plugins = Plugins::discover(env, &config, directory, false);
    let todos = Arc::new(StoreTodos::new(Arc::clone(&store)));
    let (tool_paths, tool_plugins, tool_permissions) = (paths.clone(), plugins.clone(), Arc::clone(&permissions));
    let locations = StandardLocations::new(&config, paths.clone(), env.clone()).per_directory();
    let locations = locations.with_configured_tools(move |directory, config| {
        // `always` approvals last for this process, per directory: a directory is what an editor
        // opens, and what was approved in one project never applies in another.
        let scoped = tool_permissions.scoped(&directory.display().to_string());
        let (tools, warnings) = tool_plugins.standard_tools(directory, config, &tool_paths, scoped)?;
        for tool in [typed(TodoWrite(todos.clone())), typed(TodoRead(todos.clone()))] {
            tools.registry().register(tool).map_err(|err| RuntimeError::Tools(err.to_string()))?;
        }
        for warning in warnings {
            tracing::warn!("{warning}");
        }
        Ok(Arc::new(tools) as Arc<dyn ToolHost>)
    });
    let builder = SessionRuntime::builder(store, LlmClient::new(), catalog, config, paths).env(env.clone());
    let runtime = plugins.wire(builder, locations).build();
    Ok(Engine { runtime, permissions, plugins, warnings })
}

impl Engine {
    /// Starts the plugins in the background; prompts wait for them. Problems are warnings on stderr
    /// (stdout carries protocol frames only).
    pub fn start_plugins(&self) {
        let plugins = self.plugins.clone();
        tokio::spawn(async move {
            match plugins.start().await {
                Ok(warnings) => warnings.iter().for_each(|warning| eprintln!("warning: {warning}")),
                Err(err) => eprintln!("error: {err} ({}); prompts will fail until the agent restarts", err.hint()),
            }
        });
    }
}
