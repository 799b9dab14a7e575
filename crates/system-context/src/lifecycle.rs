//! Observing a composed System Context once and deciding what the Context Epoch does next.
//!
//! - [`SystemContext::initialize`]: a fresh generation, or blocked when any source is unavailable.
//! - [`SystemContext::reconcile`]: exactly one of unchanged / updated (one combined
//!   Mid-Conversation System Message) / replacement ready / replacement blocked.
//! - [`SystemContext::replace`]: an explicit baseline-replacing transition.

use std::collections::HashSet;

use indexmap::IndexMap;

use crate::error::SystemContextError;
use crate::key::SourceKey;
use crate::snapshot::Baseline;
use crate::snapshot::Generation;
use crate::snapshot::Snapshot;
use crate::snapshot::join_texts;
use crate::source::Compared;
use crate::source::Entry;
use crate::source::SystemContext;

/// The one next action after reconciling a System Context with the admitted snapshot.
#[derive(Debug, Clone, PartialEq)]
pub enum Reconciled {
    /// Nothing to admit; the snapshot stays as it is.
    Unchanged,
    /// Admit `text` as one durable Mid-Conversation System Message and advance to `snapshot` in the
    /// same transaction.
    Updated { text: String, snapshot: Snapshot },
    /// The change cannot be expressed as an update (a stored value no longer decodes, or a source
    /// without removal text vanished): start a new epoch with this generation.
    ReplacementReady(Generation),
    /// A replacement is needed but previously admitted sources are unavailable: keep the current
    /// epoch and try again at the next boundary.
    ReplacementBlocked { keys: Vec<SourceKey> },
}

/// The outcome of an explicit baseline replacement.
#[derive(Debug, Clone, PartialEq)]
pub enum Replacement {
    Ready(Generation),
    /// Previously admitted sources (listed) are unavailable; the new baseline would be incomplete.
    Blocked {
        keys: Vec<SourceKey>,
    },
}

impl SystemContext {
    /// Observes every source once and renders a fresh Baseline System Context and Context Snapshot.
    /// Any unavailable source blocks ([`SystemContextError::InitializationBlocked`]): an incomplete
    /// baseline is never persisted.
    pub async fn initialize(&self) -> Result<Generation, SystemContextError> {
        let entries = self.observe().await;
        let blocked: Vec<SourceKey> =
            entries.iter().filter(|entry| entry.observation.is_none()).map(|entry| entry.key.clone()).collect();
        if !blocked.is_empty() {
            return Err(SystemContextError::InitializationBlocked { keys: blocked });
        }
        generation(&entries)
    }

    /// Observes every source once and compares it with `previous`, the admitted snapshot.
    pub async fn reconcile(&self, previous: &Snapshot) -> Result<Reconciled, SystemContextError> {
        let entries = self.observe().await;
        match plan_update(&entries, previous)? {
            Some(result) => Ok(result),
            None => Ok(match replacement(&entries, previous)? {
                Replacement::Ready(generation) => Reconciled::ReplacementReady(generation),
                Replacement::Blocked { keys } => Reconciled::ReplacementBlocked { keys },
            }),
        }
    }

    /// Observes every source once and renders a replacement generation (compaction, model or agent
    /// switch, session move). Sources never admitted and unavailable now are left out until they
    /// load; previously admitted ones that are unavailable block the replacement.
    pub async fn replace(&self, previous: &Snapshot) -> Result<Replacement, SystemContextError> {
        replacement(&self.observe().await, previous)
    }
}

/// The update for `entries` against `previous`, or `None` when only a replacement will do.
fn plan_update(entries: &[Entry<'_>], previous: &Snapshot) -> Result<Option<Reconciled>, SystemContextError> {
    // First compare everything, so that an incompatible value anywhere decides before any text is kept.
    let mut comparisons = Vec::with_capacity(entries.len());
    for entry in entries {
        let compared = match (&entry.observation, previous.get(entry.key)) {
            (Some(observation), Some(stored)) => Some(observation.compare(&stored.value)?),
            _ => None,
        };
        if matches!(compared, Some(Compared::Incompatible)) {
            return Ok(None);
        }
        comparisons.push(compared);
    }
    let present: HashSet<&SourceKey> = entries.iter().map(|entry| entry.key).collect();
    let vanished: Vec<_> = previous.entries().filter(|(key, _)| !present.contains(key)).collect();
    if vanished.iter().any(|(_, stored)| stored.removed.is_none()) {
        return Ok(None);
    }

    let mut snapshot = Snapshot::default();
    let mut updates: Vec<String> = Vec::new();
    for (entry, compared) in entries.iter().zip(comparisons) {
        let stored = previous.get(entry.key);
        match (&entry.observation, stored, compared) {
            // Stale-while-revalidate: keep what was admitted, say nothing.
            (None, Some(stored), _) => snapshot.insert(entry.key.clone(), stored.clone()),
            // Never admitted and not loadable yet: omitted until it first loads.
            (None, None, _) => {}
            // First seen: its baseline rendering, once.
            (Some(observation), None, _) => {
                let rendered = observation.baseline()?;
                updates.push(rendered.text);
                snapshot.insert(entry.key.clone(), rendered.snapshot);
            }
            (Some(_), Some(_), Some(Compared::Changed(rendered))) => {
                updates.push(rendered.text);
                snapshot.insert(entry.key.clone(), rendered.snapshot);
            }
            (Some(_), Some(stored), _) => snapshot.insert(entry.key.clone(), stored.clone()),
        }
    }
    // Removal texts follow, in key order (the snapshot iterates sorted).
    updates.extend(vanished.into_iter().filter_map(|(_, stored)| stored.removed.clone()));
    if updates.is_empty() {
        return Ok(Some(Reconciled::Unchanged));
    }
    Ok(Some(Reconciled::Updated { text: join_texts(updates.iter().map(String::as_str)), snapshot }))
}

fn replacement(entries: &[Entry<'_>], previous: &Snapshot) -> Result<Replacement, SystemContextError> {
    let blocked: Vec<SourceKey> = entries
        .iter()
        .filter(|entry| entry.observation.is_none() && previous.get(entry.key).is_some())
        .map(|entry| entry.key.clone())
        .collect();
    if !blocked.is_empty() {
        return Ok(Replacement::Blocked { keys: blocked });
    }
    generation(entries).map(Replacement::Ready)
}

/// Renders the baseline of every available entry, in order.
fn generation(entries: &[Entry<'_>]) -> Result<Generation, SystemContextError> {
    let mut parts = IndexMap::with_capacity(entries.len());
    let mut snapshot = Snapshot::default();
    for entry in entries {
        if let Some(observation) = &entry.observation {
            let rendered = observation.baseline()?;
            parts.insert(entry.key.clone(), rendered.text);
            snapshot.insert(entry.key.clone(), rendered.snapshot);
        }
    }
    Ok(Generation { baseline: Baseline::from_parts(parts), snapshot })
}
