//! [`LazyCatalog`]: a catalog built on first use and kept. Decoding the bundled snapshot takes tens of
//! milliseconds and holds megabytes that a server answering health checks, or a CLI listing sessions,
//! never needs; whoever needs models pays for them once.

use std::sync::Arc;
use std::sync::OnceLock;

use crate::Catalog;
use crate::CatalogError;

type Load = dyn Fn() -> Result<Catalog, CatalogError> + Send + Sync;

/// A catalog loaded by its first [`LazyCatalog::get`]; clones share it. A failed load is kept too:
/// every later `get` returns the same error instead of retrying a read that cannot change.
#[derive(Clone)]
pub struct LazyCatalog {
    cell: Arc<OnceLock<Result<Arc<Catalog>, CatalogError>>>,
    load: Arc<Load>,
}

impl LazyCatalog {
    /// A catalog that `load` builds on first use.
    pub fn new(load: impl Fn() -> Result<Catalog, CatalogError> + Send + Sync + 'static) -> Self {
        Self { cell: Arc::default(), load: Arc::new(load) }
    }

    /// The catalog before configuration from its sources (file, cache or bundled snapshot; never the
    /// network, see [`crate::source::load`]), read on first use; skipped sources are logged then.
    pub fn from_sources(paths: opencode_config::Paths, env: opencode_config::Env) -> Self {
        Self::new(move || {
            let (catalog, _origin, problems) = crate::source::load(&paths, &env)?;
            for problem in problems {
                tracing::warn!(%problem, "model catalog source skipped");
            }
            Ok(catalog)
        })
    }

    /// The catalog, loading it on the first call.
    pub fn get(&self) -> Result<Arc<Catalog>, CatalogError> {
        self.cell.get_or_init(|| (self.load)().map(Arc::new)).clone()
    }

    /// Whether the catalog has been loaded (or has failed to).
    pub fn is_loaded(&self) -> bool {
        self.cell.get().is_some()
    }
}

impl From<Arc<Catalog>> for LazyCatalog {
    fn from(catalog: Arc<Catalog>) -> Self {
        let cell = Arc::new(OnceLock::from(Ok(Arc::clone(&catalog))));
        Self { cell, load: Arc::new(move || Ok(Catalog::clone(&catalog))) }
    }
}

impl std::fmt::Debug for LazyCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyCatalog").field("loaded", &self.is_loaded()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering;

    use super::*;

    #[test]
    fn loads_once_on_first_use_and_clones_share_it() {
        let loads = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&loads);
        let lazy = LazyCatalog::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(Catalog::default())
        });
        let twin = lazy.clone();
        assert!(!lazy.is_loaded());
        assert_eq!(loads.load(Ordering::SeqCst), 0);
        let first = lazy.get().unwrap();
        let second = twin.get().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_failed_load_is_reported_every_time_without_retrying() {
        let loads = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&loads);
        let lazy = LazyCatalog::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            Err(CatalogError::Load { origin: "test".into(), message: "broken".into() })
        });
        assert!(lazy.get().is_err());
        assert!(lazy.get().unwrap_err().to_string().contains("broken"));
        assert_eq!(loads.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_ready_catalog_is_loaded_already() {
        let ready = Arc::new(Catalog::default());
        let lazy = LazyCatalog::from(Arc::clone(&ready));
        assert!(lazy.is_loaded());
        assert!(Arc::ptr_eq(&lazy.get().unwrap(), &ready));
    }
}
