#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-plugin-host` benchmarks (`cargo xtask bench opencode-plugin-host`, or
//! `cargo bench -p opencode-plugin-host --bench hooks`).
//!
//! 1. Hook dispatch overhead: `trigger::<chat.params>` with no plugins, one Rust plugin, and ten.
//! 2. External plugin round-trip: `chat.params` through the Python test plugin over JSON-RPC stdio.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use opencode_plugin_host::ChatInput;
use opencode_plugin_host::ChatParamsOutput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::external::ExternalPlugin;
use opencode_plugin_host::external::ExternalSpec;
use opencode_plugin_host::hook;

struct Warm(String);

impl Plugin for Warm {
    fn namespace(&self) -> &str {
        &self.0
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatParams])
    }

    fn chat_params<'a>(&'a self, _input: &'a ChatInput, output: &'a mut ChatParamsOutput) -> HookFuture<'a> {
        output.temperature = Some(output.temperature.unwrap_or(0.0) + 0.1);
        Box::pin(async { Ok(()) })
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    runtime.block_on(async {
        println!("hook dispatch: trigger::<chat.params>, one current-thread runtime");
        println!("{:<28} {:>12} {:>16}", "plugins", "ns / call", "ns / plugin call");
        for count in [0, 1, 10] {
            dispatch(count).await;
        }
        external().await;
    });
}

async fn dispatch(count: usize) {
    let mut builder = PluginHost::builder();
    for index in 0..count {
        builder = builder.plugin(Arc::new(Warm(format!("warm{index}"))), Requirement::Required);
    }
    let host = builder.build();
    host.ready().await.expect("ready");
    let input = ChatInput::default();
    let iterations = if count == 0 { 10_000_000 } else { 1_000_000 };
    let mut output = ChatParamsOutput::default();
    let begun = Instant::now();
    for _ in 0..iterations {
        output.temperature = None;
        let failures = host.trigger::<hook::ChatParams>(std::hint::black_box(&input), &mut output).await;
        std::hint::black_box(failures);
    }
    let per_call = begun.elapsed().as_nanos() as f64 / iterations as f64;
    let per_plugin = if count == 0 { "-".to_owned() } else { format!("{:.1}", per_call / count as f64) };
    println!("{:<28} {:>12.1} {:>16}", format!("{count} Rust"), per_call, per_plugin);
}

async fn external() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/acme.py");
    let spec = ExternalSpec::new("acme", vec!["python3".into(), script.display().to_string(), "normal".into()]);
    let host = PluginHost::builder().plugin(Arc::new(ExternalPlugin::new(spec)), Requirement::Required).build();
    let begun = Instant::now();
    if let Err(err) = host.ready().await {
        println!("skipping the external round-trip: {err}");
        return;
    }
    let start = begun.elapsed();
    let input = ChatInput::default();
    let mut samples: Vec<Duration> = Vec::new();
    for _ in 0..2000 {
        let mut output = ChatParamsOutput::default();
        let call = Instant::now();
        let failures = host.trigger::<hook::ChatParams>(&input, &mut output).await;
        samples.push(call.elapsed());
        assert!(failures.is_empty(), "{failures:?}");
    }
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!();
    println!("external plugin (python3 JSON-RPC over stdio), chat.params round-trip, 2000 calls");
    println!("start + initialize handshake: {:.1} ms", start.as_secs_f64() * 1e3);
    println!(
        "mean {:.1} µs   p50 {:.1} µs   p99 {:.1} µs",
        mean.as_secs_f64() * 1e6,
        at(0.5).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6
    );
    host.shutdown().await;
}
