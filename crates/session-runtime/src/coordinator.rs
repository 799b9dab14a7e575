//! The run coordinator: process-global, keyed by session id. One drain at a time per session;
//! wakes that arrive while a drain runs coalesce into one follow-up drain; different sessions drain
//! concurrently. Interrupt cancels the active drain and drops a pending follow-up; admitted input is
//! durable and unaffected.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::events::RuntimeEvent;
use crate::events::SessionStatus;
use crate::runtime::Inner;

/// How a drain (with its coalesced follow-ups) ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainOutcome {
    /// Every promotable input was handled.
    Completed,
    /// There was nothing to do.
    Idle,
    /// The drain was interrupted; admitted input stays pending.
    Interrupted,
    /// The drain stopped on an error (recorded on the session).
    Failed { message: String, hint: String },
}

#[derive(Default)]
pub(crate) struct Coordinator {
    slots: Mutex<HashMap<String, Slot>>,
}

struct Slot {
    cancel: CancellationToken,
    pending_wake: bool,
    compact: bool,
    done: watch::Sender<Option<DrainOutcome>>,
}

impl Coordinator {
    /// Starts a drain for `session`, or marks a follow-up when one is running. `compact` asks the
    /// drain to compact the session first.
    pub(crate) fn wake(inner: &Arc<Inner>, session: &str, compact: bool) {
        let mut slots = inner.coordinator.lock();
        if let Some(slot) = slots.get_mut(session) {
            slot.pending_wake = true;
            slot.compact |= compact;
            return;
        }
        let cancel = CancellationToken::new();
        let done = watch::channel(None).0;
        slots.insert(session.to_owned(), Slot { cancel: cancel.clone(), pending_wake: false, compact, done });
        drop(slots);
        inner.publish(RuntimeEvent::Status { session_id: session.to_owned(), status: SessionStatus::Busy });
        tokio::spawn(run(Arc::clone(inner), session.to_owned(), cancel));
    }

    /// Interrupts the active drain; `false` (a no-op) when the session is idle or unknown.
    pub(crate) fn interrupt(&self, session: &str) -> bool {
        let mut slots = self.lock();
        let Some(slot) = slots.get_mut(session) else { return false };
        slot.pending_wake = false;
        slot.cancel.cancel();
        true
    }

    /// Waits until the session is idle; the outcome of the last drain, or `None` if none was running.
    pub(crate) async fn wait_idle(&self, session: &str) -> Option<DrainOutcome> {
        let mut receiver = self.lock().get(session)?.done.subscribe();
        receiver.wait_for(Option::is_some).await.ok()?.clone()
    }

    /// Whether a compaction was requested for the running drain (and clears the request).
    pub(crate) fn take_compact(&self, session: &str) -> bool {
        self.lock().get_mut(session).is_some_and(|slot| std::mem::take(&mut slot.compact))
    }

    /// Sessions with an active drain.
    pub(crate) fn active(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs drains for `session` until no follow-up is pending, then reports the outcome.
async fn run(inner: Arc<Inner>, session: String, mut cancel: CancellationToken) {
    let mut last = DrainOutcome::Idle;
    loop {
        // A drain that panics must not leave the session marked active forever.
        let drain = tokio::spawn(crate::runner::drain(Arc::clone(&inner), session.clone(), cancel.clone()));
        let outcome = drain.await.unwrap_or_else(|err| DrainOutcome::Failed {
            message: format!("the session drain failed unexpectedly: {err}"),
            hint: "retry; if it persists, report it with the log".to_owned(),
        });
        // A follow-up that found nothing to do does not hide what the drain before it did.
        if outcome != DrainOutcome::Idle {
            last = outcome;
        }
        let mut slots = inner.coordinator.lock();
        let Some(slot) = slots.get_mut(&session) else { return };
        if slot.pending_wake {
            slot.pending_wake = false;
            slot.cancel = CancellationToken::new();
            cancel = slot.cancel.clone();
            continue;
        }
        if let Some(slot) = slots.remove(&session) {
            slot.done.send_replace(Some(last));
        }
        drop(slots);
        inner.publish(RuntimeEvent::Status { session_id: session, status: SessionStatus::Idle });
        return;
    }
}
