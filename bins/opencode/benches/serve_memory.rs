#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! The memory of a long-lived `opencode serve` (issue 22): the release binary in its own process, a
//! local OpenAI-compatible mock that keeps nothing, and a load of many short sessions as a team's
//! shared server or a web UI would bring.
//!
//! 1. Idle RSS after start-up.
//! 2. `--sessions` sessions (default 3,000) of `--turns` synchronous prompt turns (default 2), with
//!    `--parallel` sessions at once (default 50); failed turns are counted.
//! 3. RSS right after the load, then after `--idle` seconds (default 10) of idleness, with the
//!    anonymous / file-backed split (`/proc/<pid>/smaps_rollup`) and what `/global/health` reports
//!    of the server's caches and allocator.
//! 4. Turn latency at 100 messages, warm against evicted: a second server whose sessions' caches are
//!    evicted after 1 s idle (`memory.session_idle_seconds`); each sample waits 0.3 s (warm: still
//!    cached) or 1.6 s (evicted, checked through `/global/health`) after the previous turn.
//!
//! `cargo bench -p opencode --bench serve_memory` (or `cargo xtask bench opencode`);
//! `-- --sessions 300 --parallel 300` and so on change the load, `--history-mb N` sets the loaded
//! server's `memory.history_cache_mb`. `OPENCODE_BENCH_BIN` names another
//! `opencode` binary to measure (an older build, for before/after figures). Variables starting with
//! `MALLOC_` and `GLIBC_TUNABLES` are passed on to the server (allocator experiments).

use std::io::BufRead;
use std::path::Path;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use serde_json::Value;
use serde_json::json;

struct Args {
    sessions: usize,
    turns: usize,
    parallel: usize,
    idle: u64,
    latency_samples: usize,
    /// `memory.history_cache_mb` of the loaded server (`None`: the default).
    history_mb: Option<u64>,
}

impl Args {
    fn parse() -> Self {
        let mut args = Self { sessions: 3000, turns: 2, parallel: 50, idle: 10, latency_samples: 15, history_mb: None };
        let mut words = std::env::args().skip(1);
        while let Some(word) = words.next() {
            let mut value = || words.next().and_then(|v| v.parse::<u64>().ok());
            match word.as_str() {
                "--sessions" => args.sessions = value().expect("--sessions N") as usize,
                "--turns" => args.turns = value().expect("--turns N") as usize,
                "--parallel" => args.parallel = value().expect("--parallel N") as usize,
                "--idle" => args.idle = value().expect("--idle SECONDS"),
                "--latency-samples" => args.latency_samples = value().expect("--latency-samples N") as usize,
                "--history-mb" => args.history_mb = Some(value().expect("--history-mb MB")),
                // `cargo bench` passes `--bench`.
                _ => {}
            }
        }
        args
    }
}

fn main() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(run(args));
}

async fn run(args: Args) {
    let mock = mock_provider().await;
    println!(
        "opencode serve (release, own process) against a local mock: {} sessions x {} turns, {} in parallel",
        args.sessions, args.turns, args.parallel
    );
    let root = tempfile::tempdir().unwrap();
    let memory = args.history_mb.map_or_else(|| json!({}), |mb| json!({ "history_cache_mb": mb }));
    let server = Server::start(root.path(), mock, memory).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    println!("idle after start-up: {}", server.memory());

    let started = Instant::now();
    let failed = load(&server, &args).await;
    let elapsed = started.elapsed();
    let turns = args.sessions * args.turns;
    println!(
        "load: {turns} turns in {:.1} s ({:.0} turns/s), failed turns: {failed}",
        elapsed.as_secs_f64(),
        turns as f64 / elapsed.as_secs_f64()
    );
    println!("peak during the load: {:.1} MB (VmHWM)", server.status_kib("VmHWM") as f64 / 1024.0);
    println!("right after the load: {}", server.memory());
    tokio::time::sleep(Duration::from_secs(args.idle)).await;
    println!("after {} s idle: {}", args.idle, server.memory());
    println!("  /global/health memory: {}", server.health_memory().await);
    server.stop();

    println!();
    latency(&args, mock).await;
}

/// Runs the sessions, `parallel` at a time; the number of failed turns.
async fn load(server: &Server, args: &Args) -> usize {
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..args.parallel {
        let (http, url, next, failed) = (server.http.clone(), server.url.clone(), next.clone(), failed.clone());
        let (sessions, turns) = (args.sessions, args.turns);
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < sessions {
                let session = post(&http, &format!("{url}/session"), json!({})).await;
                let Some(id) = session.as_ref().and_then(|s| s["id"].as_str()) else {
                    failed.fetch_add(turns, Ordering::Relaxed);
                    continue;
                };
                for _ in 0..turns {
                    if !turn(&http, &url, id).await {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    failed.load(Ordering::Relaxed)
}

/// One synchronous prompt turn; whether it answered with an assistant message without an error.
async fn turn(http: &reqwest::Client, url: &str, session: &str) -> bool {
    let body = json!({ "parts": [{ "type": "text", "text": "hello" }] });
    let reply = post(http, &format!("{url}/session/{session}/message"), body).await;
    reply.is_some_and(|reply| reply["info"]["role"] == "assistant" && reply["info"]["error"].is_null())
}

/// Warm against evicted turns of a session with 100 messages, on a server whose caches are evicted
/// after 1 s idle.
async fn latency(args: &Args, mock: std::net::SocketAddr) {
    let root = tempfile::tempdir().unwrap();
    let server = Server::start(root.path(), mock, json!({ "session_idle_seconds": 1 })).await;
    let session = post(&server.http, &format!("{}/session", server.url), json!({})).await.unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    for _ in 0..50 {
        assert!(turn(&server.http, &server.url, &id).await, "seeding turn failed");
    }
    let (mut warm, mut evicted) = (Vec::new(), Vec::new());
    for _ in 0..args.latency_samples {
        for (pause, times) in [(300, &mut warm), (1600, &mut evicted)] {
            tokio::time::sleep(Duration::from_millis(pause)).await;
            let held = server.health_memory().await["runtime"]["history"]["sessions"].as_u64();
            let expected = if pause < 1000 { 1 } else { 0 };
            if held.is_some_and(|held| held != expected) {
                println!("  (sample skipped: {held:?} sessions cached, {expected} expected)");
                continue;
            }
            let start = Instant::now();
            assert!(turn(&server.http, &server.url, &id).await, "measured turn failed");
            times.push(start.elapsed());
        }
    }
    server.stop();
    let (warm, evicted) = (middle(warm), middle(evicted));
    println!("turn at ~100 messages (sync prompt, medians of {} samples each):", args.latency_samples);
    println!("  warm {:.2} ms, evicted {:.2} ms ({:+.2} ms)", warm * 1e3, evicted * 1e3, (evicted - warm) * 1e3);
}

fn middle(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times.get(times.len() / 2).map_or(f64::NAN, Duration::as_secs_f64)
}

/// A running `opencode serve`.
struct Server {
    child: Child,
    url: String,
    http: reqwest::Client,
}

impl Server {
    /// Starts the server in a fresh home under `root`, its project configured for the mock and with
    /// `memory` as its `memory` section.
    async fn start(root: &Path, mock: std::net::SocketAddr, memory: Value) -> Self {
        let (home, project) = (root.join("home"), root.join("project"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        let mut config = json!({
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("http://{mock}/v1"), "apiKey": "x"},
                "models": {"m": {"tool_call": true, "limit": {"context": 200_000, "output": 8_000}}}}},
            "model": "mock/m", "small_model": "mock/m"
        });
        if memory.as_object().is_some_and(|m| !m.is_empty()) {
            config["memory"] = memory;
        }
        std::fs::write(project.join("opencode.json"), config.to_string()).unwrap();
        let binary = std::env::var("OPENCODE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_opencode").to_owned());
        let mut command = Command::new(binary);
        command.env_clear().env("HOME", &home).env("OPENCODE_DISABLE_MODELS_FETCH", "1");
        for (name, value) in std::env::vars() {
            if name.starts_with("MALLOC_") || name == "GLIBC_TUNABLES" || name == "RUST_LOG" {
                command.env(name, value);
            }
        }
        let mut child = command
            .current_dir(&project)
            .args(["serve", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn opencode serve");
        let stdout = child.stdout.take().unwrap();
        let url = tokio::task::spawn_blocking(move || {
            let mut lines = std::io::BufReader::new(stdout).lines();
            let url = lines
                .by_ref()
                .map_while(Result::ok)
                .find_map(|line| line.strip_prefix("opencode server listening on ").map(str::to_owned))
                .expect("the server's listening line");
            // Keep reading so that the server never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            url
        })
        .await
        .unwrap();
        Self { child, url, http: reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap() }
    }

    fn status_kib(&self, field: &str) -> u64 {
        proc_field(&format!("/proc/{}/status", self.child.id()), field)
    }

    /// "RSS 42.1 MB (anonymous 30.0, file 12.1)".
    fn memory(&self) -> String {
        let rollup = format!("/proc/{}/smaps_rollup", self.child.id());
        let (rss, anon) = (proc_field(&rollup, "Rss"), proc_field(&rollup, "Anonymous"));
        let mb = |kib: u64| kib as f64 / 1024.0;
        format!(
            "RSS {:.1} MB (anonymous {:.1}, file-backed {:.1}), {} threads",
            mb(rss),
            mb(anon),
            mb(rss.saturating_sub(anon)),
            self.status_kib("Threads")
        )
    }

    /// The `memory` member of `/global/health` (`null` when the server reports none).
    async fn health_memory(&self) -> Value {
        let health = self.http.get(format!("{}/global/health", self.url)).send().await.unwrap();
        health.json::<Value>().await.unwrap()["memory"].take()
    }

    fn stop(mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn proc_field(path: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> Option<Value> {
    let response = http.post(url).json(&body).send().await.ok()?;
    if !response.status().is_success() {
        eprintln!("{url}: {}", response.status());
        return None;
    }
    response.json().await.ok()
}

/// An OpenAI-compatible chat mock on 127.0.0.1 (TCP_NODELAY) answering every request with a short
/// streamed text, keeping nothing.
async fn mock_provider() -> std::net::SocketAddr {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|stream| stream.set_nodelay(true).unwrap());
    let app = axum::Router::new().fallback(|| async {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        let mut body = String::new();
        let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
        frames.extend(["Hello ", "from ", "the ", "mock."].map(|t| chunk(json!({"content": t}), Value::Null)));
        frames.push(chunk(json!({}), json!("stop")));
        frames.push(
            json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}})
            .to_string(),
        );
        frames.push("[DONE]".to_owned());
        for frame in frames {
            body.push_str(&format!("data: {frame}\n\n"));
        }
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(axum::body::Body::from(body))
            .unwrap()
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}
