//! What every command starts from: the environment, directories, configuration and catalog; and, for
//! the commands that need them, the session store and the session runtime.

use std::path::PathBuf;
use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_catalog::source::{self, CatalogOrigin};
use opencode_config::{AuthStore, Env, LoadOptions, LoadedConfig, Paths, find_worktree};
use opencode_plugin_host::auth::builtin_plugins;
use opencode_plugin_host::loader::discover;
use opencode_plugin_host::{PluginHost, PluginState, Requirement, StartContext};
use opencode_session_runtime::{
    PluginHooks, RegistryTools, RuntimeError, RuntimeOptions, SessionRuntime, StandardLocations,
};
use opencode_session_store::Store;
use opencode_tool_registry::Permissions;

use crate::error::CliError;

pub struct Context {
    pub env: Env,
    pub paths: Paths,
    pub loaded: LoadedConfig,
    /// The working directory: sessions created here belong to it.
    pub cwd: PathBuf,
}

/// A session runtime with the standard tools, and the permission service that answers their requests.
pub struct Engine {
    pub runtime: SessionRuntime,
    pub permissions: Arc<Permissions>,
}

impl Context {
    /// Reads the process environment and loads the configuration; problems in config files are
    /// reported on stderr and the rest is used.
    pub fn load() -> Result<Self, CliError> {
        let env = Env::from_process();
        let cwd =
            std::env::current_dir().map_err(|err| CliError::Io(format!("cannot read the working directory: {err}")))?;
        let options = LoadOptions::new(env.clone(), cwd.clone());
        let loaded = opencode_config::load(&options);
        for error in &loaded.errors {
            eprintln!("warning: {error} (skipped; {})", error.hint());
        }
        Ok(Self { env, paths: options.paths, loaded, cwd })
    }

    pub fn auth(&self) -> AuthStore {
        AuthStore::new(self.paths.auth_file(), &self.env)
    }

    /// The catalog (never from the network) with config applied.
    pub fn catalog(&self) -> Result<(Catalog, CatalogOrigin), CliError> {
        let (catalog, origin, problems) = source::load(&self.paths, &self.env)?;
        for problem in problems {
            eprintln!("warning: {problem}");
        }
        let catalog = catalog.with_config(&self.loaded.config)?;
        Ok((catalog, origin))
    }

    /// The session database (created on first use).
    pub fn store(&self) -> Result<Arc<Store>, CliError> {
        let data = &self.paths.data;
        std::fs::create_dir_all(data)
            .map_err(|err| CliError::Io(format!("cannot create {}: {err}", data.display())))?;
        Ok(Arc::new(Store::open(self.paths.database())?))
    }

    /// The session runtime over the store, with the standard tools in every Location. Must be called
    /// inside a tokio runtime.
    pub async fn engine(&self, store: Arc<Store>, pure: bool) -> Result<Engine, CliError> {
        let (catalog, _) = self.catalog()?;
        let config = self.loaded.config.clone();
        let llm = opencode_llm::LlmClient::new().map_err(RuntimeError::Provider)?;
        let plugins = self.plugins(pure).await?;
        let permissions = Arc::new(Permissions::in_memory());
        let (tool_config, tool_paths, tool_permissions, tool_plugins) =
            (config.clone(), self.paths.clone(), Arc::clone(&permissions), Arc::clone(&plugins));
        let locations = StandardLocations::new(&config, self.paths.clone(), self.env.clone())
            .with_tools(move |dir| {
                let tools = RegistryTools::standard(dir, &tool_config, &tool_paths, Arc::clone(&tool_permissions))?;
                for failure in tool_plugins.attach_tools(tools.registry()) {
                    eprintln!("warning: plugin {}: tool not registered: {}", failure.plugin, failure.error);
                }
                Ok(Arc::new(tools))
            })
            .with_plugins(Arc::clone(&plugins));
        let runtime = SessionRuntime::builder(store, llm, Arc::new(catalog), Arc::new(config), self.paths.clone())
            .env(self.env.clone())
            .locations(locations)
            .hooks(Arc::new(PluginHooks::new(plugins)))
            // `run` exits as soon as the session is idle, which would cut a background title request
            // short: sessions made here keep their default title (or `--title`).
            .options(RuntimeOptions { titles: false, ..RuntimeOptions::default() })
            .build();
        Ok(Engine { runtime, permissions })
    }

    /// The built-in plugins plus the external ones from config `plugin[]` and `.opencode/plugin/`
    /// (none with `pure`), started and awaited; plugins that did not start are reported on stderr.
    async fn plugins(&self, pure: bool) -> Result<Arc<PluginHost>, CliError> {
        let builder = builtin_plugins(&self.env)
            .into_iter()
            .fold(PluginHost::builder(), |builder, plugin| builder.plugin(plugin, Requirement::Optional));
        let project = self.cwd.join(".opencode");
        let dirs = [project.join("plugin"), project.join("plugins")];
        let host = discover(&self.loaded.config.plugin, &self.cwd, &dirs, pure)
            .register(builder)
            .start_context(StartContext { directory: self.cwd.clone(), worktree: find_worktree(&self.cwd) })
            .build();
        let report = host
            .ready()
            .await
            .map_err(|err| CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() })?;
        for problem in report.problems() {
            if let PluginState::Failed(reason) | PluginState::NotLoaded(reason) = &problem.state {
                eprintln!("warning: plugin {}: {reason}", problem.name);
            }
        }
        Ok(Arc::new(host))
    }
}
