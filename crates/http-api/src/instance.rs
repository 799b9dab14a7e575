//! Per-directory instance contexts. Every request names a directory (`?directory=`, the
//! `x-opencode-directory` header, or the server's default); the instance for it knows its worktree and
//! project (created in the store on first use) and loads its configuration and catalog lazily, once.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use opencode_catalog::Catalog;
use opencode_catalog::LazyCatalog;
use opencode_config::Env;
use opencode_config::LoadOptions;
use opencode_config::LoadedConfig;
use opencode_config::Paths;
use opencode_session_store::Project;
use opencode_session_store::ProjectTime;
use opencode_session_store::Store;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;

use crate::catalog_json::ProviderCache;
use crate::error::ApiError;

use opencode_session_store::GLOBAL_PROJECT;
use opencode_session_store::project_of;

/// One directory's context.
pub struct Instance {
    /// The directory requests run in (canonical when it exists).
    pub directory: PathBuf,
    /// The enclosing git worktree, or the directory itself outside git.
    pub worktree: PathBuf,
    pub project: Project,
    env: Env,
    paths: Paths,
    /// The loaded configuration, until `PATCH /config` invalidates it.
    config: Mutex<Option<Arc<LoadedConfig>>>,
    /// The catalog with the configuration it was built from.
    catalog: Mutex<Option<BuiltCatalog>>,
    /// The catalog's providers as `/provider` renders them.
    pub(crate) provider_cache: ProviderCache,
    models: LazyCatalog,
}

impl Instance {
    /// The merged configuration for this directory (loaded on first use; blocking).
    pub fn config(&self) -> Arc<LoadedConfig> {
        let mut cached = self.config.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(cached.get_or_insert_with(|| {
            let mut options = LoadOptions::new(self.env.clone(), &self.directory);
            options.paths = self.paths.clone();
            Arc::new(opencode_config::load(&options))
        }))
    }

    /// Forgets the loaded configuration (and the catalog built from it): the next use reloads.
    pub fn invalidate(&self) {
        *self.config.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// The agents of this directory's configuration: the one model the runtime and the tool host use.
    pub fn agents(&self) -> Agents {
        Agents::from_config(&AgentDirs::standard(&self.paths), &self.config().config)
    }

    /// The catalog with this directory's configuration applied (loaded on first use; blocking).
    pub fn catalog(&self) -> Result<Arc<Catalog>, ApiError> {
        let config = self.config();
        let mut cached = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((built_from, catalog)) = cached.as_ref()
            && Arc::ptr_eq(built_from, &config)
        {
            return catalog.clone().map_err(catalog_error);
        }
        let catalog = self
            .models
            .get()
            .and_then(|base| (*base).clone().with_config(&config.config).map(Arc::new))
            .map_err(|err| err.to_string());
        *cached = Some((config, catalog.clone()));
        catalog.map_err(catalog_error)
    }

    pub fn env(&self) -> &Env {
        &self.env
    }

    /// The directory as the API spells it.
    pub fn directory_str(&self) -> String {
        self.directory.to_string_lossy().into_owned()
    }

    /// Whether sessions of this instance are listed by directory as well as by project (folders outside
    /// git share the `global` project).
    pub fn is_global(&self) -> bool {
        self.project.id == GLOBAL_PROJECT
    }
}

/// A catalog (or why it could not be built) with the configuration it was built from.
type BuiltCatalog = (Arc<LoadedConfig>, Result<Arc<Catalog>, String>);

/// The instances of one server, created on first use and kept.
pub struct Instances {
    store: Arc<Store>,
    env: Env,
    paths: Paths,
    by_directory: Mutex<HashMap<PathBuf, Arc<Instance>>>,
    /// The catalog before configuration, read once per server.
    models: LazyCatalog,
}

impl Instances {
    /// Instances over `store` whose catalogs are `models` with each directory's configuration applied.
    pub fn new(store: Arc<Store>, env: Env, paths: Paths, models: LazyCatalog) -> Self {
        Self { store, env, paths, by_directory: Mutex::default(), models }
    }

    /// The instance for `directory` (which must be absolute). Blocking on first use of a directory.
    pub fn get(&self, directory: &Path) -> Result<Arc<Instance>, ApiError> {
        if !directory.is_absolute() {
            return Err(ApiError::bad(format!("directory {:?} must be an absolute path", directory.display())));
        }
        if let Some(found) = self.by_directory.lock().unwrap_or_else(PoisonError::into_inner).get(directory) {
            return Ok(Arc::clone(found));
        }
        let canonical = directory.canonicalize().unwrap_or_else(|_| directory.to_path_buf());
        let worktree = opencode_config::find_worktree(&canonical).unwrap_or_else(|| canonical.clone());
        let project = self.project_for(&worktree)?;
        let instance = Arc::new(Instance {
            directory: canonical,
            worktree,
            project,
            env: self.env.clone(),
            paths: self.paths.clone(),
            config: Mutex::default(),
            catalog: Mutex::default(),
            provider_cache: ProviderCache::default(),
            models: self.models.clone(),
        });
        let mut map = self.by_directory.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(Arc::clone(map.entry(directory.to_path_buf()).or_insert(instance)))
    }

    /// Every instance forgets its configuration (after a configuration file changed).
    pub fn invalidate_configs(&self) {
        let all: Vec<Arc<Instance>> =
            self.by_directory.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        for instance in all {
            instance.invalidate();
        }
    }

    /// The directories of the instances used so far (canonical), sorted.
    pub fn directories(&self) -> Vec<PathBuf> {
        let map = self.by_directory.lock().unwrap_or_else(PoisonError::into_inner);
        let mut directories: Vec<PathBuf> = map.values().map(|instance| instance.directory.clone()).collect();
        directories.sort();
        directories.dedup();
        directories
    }

    /// The stored project of `worktree`, created (or refreshed) in the store.
    fn project_for(&self, worktree: &Path) -> Result<Project, ApiError> {
        let id = project_of(worktree);
        let (vcs, tree) = match id.as_str() {
            GLOBAL_PROJECT => (None, "/".to_owned()),
            _ => (Some("git".to_owned()), worktree.to_string_lossy().into_owned()),
        };
        let project = self.store.write(|tx| {
            if let Some(existing) = tx.reader().project(&id)? {
                return Ok(existing);
            }
            let now = tx.now();
            let project = Project {
                id: id.clone(),
                worktree: tree,
                vcs,
                name: None,
                icon: None,
                commands: None,
                time: ProjectTime { created: now, updated: now, initialized: None },
                sandboxes: vec![],
            };
            tx.upsert_project(&project)?;
            Ok(project)
        })?;
        Ok(project)
    }
}

fn catalog_error(err: String) -> ApiError {
    ApiError::Internal(format!("cannot load the model catalog: {err}"))
}
