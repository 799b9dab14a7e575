//! initialize / reconcile / replace: every outcome.

use opencode_system_context::ContextSource;
use opencode_system_context::Generation;
use opencode_system_context::Loaded;
use opencode_system_context::Reconciled;
use opencode_system_context::Rendering;
use opencode_system_context::Replacement;
use opencode_system_context::Snapshot;
use opencode_system_context::SourceKey;
use opencode_system_context::SourceSnapshot;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextError;
use opencode_system_context::SystemContextRegistry;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Knob;
use super::support::TestSource;
use super::support::key;

fn two(a: &Knob, b: &Knob) -> SystemContext {
    SystemContext::combine([TestSource::context("t/a", a), TestSource::removable("t/b", b)]).unwrap()
}

async fn start(context: &SystemContext) -> Generation {
    context.initialize().await.unwrap()
}

fn updated(result: Reconciled) -> (String, Snapshot) {
    match result {
        Reconciled::Updated { text, snapshot } => (text, snapshot),
        other => panic!("expected Updated, got {other:?}"),
    }
}

#[tokio::test]
async fn initialize_renders_baseline_parts_and_snapshot() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let generation = start(&two(&a, &b)).await;
    assert_eq!(generation.baseline.text, "t/a: 1\n\nt/b: 2");
    assert_eq!(generation.baseline.parts.get(&key("t/b")).map(String::as_str), Some("t/b: 2"));
    assert_eq!(
        generation.snapshot.to_json(),
        json!({"t/a": {"value": "1"}, "t/b": {"value": "2", "removed": "t/b is gone"}})
    );
}

#[tokio::test]
async fn initialize_is_blocked_by_any_unavailable_source() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    b.unavailable();
    let err = two(&a, &b).initialize().await.unwrap_err();
    assert_eq!(err, SystemContextError::InitializationBlocked { keys: vec![key("t/b")] });
    assert!(err.is_blocked());
    assert_eq!(err.to_string(), "system context initialization blocked by unavailable sources: t/b");
}

#[tokio::test]
async fn unchanged_values_reconcile_to_unchanged_even_through_stored_json() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let context = two(&a, &b);
    let generation = start(&context).await;
    let stored = Snapshot::from_json(&generation.snapshot.to_json()).unwrap();
    assert_eq!(context.reconcile(&stored).await.unwrap(), Reconciled::Unchanged);
}

#[tokio::test]
async fn changed_sources_combine_into_one_message_and_advance_the_snapshot() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let context = two(&a, &b);
    let generation = start(&context).await;
    a.set("10");
    b.set("20");
    let (text, snapshot) = updated(context.reconcile(&generation.snapshot).await.unwrap());
    assert_eq!(text, "t/a is now: 10\n\nt/b is now: 20");
    assert_eq!(snapshot.get(&key("t/a")).unwrap().value, json!("10"));
    assert_eq!(context.reconcile(&snapshot).await.unwrap(), Reconciled::Unchanged);
}

#[tokio::test]
async fn unavailable_keeps_the_admitted_state_and_emits_nothing_until_it_loads_again() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let context = two(&a, &b);
    let generation = start(&context).await;

    a.unavailable();
    assert_eq!(context.reconcile(&generation.snapshot).await.unwrap(), Reconciled::Unchanged);

    // Another source changes while `t/a` is still unavailable: `t/a` keeps its admitted value.
    b.set("3");
    let (text, snapshot) = updated(context.reconcile(&generation.snapshot).await.unwrap());
    assert_eq!(text, "t/b is now: 3");
    assert_eq!(snapshot.get(&key("t/a")), generation.snapshot.get(&key("t/a")));

    // Available again with a new value: compared against what was admitted before the outage.
    a.set("5");
    let (text, _) = updated(context.reconcile(&snapshot).await.unwrap());
    assert_eq!(text, "t/a is now: 5");
}

#[tokio::test]
async fn a_newly_registered_source_emits_its_baseline_once() {
    let registry = SystemContextRegistry::new();
    let (a, fresh) = (Knob::new("1"), Knob::new("new"));
    let _a = registry.register(key("p/a"), TestSource::context("t/a", &a)).unwrap();
    let generation = start(&registry.load().await.unwrap()).await;

    let _fresh = registry.register(key("p/fresh"), TestSource::context("t/fresh", &fresh)).unwrap();
    let context = registry.load().await.unwrap();
    let (text, snapshot) = updated(context.reconcile(&generation.snapshot).await.unwrap());
    assert_eq!(text, "t/fresh: new");
    assert_eq!(context.reconcile(&snapshot).await.unwrap(), Reconciled::Unchanged);
}

#[tokio::test]
async fn a_never_admitted_unavailable_source_is_omitted_until_it_first_loads() {
    let (a, late) = (Knob::new("1"), Knob::new("late"));
    let generation = start(&TestSource::context("t/a", &a)).await;
    late.unavailable();
    let context =
        SystemContext::combine([TestSource::context("t/a", &a), TestSource::context("t/late", &late)]).unwrap();
    assert_eq!(context.reconcile(&generation.snapshot).await.unwrap(), Reconciled::Unchanged);
    late.set("here");
    let (text, _) = updated(context.reconcile(&generation.snapshot).await.unwrap());
    assert_eq!(text, "t/late: here");
}

#[tokio::test]
async fn a_removed_source_with_a_removal_renderer_emits_its_removal_text_after_updates() {
    let registry = SystemContextRegistry::new();
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let _a = registry.register(key("p/a"), TestSource::context("t/a", &a)).unwrap();
    let b_handle = registry.register(key("p/b"), TestSource::removable("t/b", &b)).unwrap();
    let generation = start(&registry.load().await.unwrap()).await;

    b_handle.revoke();
    a.set("9");
    let (text, snapshot) = updated(registry.load().await.unwrap().reconcile(&generation.snapshot).await.unwrap());
    assert_eq!(text, "t/a is now: 9\n\nt/b is gone");
    assert_eq!(snapshot.keys().map(|k| k.to_string()).collect::<Vec<_>>(), ["t/a"]);
}

#[tokio::test]
async fn a_removed_source_without_removal_text_forces_a_replacement() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let generation = start(&two(&a, &b)).await;
    // `t/a` has no removal renderer; it disappears.
    let context = TestSource::removable("t/b", &b);
    let Reconciled::ReplacementReady(next) = context.reconcile(&generation.snapshot).await.unwrap() else {
        panic!("expected a replacement");
    };
    assert_eq!(next.baseline.text, "t/b: 2");
    assert_eq!(next.snapshot.keys().map(|k| k.to_string()).collect::<Vec<_>>(), ["t/b"]);
}

#[tokio::test]
async fn a_needed_replacement_is_blocked_while_admitted_context_is_unavailable() {
    let (a, b) = (Knob::new("1"), Knob::new("2"));
    let generation = start(&two(&a, &b)).await;
    b.unavailable();
    let context = TestSource::removable("t/b", &b);
    assert_eq!(
        context.reconcile(&generation.snapshot).await.unwrap(),
        Reconciled::ReplacementBlocked { keys: vec![key("t/b")] }
    );
}

#[tokio::test]
async fn a_stored_value_the_codec_can_no_longer_read_forces_a_replacement() {
    let a = Knob::new("1");
    let context = TestSource::context("t/a", &a);
    // An older build stored a number where the source now reads a string.
    let stored = Snapshot::from_json(&json!({"t/a": {"value": 42}})).unwrap();
    let Reconciled::ReplacementReady(next) = context.reconcile(&stored).await.unwrap() else {
        panic!("expected a replacement");
    };
    assert_eq!(next.baseline.text, "t/a: 1");
}

#[tokio::test]
async fn replace_renders_a_fresh_generation_or_blocks_on_admitted_unavailable_context() {
    let (a, b, never) = (Knob::new("1"), Knob::new("2"), Knob::new("x"));
    let generation = start(&two(&a, &b)).await;
    never.unavailable();
    a.set("7");
    let context = SystemContext::combine([two(&a, &b), TestSource::context("t/never", &never)]).unwrap();
    let Replacement::Ready(next) = context.replace(&generation.snapshot).await.unwrap() else {
        panic!("expected a ready replacement");
    };
    // The never-admitted unavailable source is left out rather than blocking.
    assert_eq!(next.baseline.text, "t/a: 7\n\nt/b: 2");

    b.unavailable();
    assert_eq!(context.replace(&generation.snapshot).await.unwrap(), Replacement::Blocked { keys: vec![key("t/b")] });
}

struct Silent(SourceKey);

impl ContextSource for Silent {
    type Value = u8;
    fn key(&self) -> &SourceKey {
        &self.0
    }
    async fn load(&self) -> Loaded<u8> {
        Loaded::Value(1)
    }
    fn baseline(&self, _: &u8) -> String {
        String::new()
    }
    fn update(&self, _: &u8, _: &u8) -> String {
        String::new()
    }
}

#[tokio::test]
async fn an_empty_rendering_is_reported_as_a_defect_of_that_source() {
    let context = SystemContext::make(Silent(key("t/silent")));
    let err = context.initialize().await.unwrap_err();
    assert_eq!(err, SystemContextError::EmptyRendering { key: key("t/silent"), rendering: Rendering::Baseline });

    let mut stored = serde_json::Map::new();
    stored.insert("t/silent".into(), serde_json::to_value(SourceSnapshot { value: json!(2), removed: None }).unwrap());
    let stored = Snapshot::from_json(&serde_json::Value::Object(stored)).unwrap();
    let err = context.reconcile(&stored).await.unwrap_err();
    assert_eq!(err, SystemContextError::EmptyRendering { key: key("t/silent"), rendering: Rendering::Update });
}
