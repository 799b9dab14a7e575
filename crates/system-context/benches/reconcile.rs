#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-system-context` benchmark (run with `cargo xtask bench`, or
//! `cargo bench -p opencode-system-context --bench reconcile`).
//!
//! Reconcile of 20 sources where nothing changed, with loaders that return at once (so the figure is
//! the composition's own cost, "plus loader time" being zero): `reconcile` alone on a composed
//! context, and `registry.load()` + `reconcile` with one contribution per source. Values are
//! realistic: short strings, a structured environment, and a 4 KiB instruction file.

use std::time::Duration;
use std::time::Instant;

use opencode_system_context::ContextSource;
use opencode_system_context::Loaded;
use opencode_system_context::Reconciled;
use opencode_system_context::SourceKey;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextRegistry;
use serde::Deserialize;
use serde::Serialize;

const SOURCES: usize = 20;
const ROUNDS: usize = 25;
const PER_ROUND: usize = 2_000;

#[derive(Clone, Serialize, Deserialize)]
struct Value {
    title: String,
    lines: Vec<String>,
    flag: bool,
}

struct Fixed {
    key: SourceKey,
    value: Value,
}

impl ContextSource for Fixed {
    type Value = Value;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<Value> {
        Loaded::Value(self.value.clone())
    }

    fn baseline(&self, current: &Value) -> String {
        format!("{}\n{}", current.title, current.lines.join("\n"))
    }

    fn update(&self, _previous: &Value, current: &Value) -> String {
        format!("Now: {}", self.baseline(current))
    }

    fn removed(&self, _previous: &Value) -> Option<String> {
        Some(format!("{} no longer applies.", self.key))
    }
}

fn source(index: usize) -> SystemContext {
    // One source carries a 4 KiB instruction-sized body; the rest are a few short lines.
    let lines = if index == 0 {
        vec!["- keep functions short and documented".repeat(110)]
    } else {
        (0..4).map(|line| format!("fact {line} of source {index}: some value")).collect()
    };
    SystemContext::make(Fixed {
        key: SourceKey::new(format!("bench/source-{index:02}")).expect("valid key"),
        value: Value { title: format!("Source {index}"), lines, flag: index.is_multiple_of(2) },
    })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let context = SystemContext::combine((0..SOURCES).map(source)).expect("distinct keys");
    let registry = SystemContextRegistry::new();
    let _handles: Vec<_> = (0..SOURCES)
        .map(|index| registry.register(SourceKey::new(format!("bench/c-{index:02}")).expect("key"), source(index)))
        .collect::<Result<_, _>>()
        .expect("register");
    let snapshot = runtime.block_on(context.initialize()).expect("initialize").snapshot;

    let reconcile = measure(|| {
        let result = runtime.block_on(context.reconcile(&snapshot)).expect("reconcile");
        assert!(result == Reconciled::Unchanged);
    });
    let with_registry = measure(|| {
        let result = runtime.block_on(async {
            let context = registry.load().await.expect("load");
            context.reconcile(&snapshot).await
        });
        assert!(result.expect("reconcile") == Reconciled::Unchanged);
    });
    println!("reconcile of {SOURCES} unchanged sources (loaders return at once), one core");
    println!("{:<40} {:>12} {:>12}", "", "median", "best");
    print_row("SystemContext::reconcile", &reconcile);
    print_row("registry.load() + reconcile", &with_registry);
    println!("target: <= 50 µs plus loader time");
}

/// Per-call times of `ROUNDS` rounds of `PER_ROUND` calls each, sorted.
fn measure(mut call: impl FnMut()) -> Vec<Duration> {
    for _ in 0..PER_ROUND {
        call();
    }
    let mut rounds: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..PER_ROUND {
                call();
            }
            start.elapsed() / PER_ROUND as u32
        })
        .collect();
    rounds.sort();
    rounds
}

fn print_row(name: &str, rounds: &[Duration]) {
    let micros = |d: Duration| format!("{:.2} µs", d.as_secs_f64() * 1e6);
    println!("{name:<40} {:>12} {:>12}", micros(rounds[rounds.len() / 2]), micros(rounds[0]));
}
