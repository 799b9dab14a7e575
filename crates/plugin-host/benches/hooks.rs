#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-plugin-host` benchmarks (`cargo xtask bench opencode-plugin-host`, or
//! `cargo bench -p opencode-plugin-host --bench hooks`).
//!
//! 1. Hook dispatch overhead: `trigger::<chat.params>` with no plugins, one Rust plugin, and ten.
//! 2. The hooks behind the runtime's other seams (`permission.ask`, `shell.env`, `tool.definition`
//!    over 20 tools, `chat.message`) with no plugin implementing them and with one Rust plugin.
//! 3. External plugin round-trip: `chat.params` through the Python test plugin over JSON-RPC stdio.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use opencode_llm::ContentPart;
use opencode_llm::ToolDefinition;

use opencode_plugin_host::ChatInput;
use opencode_plugin_host::ChatMessageInput;
use opencode_plugin_host::ChatMessageOutput;
use opencode_plugin_host::ChatParamsOutput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::PermissionInput;
use opencode_plugin_host::PermissionOutput;
use opencode_plugin_host::PermissionStatus;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginPermissions;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::ShellEnvInput;
use opencode_plugin_host::ShellEnvOutput;
use opencode_plugin_host::ToolDefinitionInput;
use opencode_plugin_host::ToolDefinitionOutput;
use opencode_plugin_host::external::ExternalPlugin;
use opencode_plugin_host::external::ExternalSpec;
use opencode_plugin_host::hook;
use opencode_tool_registry::PermissionAsk;
use opencode_tool_registry::PermissionHook;
use opencode_tool_registry::PermissionQuery;

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
        println!();
        println!("seam hooks, ns / call");
        println!("{:<28} {:>12} {:>12}", "hook", "no plugin", "1 Rust");
        seams().await;
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

/// Implements the seam hooks with trivial bodies.
struct Seams;

impl Plugin for Seams {
    fn namespace(&self) -> &str {
        "seams"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::PermissionAsk, HookName::ShellEnv, HookName::ToolDefinition, HookName::ChatMessage])
    }

    fn permission_ask<'a>(&'a self, _: &'a PermissionInput, output: &'a mut PermissionOutput) -> HookFuture<'a> {
        output.status = PermissionStatus::Allow;
        Box::pin(async { Ok(()) })
    }

    fn shell_env<'a>(&'a self, _: &'a ShellEnvInput, output: &'a mut ShellEnvOutput) -> HookFuture<'a> {
        output.env.insert("K".into(), "v".into());
        Box::pin(async { Ok(()) })
    }

    fn tool_definition<'a>(
        &'a self,
        _: &'a ToolDefinitionInput,
        output: &'a mut ToolDefinitionOutput,
    ) -> HookFuture<'a> {
        output.description.replace_range(.., "A tool.");
        Box::pin(async { Ok(()) })
    }

    fn chat_message<'a>(&'a self, _: &'a ChatMessageInput, output: &'a mut ChatMessageOutput) -> HookFuture<'a> {
        output.parts.truncate(1);
        Box::pin(async { Ok(()) })
    }
}

async fn seams() {
    let none = PluginHost::builder().build();
    none.ready().await.expect("ready");
    let one = PluginHost::builder().plugin(Arc::new(Seams), Requirement::Required).build();
    one.ready().await.expect("ready");
    let ask = PermissionAsk { permission: "read".into(), patterns: vec![".env".into()], ..PermissionAsk::default() };
    let query = PermissionQuery { session_id: "ses_1", agent: "build", tool: None, ask: &ask };
    let shell = ShellEnvInput { cwd: PathBuf::from("/tmp"), session_id: None, call_id: None };
    let schema = serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}});
    let mut tools: Vec<ToolDefinition> =
        (0..20).map(|i| ToolDefinition::new(format!("tool{i}"), "A tool.", schema.clone())).collect();
    let message = ChatMessageInput::default();
    let mut parts = vec![ContentPart::text("hi")];
    for (name, runs) in
        [("permission.ask", 0), ("shell.env", 1), ("tool.definition (20 tools)", 2), ("chat.message", 3)]
    {
        let mut figures = Vec::new();
        for host in [&none, &one] {
            let permissions = PluginPermissions::new(host.clone());
            let iterations = 200_000;
            let begun = Instant::now();
            for _ in 0..iterations {
                match runs {
                    0 => {
                        std::hint::black_box(permissions.decide(std::hint::black_box(query)).await);
                    }
                    1 => {
                        std::hint::black_box(host.shell_env(std::hint::black_box(&shell)).await);
                    }
                    2 => {
                        std::hint::black_box(host.apply_tool_definitions(&mut tools).await);
                    }
                    _ => {
                        std::hint::black_box(host.apply_chat_message(&message, &mut parts).await);
                    }
                }
            }
            figures.push(begun.elapsed().as_nanos() as f64 / f64::from(iterations));
        }
        println!("{name:<28} {:>12.1} {:>12.1}", figures[0], figures[1]);
    }
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
