//! `opencode-system-context`: the System Context of a session, made of typed, independently observed
//! Context Sources.
//!
//! - **Context Sources.** A [`ContextSource`] is one typed value: a stable namespaced [`SourceKey`],
//!   serde as its JSON codec, an infallible async loader returning [`Loaded::Value`] or
//!   [`Loaded::Unavailable`], and pure baseline / update / optional removal renderers.
//!   [`SystemContext::make`] hides the value type; [`SystemContext::combine`] keeps caller order and
//!   rejects duplicate keys.
//! - **Registry.** A Location-scoped [`SystemContextRegistry`] holds scoped [`Contribution`]s; `load`
//!   evaluates producers concurrently and combines them in contribution-key order, so the rendered
//!   text is byte-identical whatever order loaders finish in.
//! - **Epoch decisions.** [`SystemContext::initialize`] renders a [`Baseline`] and [`Snapshot`];
//!   [`SystemContext::reconcile`] returns one [`Reconciled`] action; [`SystemContext::replace`] renders a
//!   replacement [`Generation`]. [`prepare_epoch`] drives them against an [`EpochStore`], retrying
//!   optimistic revision mismatches until stable.
//! - **Built-in sources** in [`builtin`]: environment, date, ambient instructions, skill guidance.
//!
//! The composition itself reads no files and no database: loaders and producers bring the values.
//!
//! ```
//! use opencode_system_context::{ContextSource, Loaded, SourceKey, SystemContext};
//!
//! struct Mood(SourceKey);
//!
//! impl ContextSource for Mood {
//!     type Value = String;
//!     fn key(&self) -> &SourceKey { &self.0 }
//!     async fn load(&self) -> Loaded<String> { Loaded::Value("calm".into()) }
//!     fn baseline(&self, mood: &String) -> String { format!("Mood: {mood}") }
//!     fn update(&self, _: &String, mood: &String) -> String { format!("Mood is now: {mood}") }
//! }
//!
//! # async fn run() -> Result<(), opencode_system_context::SystemContextError> {
//! let context = SystemContext::make(Mood(SourceKey::new("demo/mood")?));
//! let generation = context.initialize().await?;
//! assert_eq!(generation.baseline.text, "Mood: calm");
//! # Ok(())
//! # }
//! ```

pub mod builtin;
mod epoch;
mod error;
mod key;
mod lifecycle;
mod registry;
mod snapshot;
mod source;

pub use epoch::Committed;
pub use epoch::EpochChange;
pub use epoch::EpochError;
pub use epoch::EpochPreparation;
pub use epoch::EpochStore;
pub use epoch::Prepared;
pub use epoch::Revision;
pub use epoch::StoredEpoch;
pub use epoch::prepare_epoch;
pub use error::Rendering;
pub use error::SystemContextError;
pub use key::SourceKey;
pub use lifecycle::Reconciled;
pub use lifecycle::Replacement;
pub use registry::Contribution;
pub use registry::Producer;
pub use registry::SystemContextRegistry;
pub use snapshot::Baseline;
pub use snapshot::Generation;
pub use snapshot::Snapshot;
pub use snapshot::SourceSnapshot;
pub use source::ContextSource;
pub use source::Loaded;
pub use source::SystemContext;
