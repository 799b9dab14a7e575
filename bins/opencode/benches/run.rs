#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode run` from a fresh process against the in-process mock provider (a custom
//! OpenAI-compatible provider): wall time from spawn to exit and peak RSS, for `run "say hi"` and for a
//! run with one tool call (`read`, then the answer). Targets: ≤ 60 ms and ≤ 25 MB for "say hi",
//! ≤ 80 ms with one tool call. OpenCode 1.18 on the same machine: 3.05 s / 604 MB and 3.38 s / 643 MB.
//!
//! `cargo bench -p opencode --bench run` (or `cargo xtask bench opencode`); `-- <runs>` sets the
//! number of measured runs per case (default 20).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use nix::sys::resource::{UsageWho, getrusage};
use opencode_mock_provider::{MockProvider, MockResponse};
use serde_json::json;

/// The mock's answers for one run.
type Script = fn() -> Vec<MockResponse>;

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|arg| arg.parse().ok()).unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio");
    let mock = runtime.block_on(MockProvider::start()).expect("mock provider");
    let root = tempfile::tempdir().expect("temp dir");
    let (home, work) = (root.path().join("home"), root.path().join("work"));
    std::fs::create_dir_all(&home).expect("home");
    std::fs::create_dir_all(&work).expect("work");
    std::fs::write(work.join("hello.txt"), "hello\n").expect("hello.txt");
    let config = json!({
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "x"},
            "models": {"m": {"tool_call": true, "limit": {"context": 200_000, "output": 8_000}}}}},
        "model": "mock/m"
    })
    .to_string();
    println!("opencode run from a fresh process against the mock provider, {runs} runs per case");
    println!("{:<22} {:>9} {:>9} {:>9} {:>13}", "case", "p50 ms", "p90 ms", "max ms", "peak RSS MB");
    let cases: [(&str, Script); 2] =
        [("run \"say hi\"", || vec![text()]), ("run with 1 tool call", || vec![read_call(), text()])];
    for (name, responses) in cases {
        // One unmeasured run creates the database and warms the page cache.
        mock.push_all(responses());
        run_once(&home, &work, &config);
        let before = peak_rss_kb();
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            mock.push_all(responses());
            times.push(run_once(&home, &work, &config));
        }
        // Children's peak RSS only grows: the first case's peak bounds the second's from below.
        let peak = peak_rss_kb().max(before) as f64 / 1024.0;
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        println!("{name:<22} {:>9.1} {:>9.1} {:>9.1} {:>13.1}", at(0.5), at(0.9), at(1.0), peak);
    }
}

/// One `opencode run "say hi"`; its wall time in ms.
fn run_once(home: &Path, work: &Path, config: &str) -> f64 {
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_opencode"))
        .env_clear()
        .env("HOME", home)
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_CONFIG_CONTENT", config)
        .current_dir(work)
        .args(["run", "say hi"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("spawn opencode");
    let elapsed = started.elapsed().as_secs_f64() * 1e3;
    assert!(status.success(), "opencode run failed");
    elapsed
}

/// The largest peak RSS of any child waited for so far, in KiB (Linux reports KiB).
fn peak_rss_kb() -> i64 {
    getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage").max_rss()
}

fn text() -> MockResponse {
    MockResponse::sse([
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi!"}}]}).to_string(),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string(),
        json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 2, "total_tokens": 102}})
            .to_string(),
        "[DONE]".to_owned(),
    ])
}

fn read_call() -> MockResponse {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
                      "function": {"name": "read", "arguments": "{\"filePath\":\"hello.txt\"}"}});
    MockResponse::sse([
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}}]}).to_string(),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}).to_string(),
        "[DONE]".to_owned(),
    ])
}
