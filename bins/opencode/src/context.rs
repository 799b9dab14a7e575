//! What every command starts from: the environment, directories, configuration and catalog; and, for
//! the commands that need them, the session store and the session runtime.

use std::path::PathBuf;
use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_catalog::source::{self, CatalogOrigin};
use opencode_config::{AuthStore, Env, LoadOptions, LoadedConfig, Paths};
use opencode_session_runtime::{Assembly, SessionRuntime};
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

    /// The session runtime over the store, assembled as the server's and the ACP agent's (standard
    /// tools, `todowrite`, `question`, durable permissions with per-project approvals, each
    /// directory's own configuration), with the plugins started (and awaited). Must be called inside
    /// a tokio runtime.
    pub async fn engine(&self, store: Arc<Store>, pure: bool) -> Result<Engine, CliError> {
        let (catalog, _) = self.catalog()?;
        let assembly = Assembly {
            env: self.env.clone(),
            paths: self.paths.clone(),
            directory: self.cwd.clone(),
            questions: true,
            // `run` exits as soon as the session is idle, which would cut a background title request
            // short: sessions made here keep their default title (or `--title`).
            titles: false,
            pure,
            editor: None,
        };
        let assembled = assembly.build(store, Arc::new(self.loaded.config.clone()), Arc::new(catalog));
        let warnings = assembled
            .plugins
            .start()
            .await
            .map_err(|err| CliError::Failed { message: err.to_string(), hint: err.hint().to_owned() })?;
        for warning in warnings {
            eprintln!("warning: {warning}");
        }
        Ok(Engine { runtime: assembled.runtime, permissions: assembled.permissions })
    }
}
