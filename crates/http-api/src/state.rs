//! What every handler shares: the store, the driver, the event bus, the instances, the options.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use opencode_config::Env;
use opencode_config::Paths;
use opencode_session_store::Reader;
use opencode_session_store::Store;
use opencode_session_store::StoreError;
use opencode_session_store::Tx;
use tokio::sync::watch;

use crate::bus::EventBus;
use crate::driver::DriverError;
use crate::driver::SessionDriver;
use crate::error::ApiError;
use crate::instance::Instances;
use crate::options::ServerOptions;
use crate::pty::PtyService;
use opencode_catalog::LazyCatalog;

/// What the server is built from; the caller owns the store and the runtime.
pub struct ServerContext {
    pub store: Arc<Store>,
    pub driver: Arc<dyn SessionDriver>,
    pub env: Env,
    pub paths: Paths,
    /// The instance directory of requests that name none (OpenCode uses the server's working directory).
    pub directory: PathBuf,
    /// Install the bus as the store's event hook. The store has one hook: [`ServerContext::new`] turns
    /// this off when the driver owns it ([`SessionDriver::forwards_durable_events`]), as the session
    /// runtime does; the server then publishes the durable events the driver forwards.
    pub install_store_hook: bool,
    /// The catalog before configuration, read on first use; share it with the runtime so that the
    /// bundled snapshot is decoded once per process.
    pub models: LazyCatalog,
}

impl ServerContext {
    pub fn new(store: Arc<Store>, driver: Arc<dyn SessionDriver>, env: Env, paths: Paths, directory: PathBuf) -> Self {
        let install_store_hook = !driver.forwards_durable_events();
        let models = LazyCatalog::from_sources(paths.clone(), env.clone());
        Self { store, driver, env, paths, directory, install_store_hook, models }
    }
}

/// The router's state. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Shared>,
}

pub(crate) struct Shared {
    pub store: Arc<Store>,
    pub driver: Arc<dyn SessionDriver>,
    pub bus: EventBus,
    pub instances: Instances,
    /// The terminal panel's PTYs (hung up at shutdown).
    pub pty: PtyService,
    pub default_directory: PathBuf,
    pub options: ServerOptions,
    pub env: Env,
    pub paths: Paths,
    /// Turns true when the server shuts down (ends SSE streams so that shutdown can finish).
    pub shutdown: watch::Receiver<bool>,
    /// `http://host:port`, for share links.
    pub base_url: String,
}

impl AppState {
    /// Runs a read on a blocking thread.
    pub(crate) async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Reader<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let store = Arc::clone(&self.inner.store);
        blocking(move || store.read(f).map_err(ApiError::from)).await
    }

    /// Runs a write transaction on a blocking thread.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Tx<'_>) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let store = Arc::clone(&self.inner.store);
        blocking(move || store.write(f).map_err(ApiError::from)).await
    }

    /// Asks the driver about an instance directory on a blocking thread (opening the runtime's
    /// Location there reads configuration); a directory that does not exist is a 404, not a driver
    /// failure.
    pub(crate) async fn in_directory<T: Send + 'static>(
        &self,
        directory: PathBuf,
        f: impl FnOnce(&dyn SessionDriver, &Path) -> Result<T, DriverError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let driver = Arc::clone(&self.inner.driver);
        blocking(move || {
            if !directory.is_dir() {
                return Err(ApiError::not_found(format!("directory {} does not exist", directory.display())));
            }
            f(driver.as_ref(), &directory).map_err(ApiError::from)
        })
        .await
    }
}

/// Runs blocking work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|err| ApiError::Internal(format!("request worker stopped: {err}")))?
}
