//! Context Epoch preparation at a Safe Provider-Turn Boundary, retried until stable.
//!
//! The session store owns the epoch row and its optimistic revision; this module owns the decision
//! and the retry: read the stored epoch, observe the context, decide (initialize / reconcile /
//! replace), then commit with the revision that was read. A concurrent writer (a replacement
//! request, an agent switch, another runner) bumps the revision; the commit then reports a
//! mismatch and everything is re-read and re-observed, so a concurrent request can never end an
//! otherwise valid boundary with an error.

use std::future::Future;

use serde_json::Value as Json;

use crate::error::SystemContextError;
use crate::key::SourceKey;
use crate::lifecycle::Reconciled;
use crate::lifecycle::Replacement;
use crate::snapshot::Generation;
use crate::snapshot::Snapshot;
use crate::source::SystemContext;

/// The store's optimistic-concurrency token for one session's epoch row.
pub type Revision = u64;

/// What the store holds for a session's current Context Epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEpoch {
    pub revision: Revision,
    /// The snapshot exactly as persisted ([`Snapshot::to_json`]).
    pub snapshot: Json,
    /// A baseline-replacing transition (compaction, model/provider or agent switch) was requested.
    pub replacement_requested: bool,
}

/// A change for the store to commit atomically, only if the epoch is still as it was read.
#[derive(Debug, Clone, PartialEq)]
pub enum EpochChange {
    /// Create the epoch row (there was none): `expected` is `None`.
    Initialize(Generation),
    /// Persist `text` as one durable Mid-Conversation System Message and advance the snapshot in the
    /// same transaction.
    Advance { text: String, snapshot: Snapshot },
    /// Start a new epoch with this generation (clears any replacement request).
    Replace(Generation),
}

/// Whether the store applied a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    Applied,
    /// The row changed (or appeared) since it was read: re-read and retry.
    RevisionMismatch,
}

/// The store seam: load the current epoch, and commit a change against an expected revision.
/// Fencing against the session's Location or effective agent belongs to the store (fail with its
/// own error, or report a mismatch when a retry re-observing the current state is right).
pub trait EpochStore: Send + Sync {
    type Error: Send;

    fn load(&self) -> impl Future<Output = Result<Option<StoredEpoch>, Self::Error>> + Send;

    fn commit(
        &self,
        expected: Option<Revision>,
        change: EpochChange,
    ) -> impl Future<Output = Result<Committed, Self::Error>> + Send;
}

/// What preparation did.
#[derive(Debug, Clone, PartialEq)]
pub enum Prepared {
    /// A first epoch was created with this generation.
    Initialized(Generation),
    /// The admitted context is current; nothing was written.
    Unchanged,
    /// One Mid-Conversation System Message was admitted with this text.
    Updated { text: String },
    /// A new epoch started with this generation.
    Replaced(Generation),
    /// A replacement is pending but these admitted sources are unavailable; the current epoch stays.
    ReplacementBlocked { keys: Vec<SourceKey> },
}

/// Why preparation failed.
#[derive(Debug, thiserror::Error)]
pub enum EpochError<E> {
    /// Initialization is blocked by unavailable sources, or the context is defective.
    #[error(transparent)]
    Context(#[from] SystemContextError),
    #[error("the context epoch store failed")]
    Store(#[source] E),
    #[error("the context epoch kept changing under preparation ({attempts} attempts)")]
    Unstable { attempts: u32 },
}

impl<E> EpochError<E> {
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Context(err) => err.hint(),
            Self::Store(_) => "check the session database; the boundary can be retried",
            Self::Unstable { .. } => "another writer keeps changing this session's epoch; retry the run",
        }
    }
}

/// Retry policy for [`prepare_epoch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochPreparation {
    /// Attempts before giving up with [`EpochError::Unstable`]; mismatches need a concurrent writer,
    /// so this bound only guards against a livelock.
    pub max_attempts: u32,
}

impl Default for EpochPreparation {
    fn default() -> Self {
        Self { max_attempts: 64 }
    }
}

/// Prepares the session's Context Epoch for a provider turn, retrying until stable.
///
/// `context` is called once per attempt, so every retry re-observes the current registry, agent and
/// sources.
pub async fn prepare_epoch<S, C, Fut>(
    store: &S,
    mut context: C,
    policy: EpochPreparation,
) -> Result<Prepared, EpochError<S::Error>>
where
    S: EpochStore,
    C: FnMut() -> Fut,
    Fut: Future<Output = Result<SystemContext, SystemContextError>>,
{
    for _ in 0..policy.max_attempts.max(1) {
        let stored = store.load().await.map_err(EpochError::Store)?;
        let context = context().await?;
        let (expected, change, prepared) = match decide(&context, stored).await? {
            Decision::Done(prepared) => return Ok(prepared),
            Decision::Commit { expected, change, prepared } => (expected, change, prepared),
        };
        match store.commit(expected, change).await.map_err(EpochError::Store)? {
            Committed::Applied => return Ok(prepared),
            Committed::RevisionMismatch => tokio::task::yield_now().await,
        }
    }
    Err(EpochError::Unstable { attempts: policy.max_attempts.max(1) })
}

enum Decision {
    Done(Prepared),
    Commit { expected: Option<Revision>, change: EpochChange, prepared: Prepared },
}

async fn decide(context: &SystemContext, stored: Option<StoredEpoch>) -> Result<Decision, SystemContextError> {
    let Some(stored) = stored else {
        let generation = context.initialize().await?;
        return Ok(commit(None, EpochChange::Initialize(generation.clone()), Prepared::Initialized(generation)));
    };
    let expected = Some(stored.revision);
    let previous = Snapshot::from_json(&stored.snapshot)?;
    if stored.replacement_requested {
        return Ok(match context.replace(&previous).await? {
            Replacement::Ready(generation) => {
                commit(expected, EpochChange::Replace(generation.clone()), Prepared::Replaced(generation))
            }
            Replacement::Blocked { keys } => Decision::Done(Prepared::ReplacementBlocked { keys }),
        });
    }
    Ok(match context.reconcile(&previous).await? {
        Reconciled::Unchanged => Decision::Done(Prepared::Unchanged),
        Reconciled::Updated { text, snapshot } => {
            commit(expected, EpochChange::Advance { text: text.clone(), snapshot }, Prepared::Updated { text })
        }
        Reconciled::ReplacementReady(generation) => {
            commit(expected, EpochChange::Replace(generation.clone()), Prepared::Replaced(generation))
        }
        Reconciled::ReplacementBlocked { keys } => Decision::Done(Prepared::ReplacementBlocked { keys }),
    })
}

fn commit(expected: Option<Revision>, change: EpochChange, prepared: Prepared) -> Decision {
    Decision::Commit { expected, change, prepared }
}
