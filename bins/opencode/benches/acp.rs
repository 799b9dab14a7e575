#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! `opencode acp` as an editor sees it: the release binary in its own process over stdio, against a
//! local OpenAI-compatible mock that answers at once.
//!
//! 1. Ready: spawn → `initialize` answered → `session/new` answered (median of `--starts`, default 10).
//! 2. Per prompt: `session/prompt` → its answer, every `session/update` read on the way (median of
//!    `--prompts`, default 50, in one session), against `SessionRuntime::run` of the same prompt in
//!    this process (the runtime alone, assembled as the agent assembles it), the two taken in turn
//!    so that the load of a shared machine weighs on both alike; the difference of the medians is
//!    what ACP (and its process boundary) adds per prompt.
//! 3. RSS of the agent after `session/new` and after the prompts (`VmRSS`, and the peak `VmHWM`).
//!
//! The same, except the in-process baseline, for OpenCode 1.18.34's `opencode acp` when its binary
//! is at `OPENCODE_PEER_BIN` or `/tmp/peer/node_modules/opencode-linux-x64/bin/opencode` (install:
//! `mkdir -p /tmp/peer && cd /tmp/peer && npm install opencode-linux-x64@1.18.34 --ignore-scripts`).
//!
//! `cargo bench -p opencode --bench acp [-- --starts N --prompts N]`; `OPENCODE_BENCH_BIN` names
//! another `opencode` binary to measure.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use opencode_session_runtime::PromptRequest;
use serde_json::{Value, json};

struct Args {
    starts: usize,
    prompts: usize,
}

impl Args {
    fn parse() -> Self {
        let mut args = Self { starts: 10, prompts: 50 };
        let mut words = std::env::args().skip(1);
        while let Some(word) = words.next() {
            let mut value = || words.next().and_then(|v| v.parse::<usize>().ok());
            match word.as_str() {
                "--starts" => args.starts = value().expect("--starts N"),
                "--prompts" => args.prompts = value().expect("--prompts N"),
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
    let mock = runtime.block_on(mock_provider());
    let ours = std::env::var("OPENCODE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_opencode").to_owned());
    println!(
        "opencode acp (own process, stdio) against a local mock; {} starts, {} prompts",
        args.starts, args.prompts
    );
    let home = tempfile::tempdir().unwrap();
    let project = project_dir(home.path(), mock);
    let agent = Agent::Ours(PathBuf::from(ours));
    let mut baseline = runtime.block_on(Baseline::new(home.path(), &project));
    let mut alone = Vec::new();
    let ours = measure(&agent, home.path(), &project, &args, &mut || alone.push(runtime.block_on(baseline.sample())));
    let alone = median(alone);
    report("ours", &ours);
    println!(
        "  runtime alone (in-process SessionRuntime::run): {:.3} ms per prompt; ACP adds {:.3} ms",
        ms(alone),
        ms(ours.prompt) - ms(alone)
    );
    match peer() {
        Some(binary) => {
            let peer_home = tempfile::tempdir().unwrap();
            let peer_project = project_dir(peer_home.path(), mock);
            let peer = measure(&Agent::Peer(binary), peer_home.path(), &peer_project, &args, &mut || {});
            report("OpenCode 1.18.34", &peer);
        }
        None => println!("OpenCode 1.18.34 not found (set OPENCODE_PEER_BIN); skipped"),
    }
}

/// What one agent measured.
struct Figures {
    ready: Duration,
    prompt: Duration,
    rss_ready_kib: u64,
    rss_after_kib: u64,
    peak_kib: u64,
}

fn report(name: &str, figures: &Figures) {
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!(
        "{name}: ready {:.1} ms; prompt {:.3} ms; RSS {:.1} MB after session/new, {:.1} MB after the prompts (peak {:.1} MB)",
        ms(figures.ready),
        ms(figures.prompt),
        mb(figures.rss_ready_kib),
        mb(figures.rss_after_kib),
        mb(figures.peak_kib)
    );
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A project directory with the mock as its model (and small model).
fn project_dir(home: &Path, mock: std::net::SocketAddr) -> PathBuf {
    let project = home.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let config = opencode_mock_provider::peer::mock_project_config(&format!("http://{mock}/v1"));
    std::fs::write(project.join("opencode.json"), config).unwrap();
    project
}

enum Agent {
    Ours(PathBuf),
    Peer(opencode_mock_provider::peer::OpenCode),
}

impl Agent {
    fn spawn(&self, home: &Path, project: &Path) -> Child {
        let mut command = match self {
            Self::Ours(binary) => {
                let mut command = Command::new(binary);
                command.env_clear().env("HOME", home).env("OPENCODE_DISABLE_MODELS_FETCH", "1");
                command
            }
            Self::Peer(peer) => peer.command_in(home, project),
        };
        command
            .current_dir(project)
            .arg("acp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the agent")
    }
}

fn peer() -> Option<opencode_mock_provider::peer::OpenCode> {
    let binary = std::env::var("OPENCODE_PEER_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/tmp/peer/node_modules/opencode-linux-x64/bin/opencode"));
    binary.is_file().then_some(opencode_mock_provider::peer::OpenCode { binary })
}

/// A line-delimited JSON-RPC client over the agent's stdio.
struct Rpc {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    next: u64,
}

impl Rpc {
    fn new(mut child: Child) -> Self {
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, stdin, lines, next: 0 }
    }

    /// Sends a request and reads until its answer (updates are read and dropped on the way; a
    /// permission request is approved once).
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        loop {
            let line = self.lines.next().expect("the agent answers").unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                assert!(message.get("error").is_none(), "{method} failed: {message}");
                return message["result"].clone();
            }
            if message["method"] == "session/request_permission" {
                let answer = json!({"outcome": {"outcome": "selected", "optionId": message["params"]["options"][0]["optionId"]}});
                writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": message["id"], "result": answer})).unwrap();
            }
        }
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
    }

    fn stop(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn initialize(rpc: &mut Rpc, project: &Path) -> String {
    rpc.call("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}}));
    let created = rpc.call("session/new", json!({"cwd": project, "mcpServers": []}));
    created["sessionId"].as_str().unwrap().to_owned()
}

/// Measures `agent`; `between` runs after each timed prompt (the in-process baseline's sample).
fn measure(agent: &Agent, home: &Path, project: &Path, args: &Args, between: &mut dyn FnMut()) -> Figures {
    let mut ready = Vec::new();
    for _ in 0..args.starts {
        let started = Instant::now();
        let mut rpc = Rpc::new(agent.spawn(home, project));
        initialize(&mut rpc, project);
        ready.push(started.elapsed());
        rpc.stop();
    }
    let mut rpc = Rpc::new(agent.spawn(home, project));
    let session = initialize(&mut rpc, project);
    let rss_ready_kib = rpc.status_kib("VmRSS");
    // The first prompt titles the session and opens its Location: warm-up, not measured.
    prompt(&mut rpc, &session);
    let prompts = (0..args.prompts)
        .map(|_| {
            let started = Instant::now();
            prompt(&mut rpc, &session);
            let elapsed = started.elapsed();
            between();
            elapsed
        })
        .collect();
    let figures = Figures {
        ready: median(ready),
        prompt: median(prompts),
        rss_ready_kib,
        rss_after_kib: rpc.status_kib("VmRSS"),
        peak_kib: rpc.status_kib("VmHWM"),
    };
    rpc.stop();
    figures
}

fn prompt(rpc: &mut Rpc, session: &str) {
    let answer =
        rpc.call("session/prompt", json!({"sessionId": session, "prompt": [{"type": "text", "text": "say hi"}]}));
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
}

/// `SessionRuntime::run` of the same prompt, in this process, on the runtime the agent builds.
struct Baseline {
    runtime: opencode_session_runtime::SessionRuntime,
    session: String,
}

impl Baseline {
    async fn new(home: &Path, project: &Path) -> Self {
        let env = opencode_config::Env::from_pairs([
            ("HOME", home.join("alone").display().to_string()),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
        ]);
        let runtime = opencode_acp::engine(&env, project).unwrap().runtime;
        let session = runtime.create_session(project, Default::default()).await.unwrap().id;
        // The first turn titles the session and opens its Location: warm-up, not measured.
        runtime.run(PromptRequest::text(&session, "say hi")).await.unwrap();
        Self { runtime, session }
    }

    async fn sample(&mut self) -> Duration {
        let started = Instant::now();
        self.runtime.run(PromptRequest::text(&self.session, "say hi")).await.unwrap();
        started.elapsed()
    }
}

/// An OpenAI-compatible mock answering every request at once with a short streamed text.
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
        let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
        frames.extend(["Hello ", "from ", "the ", "mock."].map(|t| chunk(json!({"content": t}), Value::Null)));
        frames.push(chunk(json!({}), json!("stop")));
        let usage = json!({"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14});
        frames.push(json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [], "usage": usage}).to_string());
        frames.push("[DONE]".to_owned());
        let body: String = frames.iter().map(|frame| format!("data: {frame}\n\n")).collect();
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(axum::body::Body::from(body))
            .unwrap()
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}
