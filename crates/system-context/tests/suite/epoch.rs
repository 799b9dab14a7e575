//! Epoch preparation against a store with an optimistic revision, including concurrent writers.

use std::convert::Infallible;
use std::sync::Mutex;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering;

use opencode_system_context::Committed;
use opencode_system_context::EpochChange;
use opencode_system_context::EpochError;
use opencode_system_context::EpochPreparation;
use opencode_system_context::EpochStore;
use opencode_system_context::Prepared;
use opencode_system_context::Revision;
use opencode_system_context::StoredEpoch;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextError;
use opencode_system_context::prepare_epoch;
use pretty_assertions::assert_eq;

use super::support::Knob;
use super::support::TestSource;
use super::support::key;

/// The epoch row (and its baseline text), if any.
type Row = Option<(StoredEpoch, String)>;
type Interference = Box<dyn FnOnce(&mut Row) + Send>;

/// An in-memory epoch row. `interference` runs before each commit, standing in for a concurrent
/// writer (it may mutate the row, bumping its revision).
#[derive(Default)]
struct MemoryStore {
    row: Mutex<Row>,
    commits: Mutex<Vec<(Option<Revision>, EpochChange)>>,
    interference: Mutex<Vec<Interference>>,
}

impl MemoryStore {
    fn baseline(&self) -> Option<String> {
        self.row.lock().unwrap().as_ref().map(|(_, baseline)| baseline.clone())
    }

    fn interfere(&self, change: impl FnOnce(&mut Row) + Send + 'static) {
        self.interference.lock().unwrap().push(Box::new(change));
    }
}

impl EpochStore for MemoryStore {
    type Error = Infallible;

    async fn load(&self) -> Result<Option<StoredEpoch>, Infallible> {
        Ok(self.row.lock().unwrap().as_ref().map(|(epoch, _)| epoch.clone()))
    }

    async fn commit(&self, expected: Option<Revision>, change: EpochChange) -> Result<Committed, Infallible> {
        let mut row = self.row.lock().unwrap();
        if let Some(interfere) = self.interference.lock().unwrap().pop() {
            interfere(&mut row);
        }
        self.commits.lock().unwrap().push((expected, change.clone()));
        if row.as_ref().map(|(epoch, _)| epoch.revision) != expected {
            return Ok(Committed::RevisionMismatch);
        }
        let next = expected.map_or(0, |revision| revision + 1);
        *row = Some(match change {
            EpochChange::Initialize(generation) | EpochChange::Replace(generation) => (
                StoredEpoch { revision: next, snapshot: generation.snapshot.to_json(), replacement_requested: false },
                generation.baseline.text,
            ),
            EpochChange::Advance { snapshot, .. } => {
                let (epoch, baseline) = row.take().unwrap();
                (StoredEpoch { revision: next, snapshot: snapshot.to_json(), ..epoch }, baseline)
            }
        });
        Ok(Committed::Applied)
    }
}

fn request_replacement(row: &mut Row) {
    let (epoch, _) = row.as_mut().unwrap();
    epoch.revision += 1;
    epoch.replacement_requested = true;
}

async fn prepare(store: &MemoryStore, context: &SystemContext) -> Result<Prepared, EpochError<Infallible>> {
    let context = context.clone();
    prepare_epoch(store, move || std::future::ready(Ok(context.clone())), EpochPreparation::default()).await
}

#[tokio::test]
async fn the_first_boundary_initializes_the_epoch() {
    let store = MemoryStore::default();
    let knob = Knob::new("1");
    let prepared = prepare(&store, &TestSource::context("t/a", &knob)).await.unwrap();
    let Prepared::Initialized(generation) = prepared else { panic!("expected Initialized, got {prepared:?}") };
    assert_eq!(generation.baseline.text, "t/a: 1");
    assert_eq!(store.baseline().as_deref(), Some("t/a: 1"));
    assert_eq!(store.commits.lock().unwrap()[0].0, None);
}

#[tokio::test]
async fn later_boundaries_advance_the_snapshot_or_do_nothing() {
    let store = MemoryStore::default();
    let knob = Knob::new("1");
    let context = TestSource::context("t/a", &knob);
    prepare(&store, &context).await.unwrap();
    assert_eq!(prepare(&store, &context).await.unwrap(), Prepared::Unchanged);

    knob.set("2");
    assert_eq!(prepare(&store, &context).await.unwrap(), Prepared::Updated { text: "t/a is now: 2".into() });
    assert_eq!(prepare(&store, &context).await.unwrap(), Prepared::Unchanged);
    // The baseline stays the epoch's immutable prefix.
    assert_eq!(store.baseline().as_deref(), Some("t/a: 1"));
    assert_eq!(store.commits.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_concurrent_replacement_request_is_retried_into_a_replacement_not_an_error() {
    let store = MemoryStore::default();
    let knob = Knob::new("1");
    let context = TestSource::context("t/a", &knob);
    prepare(&store, &context).await.unwrap();

    knob.set("2");
    store.interfere(request_replacement);
    let observations = AtomicU32::new(0);
    let prepared = prepare_epoch(
        &store,
        || {
            observations.fetch_add(1, Ordering::Relaxed);
            std::future::ready(Ok(context.clone()))
        },
        EpochPreparation::default(),
    )
    .await
    .unwrap();
    let Prepared::Replaced(generation) = prepared else { panic!("expected Replaced, got {prepared:?}") };
    assert_eq!(generation.baseline.text, "t/a: 2");
    assert_eq!(store.baseline().as_deref(), Some("t/a: 2"));
    // The retry re-observed the context.
    assert_eq!(observations.load(Ordering::Relaxed), 2);
    let commits = store.commits.lock().unwrap();
    assert!(matches!(commits[1], (Some(0), EpochChange::Advance { .. })));
    assert!(matches!(commits[2], (Some(1), EpochChange::Replace(_))));
}

#[tokio::test]
async fn a_requested_replacement_waits_while_admitted_context_is_unavailable() {
    let store = MemoryStore::default();
    let knob = Knob::new("1");
    let context = TestSource::context("t/a", &knob);
    prepare(&store, &context).await.unwrap();
    request_replacement(&mut store.row.lock().unwrap());
    knob.unavailable();
    assert_eq!(prepare(&store, &context).await.unwrap(), Prepared::ReplacementBlocked { keys: vec![key("t/a")] });
    knob.set("3");
    assert!(matches!(prepare(&store, &context).await.unwrap(), Prepared::Replaced(_)));
}

#[tokio::test]
async fn blocked_initialization_writes_nothing() {
    let store = MemoryStore::default();
    let knob = Knob::new("1");
    knob.unavailable();
    let err = prepare(&store, &TestSource::context("t/a", &knob)).await.unwrap_err();
    assert!(matches!(err, EpochError::Context(SystemContextError::InitializationBlocked { .. })), "{err}");
    assert!(store.commits.lock().unwrap().is_empty());
}

#[tokio::test]
async fn endless_interference_ends_as_unstable_after_the_bound() {
    let store = MemoryStore::default();
    let knob = Knob::new("1");
    let context = TestSource::context("t/a", &knob);
    prepare(&store, &context).await.unwrap();
    knob.set("2");
    for _ in 0..3 {
        store.interfere(|row| row.as_mut().unwrap().0.revision += 1);
    }
    let context_for_retry = context.clone();
    let err = prepare_epoch(
        &store,
        move || std::future::ready(Ok(context_for_retry.clone())),
        EpochPreparation { max_attempts: 3 },
    )
    .await
    .unwrap_err();
    assert!(matches!(err, EpochError::Unstable { attempts: 3 }), "{err}");
    assert_eq!(err.hint(), "another writer keeps changing this session's epoch; retry the run");
}
