#![allow(clippy::unwrap_used, clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-mcp` benchmarks (run with `cargo xtask bench opencode-mcp`, or
//! `cargo bench -p opencode-mcp --bench mcp`).
//!
//! 1. Start-up cost with no servers configured, and with one local server (start returns before
//!    any handshake; `settled` is the background connect: spawn node + handshake + tools/list).
//! 2. Tool-call round-trip over stdio against the scripted Node server (`tests/servers/scripted.mjs`):
//!    a raw `tools/call` through the registry (permission check, bounding, settlement included).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use indexmap::IndexMap;
use opencode_config::ToolOutputConfig;
use opencode_mcp::McpManager;
use opencode_mcp::McpOptions;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::Location;
use opencode_tool_registry::NoProgress;
use opencode_tool_registry::OutputStore;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolRegistry;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CALLS: usize = 2000;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let temp = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(temp.path()).unwrap();
    let empty = IndexMap::new();
    let started = Instant::now();
    for _ in 0..1000 {
        let manager = McpManager::start(&empty, McpOptions::new(&project));
        manager.settled().await;
    }
    println!("start + settled, no servers configured: {:>10.2?} per manager", started.elapsed() / 1000);

    if std::process::Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipping the stdio round-trip benchmark: node not found");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/scripted.mjs");
    let config: IndexMap<String, opencode_config::McpConfig> =
        serde_json::from_value(json!({"bench": {"type": "local", "command": ["node", script]}})).unwrap();
    let output = OutputStore::new(project.join("tool-output"), ToolOutputConfig::default());
    let location = Location::new(&project, output.dir()).unwrap();
    let registry = Arc::new(ToolRegistry::new(location, output).unwrap());

    let started = Instant::now();
    let manager = McpManager::start(&config, McpOptions::new(&project));
    let returned = started.elapsed();
    manager.attach(&registry);
    manager.settled().await;
    let connected = started.elapsed();
    println!("start returns with one local server:     {returned:>10.2?}");
    println!("background connect (node spawn + init + tools/list): {connected:>10.2?}");

    let dirs = AgentDirs { tool_output: project.join("tool-output"), ..AgentDirs::default() };
    let agents = Agents::new(&dirs, None, &IndexMap::new());
    let ctx = ToolContext {
        session_id: "ses_bench".into(),
        message_id: "msg_bench".into(),
        call_id: "call_bench".into(),
        agent: agents.get("build").unwrap(),
        location: Arc::clone(registry.location()),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::in_memory()),
        progress: Arc::new(NoProgress),
        output: registry.output().clone(),
        editor: None,
    };
    let mut samples = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        // Distinct inputs: identical consecutive calls would trigger the doom-loop ask.
        let call = ToolCall { call_id: format!("call_{i}"), name: "bench_ok".into(), input: json!({"i": i}) };
        let started = Instant::now();
        let settlement = registry.execute(&call, &ctx).await.unwrap();
        samples.push(started.elapsed());
        assert_eq!(settlement.status, SettlementStatus::Completed);
    }
    samples.sort();
    let mean = samples.iter().sum::<Duration>() / u32::try_from(CALLS).unwrap();
    println!(
        "tools/call round-trip over stdio via the registry ({CALLS} calls): mean {mean:.2?}, p50 {:.2?}, p99 {:.2?}",
        samples[CALLS / 2],
        samples[CALLS * 99 / 100]
    );
    manager.shutdown();
}
