//! Context Sources and the opaque [`SystemContext`] that composes them.
//!
//! A [`ContextSource`] is one independently observed typed value: a stable key, a JSON codec (serde),
//! an infallible async loader, and pure renderers. [`SystemContext::make`] hides the value type so
//! differently typed sources compose uniformly; [`SystemContext::combine`] keeps caller order and
//! rejects duplicate keys. Nothing here reads files or databases: loaders are supplied by callers.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::error::Rendering;
use crate::error::SystemContextError;
use crate::key::SourceKey;
use crate::snapshot::SourceSnapshot;

/// The result of observing a source: a value, or an expected temporary inability to observe it.
///
/// Unavailable is not absence: the runtime keeps the previously admitted value and emits nothing
/// (stale-while-revalidate), and a baseline is never built without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded<T> {
    Value(T),
    Unavailable,
}

impl<T> From<T> for Loaded<T> {
    fn from(value: T) -> Self {
        Self::Value(value)
    }
}

/// One independently observed typed value within the System Context.
///
/// Renderers are pure and must not return empty text (an empty rendering is reported as a defect).
pub trait ContextSource: Send + Sync + 'static {
    /// The observed value; serde is its codec, and encoded JSON equality is its comparison.
    type Value: Serialize + DeserializeOwned + Send + 'static;

    /// The stable namespaced key.
    fn key(&self) -> &SourceKey;

    /// Observes the current value. Infallible: a failure the runtime should ride out is
    /// [`Loaded::Unavailable`].
    fn load(&self) -> impl Future<Output = Loaded<Self::Value>> + Send;

    /// The text this source contributes to a Baseline System Context (and emits once when first seen).
    fn baseline(&self, current: &Self::Value) -> String;

    /// The Mid-Conversation System Message text announcing the newly effective value.
    fn update(&self, previous: &Self::Value, current: &Self::Value) -> String;

    /// The text emitted when this source disappears; `None` for sources that cannot disappear, whose
    /// disappearance then forces a baseline replacement.
    fn removed(&self, _previous: &Self::Value) -> Option<String> {
        None
    }
}

/// An opaque, cheaply clonable composition of zero or more Context Sources, in render order.
#[derive(Clone, Default)]
pub struct SystemContext {
    sources: Arc<[Arc<dyn ErasedSource>]>,
}

impl SystemContext {
    /// The identity: no sources.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Closes one typed source into a context that composes with differently typed ones.
    pub fn make<S: ContextSource>(source: S) -> Self {
        let erased: Arc<dyn ErasedSource> = Arc::new(Packed(source));
        Self { sources: Arc::from([erased]) }
    }

    /// Concatenates contexts in the given order; a key that appears twice is an error.
    pub fn combine(contexts: impl IntoIterator<Item = SystemContext>) -> Result<Self, SystemContextError> {
        let mut sources: Vec<Arc<dyn ErasedSource>> = Vec::new();
        let mut seen = HashSet::new();
        for context in contexts {
            for source in context.sources.iter() {
                if !seen.insert(source.key().clone()) {
                    return Err(SystemContextError::DuplicateKey { key: source.key().clone() });
                }
                sources.push(Arc::clone(source));
            }
        }
        Ok(Self { sources: sources.into() })
    }

    /// The source keys, in render order.
    pub fn keys(&self) -> impl Iterator<Item = &SourceKey> {
        self.sources.iter().map(|source| source.key())
    }

    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// Loads every source concurrently; results come back in render order whatever order loaders
    /// finish in.
    pub(crate) async fn observe(&self) -> Vec<Entry<'_>> {
        let loads = self.sources.iter().map(|source| async move {
            let observation = source.observe().await;
            Entry { key: source.key(), observation }
        });
        futures_util::future::join_all(loads).await
    }
}

impl std::fmt::Debug for SystemContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SystemContext").field(&self.keys().collect::<Vec<_>>()).finish()
    }
}

/// One observed source: `observation` is `None` when it was unavailable.
pub(crate) struct Entry<'a> {
    pub key: &'a SourceKey,
    pub observation: Option<Box<dyn Observation + 'a>>,
}

/// A rendered text and the snapshot entry that admits it.
pub(crate) struct Rendered {
    pub text: String,
    pub snapshot: SourceSnapshot,
}

/// How an observed value relates to the admitted one.
pub(crate) enum Compared {
    /// The stored value no longer decodes: only a full replacement can continue.
    Incompatible,
    Unchanged,
    Changed(Rendered),
}

/// A loaded value with its source's renderers, type-erased.
pub(crate) trait Observation: Send {
    fn baseline(&self) -> Result<Rendered, SystemContextError>;
    fn compare(&self, stored: &Json) -> Result<Compared, SystemContextError>;
}

/// A source with its value type hidden.
trait ErasedSource: Send + Sync {
    fn key(&self) -> &SourceKey;
    fn observe(&self) -> BoxFuture<'_, Option<Box<dyn Observation + '_>>>;
}

struct Packed<S>(S);

impl<S: ContextSource> ErasedSource for Packed<S> {
    fn key(&self) -> &SourceKey {
        self.0.key()
    }

    fn observe(&self) -> BoxFuture<'_, Option<Box<dyn Observation + '_>>> {
        Box::pin(async move {
            match self.0.load().await {
                Loaded::Value(value) => Some(Box::new(Observed { source: &self.0, value }) as Box<dyn Observation>),
                Loaded::Unavailable => None,
            }
        })
    }
}

struct Observed<'a, S: ContextSource> {
    source: &'a S,
    value: S::Value,
}

impl<S: ContextSource> Observed<'_, S> {
    fn encode(&self) -> Result<Json, SystemContextError> {
        serde_json::to_value(&self.value)
            .map_err(|err| SystemContextError::Encode { key: self.source.key().clone(), reason: err.to_string() })
    }

    fn admit(&self, text: String, rendering: Rendering) -> Result<Rendered, SystemContextError> {
        let key = self.source.key();
        let text = require_text(key, rendering, text)?;
        let removed = match self.source.removed(&self.value) {
            Some(removed) => Some(require_text(key, Rendering::Removal, removed)?),
            None => None,
        };
        Ok(Rendered { text, snapshot: SourceSnapshot { value: self.encode()?, removed } })
    }
}

impl<S: ContextSource> Observation for Observed<'_, S> {
    fn baseline(&self) -> Result<Rendered, SystemContextError> {
        self.admit(self.source.baseline(&self.value), Rendering::Baseline)
    }

    fn compare(&self, stored: &Json) -> Result<Compared, SystemContextError> {
        // Fast path: an unchanged value encodes to exactly what was stored.
        if self.encode()? == *stored {
            return Ok(Compared::Unchanged);
        }
        let Ok(previous) = S::Value::deserialize(stored) else {
            return Ok(Compared::Incompatible);
        };
        let text = self.source.update(&previous, &self.value);
        Ok(Compared::Changed(self.admit(text, Rendering::Update)?))
    }
}

fn require_text(key: &SourceKey, rendering: Rendering, text: String) -> Result<String, SystemContextError> {
    if text.is_empty() { Err(SystemContextError::EmptyRendering { key: key.clone(), rendering }) } else { Ok(text) }
}
