//! The run coordinator: process-global, keyed by session id. One drain at a time per session;
//! wakes that arrive while a drain runs coalesce into one follow-up drain; different sessions drain
//! concurrently. Interrupt cancels the active drain and drops a pending follow-up; admitted input is
//! durable and unaffected. A change to a session that must not race a turn (revert, unrevert) holds
//! the session's slot instead of a drain ([`Coordinator::hold`]): it is refused while a drain runs,
//! and wakes meanwhile start their drain when it is released.
//!
//! What a drain does is not the coordinator's business: it runs whatever [`Drains`] gives it, so it
//! is tested here alone.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::events::SessionStatus;

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

/// What the coordinator runs and tells: the runtime's drains, or a test's.
pub(crate) trait Drains: Send + Sync + 'static {
    /// The coordinator these drains are scheduled by.
    fn coordinator(&self) -> &Coordinator;
    /// One drain of `session`, until it is done or `cancel` fires.
    fn drain(self: Arc<Self>, session: String, cancel: CancellationToken) -> DrainFuture;
    /// The session became busy or idle.
    fn status(&self, session: &str, status: SessionStatus);
}

pub(crate) type DrainFuture = Pin<Box<dyn Future<Output = DrainOutcome> + Send>>;

#[derive(Default)]
pub(crate) struct Coordinator {
    slots: Mutex<HashMap<String, Slot>>,
}

struct Slot {
    cancel: CancellationToken,
    pending_wake: bool,
    compact: bool,
    /// Held by a session change, not a drain: wakes wait for its release.
    held: bool,
    done: watch::Sender<Option<DrainOutcome>>,
}

impl Slot {
    fn new(compact: bool, held: bool) -> Self {
        let cancel = CancellationToken::new();
        Self { cancel, pending_wake: false, compact, held, done: watch::channel(None).0 }
    }
}

/// The session's slot, held for a change that must not race a turn; released on drop (a wake that
/// arrived meanwhile starts its drain then).
pub(crate) struct Hold<D: Drains> {
    drains: Arc<D>,
    session: String,
}

impl<D: Drains> Drop for Hold<D> {
    fn drop(&mut self) {
        let mut slots = self.drains.coordinator().lock();
        let Some(slot) = slots.remove(&self.session) else { return };
        drop(slots);
        if slot.pending_wake {
            Coordinator::wake(&self.drains, &self.session, slot.compact);
        } else {
            slot.done.send_replace(Some(DrainOutcome::Idle));
        }
    }
}

impl Coordinator {
    /// Starts a drain for `session`, or marks a follow-up when one is running (or the session is
    /// held). `compact` asks the drain to compact the session first.
    pub(crate) fn wake<D: Drains>(drains: &Arc<D>, session: &str, compact: bool) {
        let mut slots = drains.coordinator().lock();
        if let Some(slot) = slots.get_mut(session) {
            slot.pending_wake = true;
            slot.compact |= compact;
            return;
        }
        let slot = Slot::new(compact, false);
        let cancel = slot.cancel.clone();
        slots.insert(session.to_owned(), slot);
        drop(slots);
        drains.status(session, SessionStatus::Busy);
        tokio::spawn(run(Arc::clone(drains), session.to_owned(), cancel));
    }

    /// Holds `session` for a change that must not race a turn; `None` while a drain runs (or another
    /// change holds it).
    pub(crate) fn hold<D: Drains>(drains: &Arc<D>, session: &str) -> Option<Hold<D>> {
        let mut slots = drains.coordinator().lock();
        if slots.contains_key(session) {
            return None;
        }
        slots.insert(session.to_owned(), Slot::new(false, true));
        Some(Hold { drains: Arc::clone(drains), session: session.to_owned() })
    }

    /// Interrupts the active drain; `false` (a no-op) when the session is idle, unknown or only held.
    pub(crate) fn interrupt(&self, session: &str) -> bool {
        let mut slots = self.lock();
        let Some(slot) = slots.get_mut(session).filter(|slot| !slot.held) else { return false };
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

    /// Sessions with an active drain (or held for a change).
    pub(crate) fn active(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs drains for `session` until no follow-up is pending, then reports the outcome.
async fn run<D: Drains>(drains: Arc<D>, session: String, mut cancel: CancellationToken) {
    let mut last = DrainOutcome::Idle;
    loop {
        // A drain that panics must not leave the session marked active forever.
        let drain = tokio::spawn(Arc::clone(&drains).drain(session.clone(), cancel.clone()));
        let outcome = drain.await.unwrap_or_else(|err| DrainOutcome::Failed {
            message: format!("the session drain failed unexpectedly: {err}"),
            hint: "retry; if it persists, report it with the log".to_owned(),
        });
        // A follow-up that found nothing to do does not hide what the drain before it did.
        if outcome != DrainOutcome::Idle {
            last = outcome;
        }
        let mut slots = drains.coordinator().lock();
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
        drains.status(&session, SessionStatus::Idle);
        return;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering;

    use tokio::sync::Semaphore;

    use super::*;

    /// Drains that wait for a permit (so a test decides when each ends) and count themselves.
    struct Scripted {
        coordinator: Coordinator,
        started: AtomicUsize,
        gate: Semaphore,
        statuses: Mutex<Vec<SessionStatus>>,
    }

    impl Default for Scripted {
        fn default() -> Self {
            let (coordinator, started, statuses) = Default::default();
            Self { coordinator, started, gate: Semaphore::new(0), statuses }
        }
    }

    impl Drains for Scripted {
        fn coordinator(&self) -> &Coordinator {
            &self.coordinator
        }

        fn drain(self: Arc<Self>, _session: String, cancel: CancellationToken) -> DrainFuture {
            Box::pin(async move {
                let run = self.started.fetch_add(1, Ordering::SeqCst);
                assert_ne!(run, 99, "the 100th drain panics");
                tokio::select! {
                    permit = self.gate.acquire() => {
                        permit.expect("open").forget();
                        DrainOutcome::Completed
                    }
                    () = cancel.cancelled() => DrainOutcome::Interrupted,
                }
            })
        }

        fn status(&self, _session: &str, status: SessionStatus) {
            self.statuses.lock().unwrap().push(status);
        }
    }

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn wakes_during_a_drain_coalesce_into_one_follow_up() {
        let drains = Arc::new(Scripted::default());
        for _ in 0..5 {
            Coordinator::wake(&drains, "s", false);
        }
        settle().await;
        assert_eq!(drains.started.load(Ordering::SeqCst), 1);
        drains.gate.add_permits(2);
        assert_eq!(drains.coordinator.wait_idle("s").await, Some(DrainOutcome::Completed));
        assert_eq!(drains.started.load(Ordering::SeqCst), 2, "one follow-up for four wakes");
        assert_eq!(*drains.statuses.lock().unwrap(), [SessionStatus::Busy, SessionStatus::Idle]);
        assert!(drains.coordinator.active().is_empty());
    }

    #[tokio::test]
    async fn interrupt_cancels_the_drain_and_drops_the_follow_up() {
        let drains = Arc::new(Scripted::default());
        Coordinator::wake(&drains, "s", false);
        Coordinator::wake(&drains, "s", false);
        settle().await;
        assert!(drains.coordinator.interrupt("s"));
        assert_eq!(drains.coordinator.wait_idle("s").await, Some(DrainOutcome::Interrupted));
        assert_eq!(drains.started.load(Ordering::SeqCst), 1);
        assert!(!drains.coordinator.interrupt("s"), "idle: a no-op");
    }

    #[tokio::test]
    async fn a_held_session_refuses_a_second_hold_and_drains_after_release() {
        let drains = Arc::new(Scripted::default());
        let hold = Coordinator::hold(&drains, "s").expect("idle");
        assert!(Coordinator::hold(&drains, "s").is_none());
        assert!(!drains.coordinator.interrupt("s"), "a change is not a drain");
        Coordinator::wake(&drains, "s", false);
        settle().await;
        assert_eq!(drains.started.load(Ordering::SeqCst), 0, "no drain while held");
        drop(hold);
        settle().await;
        assert_eq!(drains.started.load(Ordering::SeqCst), 1, "the wake runs on release");
        assert!(Coordinator::hold(&drains, "s").is_none(), "a running drain refuses a hold");
        drains.gate.add_permits(1);
        assert_eq!(drains.coordinator.wait_idle("s").await, Some(DrainOutcome::Completed));
        assert!(Coordinator::hold(&drains, "s").is_some());
    }

    #[tokio::test]
    async fn a_panicking_drain_fails_the_session_instead_of_wedging_it() {
        let drains = Arc::new(Scripted::default());
        drains.started.store(99, Ordering::SeqCst);
        Coordinator::wake(&drains, "s", false);
        let outcome = drains.coordinator.wait_idle("s").await;
        assert!(matches!(outcome, Some(DrainOutcome::Failed { .. })), "{outcome:?}");
        assert!(drains.coordinator.active().is_empty());
    }
}
