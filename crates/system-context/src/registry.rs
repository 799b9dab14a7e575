//! The Location-scoped System Context Registry: scoped, stable-keyed producers of System Context.
//!
//! Registering returns a [`Contribution`] handle; dropping or revoking it removes the producer, so its
//! sources disappear at the next Safe Provider-Turn Boundary (the next [`SystemContextRegistry::load`]).
//! `load` evaluates every producer concurrently and combines the results in contribution-key order,
//! so the composed context never depends on which producer finishes first.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::sync::Weak;

use futures_util::future::BoxFuture;

use crate::error::SystemContextError;
use crate::key::SourceKey;
use crate::source::SystemContext;

/// Produces the current System Context of one contribution (for example: discover instruction files,
/// then yield one source, or none when there are no files).
pub trait Producer: Send + Sync + 'static {
    fn produce(&self) -> BoxFuture<'_, SystemContext>;
}

/// Any `Fn() -> impl Future<Output = SystemContext>` is a producer.
impl<F, Fut> Producer for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = SystemContext> + Send + 'static,
{
    fn produce(&self) -> BoxFuture<'_, SystemContext> {
        Box::pin(self())
    }
}

/// A fixed context is a producer of itself (its sources still load at every observation).
impl Producer for SystemContext {
    fn produce(&self) -> BoxFuture<'_, SystemContext> {
        let context = self.clone();
        Box::pin(async move { context })
    }
}

type Entries = Mutex<BTreeMap<SourceKey, Registered>>;

struct Registered {
    id: u64,
    producer: Arc<dyn Producer>,
}

/// One Location's registry. Clones share the same registrations.
#[derive(Clone, Default)]
pub struct SystemContextRegistry {
    entries: Arc<Entries>,
    next_id: Arc<std::sync::atomic::AtomicU64>,
}

impl SystemContextRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `producer` under the stable contribution key `key`. The producer stays registered
    /// as long as the returned handle lives.
    pub fn register(&self, key: SourceKey, producer: impl Producer) -> Result<Contribution, SystemContextError> {
        let id = self.next_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut entries = lock(&self.entries);
        if entries.contains_key(&key) {
            return Err(SystemContextError::DuplicateContribution { key });
        }
        entries.insert(key.clone(), Registered { id, producer: Arc::new(producer) });
        Ok(Contribution { entries: Arc::downgrade(&self.entries), key, id })
    }

    /// The registered contribution keys, in the order their contexts are combined.
    pub fn keys(&self) -> Vec<SourceKey> {
        lock(&self.entries).keys().cloned().collect()
    }

    /// Evaluates every producer concurrently and combines their contexts in contribution-key order.
    /// Two contributions providing the same source key is an error.
    pub async fn load(&self) -> Result<SystemContext, SystemContextError> {
        let producers: Vec<Arc<dyn Producer>> =
            lock(&self.entries).values().map(|entry| Arc::clone(&entry.producer)).collect();
        let contexts = futures_util::future::join_all(producers.iter().map(|producer| producer.produce())).await;
        SystemContext::combine(contexts)
    }
}

impl std::fmt::Debug for SystemContextRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemContextRegistry").field("keys", &self.keys()).finish()
    }
}

/// A registered contribution. Dropping it (or calling [`Contribution::revoke`]) unregisters it.
#[must_use = "dropping a contribution unregisters it at once"]
pub struct Contribution {
    entries: Weak<Entries>,
    key: SourceKey,
    id: u64,
}

impl Contribution {
    pub fn key(&self) -> &SourceKey {
        &self.key
    }

    /// Unregisters now (the same as dropping the handle).
    pub fn revoke(self) {}

    /// Keeps the contribution registered for the registry's whole life.
    pub fn forget(self) {
        std::mem::forget(self);
    }
}

impl Drop for Contribution {
    fn drop(&mut self) {
        let Some(entries) = self.entries.upgrade() else {
            return;
        };
        let mut entries = lock(&entries);
        // Only remove our own registration, never a later one that reused the key.
        if entries.get(&self.key).is_some_and(|entry| entry.id == self.id) {
            entries.remove(&self.key);
        }
    }
}

impl std::fmt::Debug for Contribution {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contribution").field("key", &self.key).finish()
    }
}

/// The map stays consistent even if a holder panicked (every mutation is a single insert/remove).
fn lock(entries: &Entries) -> MutexGuard<'_, BTreeMap<SourceKey, Registered>> {
    entries.lock().unwrap_or_else(PoisonError::into_inner)
}
