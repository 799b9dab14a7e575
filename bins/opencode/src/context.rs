//! What every command starts from: the environment, directories, configuration and catalog.

use opencode_catalog::Catalog;
use opencode_catalog::source::{self, CatalogOrigin};
use opencode_config::{AuthStore, Env, LoadOptions, LoadedConfig, Paths};

use crate::error::CliError;

pub struct Context {
    pub env: Env,
    pub paths: Paths,
    pub loaded: LoadedConfig,
}

impl Context {
    /// Reads the process environment and loads the configuration; problems in config files are
    /// reported on stderr and the rest is used.
    pub fn load() -> Result<Self, CliError> {
        let env = Env::from_process();
        let cwd =
            std::env::current_dir().map_err(|err| CliError::Io(format!("cannot read the working directory: {err}")))?;
        let options = LoadOptions::new(env.clone(), cwd);
        let loaded = opencode_config::load(&options);
        for error in &loaded.errors {
            eprintln!("warning: {error} (skipped; {})", error.hint());
        }
        Ok(Self { env, paths: options.paths, loaded })
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
}
