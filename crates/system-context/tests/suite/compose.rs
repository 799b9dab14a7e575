//! Composition: combine, the scoped registry, and determinism under concurrent evaluation (NFR-02).

use std::time::Duration;

use opencode_system_context::Reconciled;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextError;
use opencode_system_context::SystemContextRegistry;
use pretty_assertions::assert_eq;

use super::support::Knob;
use super::support::TestSource;
use super::support::key;

#[tokio::test]
async fn combine_preserves_caller_order() {
    let (a, b, c) = (Knob::new("1"), Knob::new("2"), Knob::new("3"));
    let context = SystemContext::combine([
        TestSource::context("t/zeta", &a),
        SystemContext::combine([TestSource::context("t/alpha", &b), SystemContext::empty()]).unwrap(),
        TestSource::context("t/mid", &c),
    ])
    .unwrap();
    let generation = context.initialize().await.unwrap();
    assert_eq!(generation.baseline.text, "t/zeta: 1\n\nt/alpha: 2\n\nt/mid: 3");
    let parts: Vec<(String, String)> =
        generation.baseline.parts.iter().map(|(key, text)| (key.to_string(), text.clone())).collect();
    assert_eq!(
        parts,
        [
            ("t/zeta".into(), "t/zeta: 1".into()),
            ("t/alpha".into(), "t/alpha: 2".into()),
            ("t/mid".into(), "t/mid: 3".into())
        ]
    );
}

#[test]
fn combine_rejects_duplicate_keys() {
    let knob = Knob::new("x");
    let err =
        SystemContext::combine([TestSource::context("t/a", &knob), TestSource::context("t/a", &knob)]).unwrap_err();
    assert_eq!(err, SystemContextError::DuplicateKey { key: key("t/a") });
    assert_eq!(err.to_string(), "duplicate context source key `t/a`");
}

#[tokio::test]
async fn registry_combines_in_contribution_key_order_not_registration_order() {
    let registry = SystemContextRegistry::new();
    let knob = Knob::new("v");
    let _z = registry.register(key("z/last"), TestSource::context("z/source", &knob)).unwrap();
    let _a = registry.register(key("a/first"), TestSource::context("a/source", &knob)).unwrap();
    let context = registry.load().await.unwrap();
    assert_eq!(context.keys().map(|k| k.to_string()).collect::<Vec<_>>(), ["a/source", "z/source"]);
}

#[tokio::test]
async fn duplicate_contribution_keys_and_cross_contribution_source_keys_fail() {
    let registry = SystemContextRegistry::new();
    let knob = Knob::new("v");
    let _first = registry.register(key("p/one"), TestSource::context("s/shared", &knob)).unwrap();
    let again = registry.register(key("p/one"), SystemContext::empty()).unwrap_err();
    assert_eq!(again, SystemContextError::DuplicateContribution { key: key("p/one") });

    let _second = registry.register(key("p/two"), TestSource::context("s/shared", &knob)).unwrap();
    assert_eq!(registry.load().await.unwrap_err(), SystemContextError::DuplicateKey { key: key("s/shared") });
}

#[tokio::test]
async fn dropping_or_revoking_a_contribution_removes_its_sources_at_the_next_load() {
    let registry = SystemContextRegistry::new();
    let knob = Knob::new("v");
    let kept = registry.register(key("p/kept"), TestSource::context("s/kept", &knob)).unwrap();
    let dropped = registry.register(key("p/dropped"), TestSource::context("s/dropped", &knob)).unwrap();
    let revoked = registry.register(key("p/revoked"), TestSource::context("s/revoked", &knob)).unwrap();
    assert_eq!(registry.load().await.unwrap().len(), 3);

    drop(dropped);
    revoked.revoke();
    let context = registry.load().await.unwrap();
    assert_eq!(context.keys().map(|k| k.to_string()).collect::<Vec<_>>(), ["s/kept"]);
    assert_eq!(registry.keys(), [key("p/kept")]);
    drop(kept);
    assert!(registry.load().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_stale_handle_never_removes_a_later_registration_under_the_same_key() {
    let registry = SystemContextRegistry::new();
    let knob = Knob::new("v");
    let old = registry.register(key("p/x"), TestSource::context("s/old", &knob)).unwrap();
    drop(old);
    let new = registry.register(key("p/x"), TestSource::context("s/new", &knob)).unwrap();
    assert_eq!(registry.load().await.unwrap().keys().map(|k| k.to_string()).collect::<Vec<_>>(), ["s/new"]);
    drop(new);
}

/// Contribution key → its sources (in caller order), as registered by [`determinism`].
const LAYOUT: &[(&str, &[&str])] = &[
    ("core/builtins", &["core/environment", "core/date"]),
    ("core/instructions", &["core/instructions"]),
    ("plugin.a/ctx", &["plugin.a/one", "plugin.a/two", "plugin.a/three"]),
    ("plugin.b/ctx", &["plugin.b/z", "plugin.b/a"]),
    ("plugin.c/ctx", &[]),
    ("zz/last", &["zz/only"]),
];

/// NFR-02: randomized loader and producer delays and a randomized registration order never change a
/// single byte of the baseline or of the combined update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendering_is_byte_identical_whatever_order_loaders_finish_in() {
    let expected_baseline: Vec<String> =
        LAYOUT.iter().flat_map(|(_, sources)| sources.iter().map(|s| format!("{s}: v0-{s}"))).collect();
    let expected_baseline = expected_baseline.join("\n\n");
    let changed = ["plugin.b/a", "core/date", "zz/only", "plugin.a/one"];
    // Updates follow render order (contribution key, then caller order), not the order of `changed`.
    let expected_update =
        "core/date is now: v1\n\nplugin.a/one is now: v1\n\nplugin.b/a is now: v1\n\nzz/only is now: v1";

    for iteration in 0..200 {
        let registry = SystemContextRegistry::new();
        let mut knobs = Vec::new();
        let mut order: Vec<usize> = (0..LAYOUT.len()).collect();
        fastrand::shuffle(&mut order);
        let mut handles = Vec::new();
        for index in order {
            let (contribution, sources) = LAYOUT[index];
            let contexts: Vec<SystemContext> = sources
                .iter()
                .map(|source| {
                    let knob = Knob::new(&format!("v0-{source}"));
                    knobs.push((*source, knob.clone()));
                    TestSource::build(source, &knob, false, 300)
                })
                .collect();
            let context = SystemContext::combine(contexts).unwrap();
            let delay = Duration::from_micros(fastrand::u64(0..300));
            let producer = move || {
                let context = context.clone();
                async move {
                    tokio::time::sleep(delay).await;
                    context
                }
            };
            handles.push(registry.register(key(contribution), producer).unwrap());
        }

        let generation = registry.load().await.unwrap().initialize().await.unwrap();
        assert_eq!(generation.baseline.text, expected_baseline, "iteration {iteration}");

        for (source, knob) in &knobs {
            if changed.contains(source) {
                knob.set("v1");
            }
        }
        let reconciled = registry.load().await.unwrap().reconcile(&generation.snapshot).await.unwrap();
        let Reconciled::Updated { text, .. } = reconciled else { panic!("expected an update, got {reconciled:?}") };
        assert_eq!(text, expected_update, "iteration {iteration}");
    }
}
