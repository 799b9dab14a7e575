//! The system-context crate's [`EpochStore`] seam implemented over the session store.
//!
//! The store keeps epochs without a revision column, so the revision is a hash of what preparation
//! decides on (the active epoch's number and snapshot): any concurrent change to either makes the
//! commit report a mismatch, and preparation re-reads and re-observes. Every commit is fenced on the
//! session's Location: a runner whose session moved away writes nothing.

use std::hash::Hash;
use std::hash::Hasher;
use std::sync::Arc;

use opencode_session_store::ContextEpoch;
use opencode_session_store::NewEpoch;
use opencode_session_store::Store;
use opencode_session_store::StoreError;
use opencode_system_context::Committed;
use opencode_system_context::EpochChange;
use opencode_system_context::EpochStore;
use opencode_system_context::Generation;
use opencode_system_context::Revision;
use opencode_system_context::StoredEpoch;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::store::blocking;

/// One session's epoch, as seen by one runner at one boundary.
pub(crate) struct SessionEpochs {
    pub(crate) store: Arc<Store>,
    pub(crate) session_id: String,
    /// The runner's Location: commits are fenced on it.
    pub(crate) directory: String,
    /// The effective agent of the turn: an epoch owned by another agent must be replaced.
    pub(crate) agent: String,
    /// A baseline-replacing transition was requested (model/provider switch).
    pub(crate) replace: bool,
}

enum Outcome {
    Committed(Committed),
    Moved(String),
}

impl EpochStore for SessionEpochs {
    type Error = RuntimeError;

    async fn load(&self) -> Result<Option<StoredEpoch>> {
        let store = Arc::clone(&self.store);
        let session = self.session_id.clone();
        let epoch = blocking(move || store.read(|r| r.active_epoch(&session))).await?;
        Ok(epoch.map(|epoch| StoredEpoch {
            revision: revision(&epoch),
            replacement_requested: self.replace || epoch.agent != self.agent,
            snapshot: epoch.snapshot,
        }))
    }

    async fn commit(&self, expected: Option<Revision>, change: EpochChange) -> Result<Committed> {
        let store = Arc::clone(&self.store);
        let (session, directory, agent) = (self.session_id.clone(), self.directory.clone(), self.agent.clone());
        let outcome = blocking(move || {
            store.write(|tx| {
                let current = tx
                    .reader()
                    .session(&session)?
                    .ok_or_else(|| StoreError::NotFound { kind: "session", id: session.clone() })?;
                if current.directory != directory {
                    return Ok(Outcome::Moved(current.directory));
                }
                let active = tx.reader().active_epoch(&session)?;
                if active.as_ref().map(revision) != expected {
                    return Ok(Outcome::Committed(Committed::RevisionMismatch));
                }
                match (change, active) {
                    (EpochChange::Initialize(generation) | EpochChange::Replace(generation), _) => {
                        tx.start_epoch(&session, new_epoch(generation, agent, None))?;
                    }
                    (EpochChange::Advance { text, snapshot }, Some(active)) => {
                        tx.admit_system_message(&session, active.epoch, &text, &snapshot.to_json())?;
                    }
                    (EpochChange::Advance { .. }, None) => {
                        return Ok(Outcome::Committed(Committed::RevisionMismatch));
                    }
                }
                Ok(Outcome::Committed(Committed::Applied))
            })
        })
        .await?;
        match outcome {
            Outcome::Committed(committed) => Ok(committed),
            Outcome::Moved(directory) => Err(RuntimeError::Moved { session: self.session_id.clone(), directory }),
        }
    }
}

/// A new epoch row from a rendered generation.
pub(crate) fn new_epoch(generation: Generation, agent: String, history_from_message: Option<String>) -> NewEpoch {
    NewEpoch {
        baseline: generation.baseline.text,
        baseline_parts: generation.baseline.parts.into_iter().map(|(key, text)| (key.to_string(), text)).collect(),
        snapshot: generation.snapshot.to_json(),
        agent,
        history_from_message,
    }
}

/// The optimistic revision of an epoch: its number and snapshot, hashed.
fn revision(epoch: &ContextEpoch) -> Revision {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    epoch.epoch.hash(&mut hasher);
    epoch.snapshot.to_string().hash(&mut hasher);
    hasher.finish()
}
