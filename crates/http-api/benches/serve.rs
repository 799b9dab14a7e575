#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! `opencode-http-api` benchmarks over real HTTP on 127.0.0.1 (run with `cargo xtask bench
//! opencode-http-api`, or `cargo bench -p opencode-http-api --bench serve`), with the echo driver:
//!
//! 1. Start-up: `serve` called until `/global/health` has answered.
//! 2. Create a session; list 200 sessions; prompt and wait for the reply; GET 200 messages.
//! 3. Resident memory idle, and its growth over 100 prompt turns.
//! 4. A prompt turn with 100 `/event` subscribers in a child process (as real clients are), against
//!    none, interleaved on one session.
//! 5. Over the session runtime (`start_server`): prompt and wait against a local OpenAI-compatible mock
//!    that streams each SSE frame as its own write, with `TCP_NODELAY` on the mock's sockets (then
//!    also without and with 100 `/event` subscribers in a child process, interleaved) and once without
//!    (Nagle on, as in `../shared/bench/mock_openai.py`).

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use futures_util::StreamExt;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_http_api::EchoDriver;
use opencode_http_api::ServerContext;
use opencode_http_api::ServerOptions;
use opencode_session_store::Store;
use serde_json::Value;
use serde_json::json;

/// Set in the child process that holds the `/event` subscribers: the URL to subscribe to.
const READERS: &str = "OPENCODE_BENCH_EVENT_READERS";

fn main() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    if let Ok(url) = std::env::var(READERS) {
        return read_events(&url);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let root = tempfile::tempdir().unwrap();
    let paths = Paths::under(root.path());
    std::fs::create_dir_all(&paths.data).unwrap();
    let dir = root.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let rss_before = rss_kib();
    let started = Instant::now();
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let driver = Arc::new(EchoDriver::new(Arc::clone(&store)));
    let context = ServerContext::new(Arc::clone(&store), driver, Env::default(), paths, dir);
    let server =
        opencode_http_api::serve(ServerOptions { port: 0, ..ServerOptions::default() }, context).await.unwrap();
    let http = reqwest::Client::new();
    let url = server.url();
    let health = http.get(format!("{url}/global/health")).send().await.unwrap();
    assert!(health.status().is_success());
    let startup = started.elapsed();
    println!("opencode-http-api (release, real HTTP on 127.0.0.1, echo driver; medians)");
    println!("start-up until /global/health answered: {}", ms(startup));
    println!("resident memory idle (whole process, after start-up): {} MiB", rss_kib() / 1024);
    println!("  of which start-up added: {} MiB", rss_kib().saturating_sub(rss_before) / 1024);

    let create = median(50, || async {
        post(&http, &format!("{url}/session"), json!({})).await;
    })
    .await;
    println!("create session: {}", ms(create));
    for _ in 0..150 {
        post(&http, &format!("{url}/session"), json!({})).await;
    }
    let list = median(50, || async {
        let list = get(&http, &format!("{url}/session")).await;
        assert_eq!(list.as_array().unwrap().len(), 200);
    })
    .await;
    println!("list 200 sessions: {}", ms(list));

    let session = post(&http, &format!("{url}/session"), json!({})).await;
    let id = session["id"].as_str().unwrap().to_owned();
    let prompt = json!({ "parts": [{ "type": "text", "text": "hello" }] });
    let turn_url = format!("{url}/session/{id}/message");
    let rss_turns = rss_kib();
    let turn = median(100, || async {
        post(&http, &turn_url, prompt.clone()).await;
    })
    .await;
    println!("prompt and wait (echo turn: admit, promote, reply, 3 parts): {}", ms(turn));
    println!("RSS growth over 100 turns: {} KiB", rss_kib().saturating_sub(rss_turns));
    let messages = median(50, || async {
        let list = get(&http, &format!("{url}/session/{id}/message")).await;
        assert_eq!(list.as_array().unwrap().len(), 200);
    })
    .await;
    println!("GET 200 messages (with parts): {}", ms(messages));

    let subscribed = with_subscribers(&http, &url, &turn_url, &prompt).await;
    println!("prompt and wait, 100 /event subscribers in another process: {subscribed}");
    server.shutdown().await.unwrap();

    println!();
    println!("over the session runtime, against a local OpenAI-compatible mock (8 SSE frames, one write each)");
    runtime_turns(true).await;
    runtime_turns(false).await;
}

/// The child process, on one thread (as clients in their own process would): on each `open` line of
/// stdin it opens 100 subscriptions to `url` and prints `ready` once each has its first event; on
/// `close` it drops them and prints `closed`; it ends with stdin.
fn read_events(url: &str) {
    let (lines, mut commands) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::stdin().lock()) {
            if lines.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let mut subscribers = Vec::new();
        while let Some(command) = commands.recv().await {
            if command == "open" {
                for _ in 0..100 {
                    subscribers.push(subscribe(&http, url).await);
                }
                println!("ready");
            } else {
                subscribers.drain(..).for_each(|subscriber| subscriber.abort());
                println!("closed");
            }
        }
    });
}

/// The child process holding the `/event` subscribers of one server.
struct Readers {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Readers {
    fn spawn(url: &str) -> Self {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .env(READERS, format!("{url}/event"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    /// Sends `command` and waits for the child's `answer`.
    fn ask(&mut self, command: &str, answer: &str) {
        use std::io::Write;
        writeln!(self.stdin, "{command}").unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut self.stdout, &mut line).unwrap();
        assert_eq!(line.trim(), answer);
    }

    fn finish(mut self) {
        drop(self.stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

/// Turns with 100 `/event` subscribers of `url` in a child process against none ([`alternate`]):
/// "<with> (interleaved without: <without>; <change>)".
async fn with_subscribers(http: &reqwest::Client, url: &str, turn_url: &str, prompt: &Value) -> String {
    let mut readers = Readers::spawn(url);
    let (quiet, busy) = alternate(&mut readers, || async {
        post(http, turn_url, prompt.clone()).await;
    })
    .await;
    readers.finish();
    format!("{} (interleaved without: {}; {})", ms(busy), ms(quiet), change(quiet, busy))
}

/// Median turn without and with 100 subscribers: 10 rounds of 20 turns without, then 20 with, so
/// that drift (the history grows, the machine's load changes) falls on both sides alike.
async fn alternate<F, Fut>(readers: &mut Readers, mut turn: F) -> (Duration, Duration)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (mut quiet, mut busy) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        for (times, subscribed) in [(&mut quiet, false), (&mut busy, true)] {
            if subscribed {
                readers.ask("open", "ready");
            }
            for _ in 0..20 {
                let start = Instant::now();
                turn().await;
                times.push(start.elapsed());
            }
            if subscribed {
                readers.ask("close", "closed");
                // An uncounted turn lets the server's streams find their sockets closed.
                turn().await;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    (middle(quiet), middle(busy))
}

fn middle(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Opens an event stream, waits for its first event, and reads the rest in a task.
async fn subscribe(http: &reqwest::Client, url: &str) -> tokio::task::JoinHandle<()> {
    let response = http.get(url).send().await.unwrap();
    let mut body = response.bytes_stream();
    body.next().await.unwrap().unwrap();
    tokio::spawn(async move { while let Some(Ok(_)) = body.next().await {} })
}

/// Synchronous prompt turns through `start_server` against a mock provider on one session: 100, and
/// with `nodelay` also 200 more interleaved with 200 that have 100 `/event` subscribers in a child
/// process ([`alternate`]).
async fn runtime_turns(nodelay: bool) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    let mock = mock_provider(nodelay).await;
    let config = json!({
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": format!("http://{mock}/v1"), "apiKey": "x"},
            "models": {"m": {"tool_call": true}}}},
        "model": "mock/m", "small_model": "mock/m"
    });
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
    let env = Env::from_pairs([("HOME", root.path().join("home").to_string_lossy().into_owned())]);
    let options = ServerOptions { port: 0, ..ServerOptions::default() };
    let server = opencode_http_api::start_server(options, env, dir).await.unwrap();
    let (http, url) = (reqwest::Client::new(), server.url());
    let session = post(&http, &format!("{url}/session"), json!({})).await;
    let turn_url = format!("{url}/session/{}/message", session["id"].as_str().unwrap());
    let prompt = json!({ "parts": [{ "type": "text", "text": "hello" }] });
    post(&http, &turn_url, prompt.clone()).await;
    let mut times = Vec::new();
    for _ in 0..100 {
        let start = Instant::now();
        post(&http, &turn_url, prompt.clone()).await;
        times.push(start.elapsed());
    }
    let min = *times.iter().min().unwrap();
    let label = if nodelay { "with TCP_NODELAY" } else { "with Nagle (no TCP_NODELAY)" };
    println!("prompt and wait, mock {label}: {} (min {})", ms(middle(times)), ms(min));
    if nodelay {
        let subscribed = with_subscribers(&http, &url, &turn_url, &prompt).await;
        println!("prompt and wait, mock {label}, 100 /event subscribers in another process: {subscribed}");
    }
    server.shutdown().await.unwrap();
}

/// An OpenAI-compatible chat mock on 127.0.0.1 that streams a four-delta text reply, yielding between
/// frames so that each one is its own socket write (like a naive provider or the shared Python mock).
async fn mock_provider(nodelay: bool) -> std::net::SocketAddr {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(move |stream| stream.set_nodelay(nodelay).unwrap());
    let app = axum::Router::new().fallback(|| async {
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string()
        };
        let mut frames = vec![chunk(json!({"role": "assistant", "content": ""}), Value::Null)];
        frames.extend(["Hello ", "from ", "the ", "mock."].map(|t| chunk(json!({"content": t}), Value::Null)));
        frames.push(chunk(json!({}), json!("stop")));
        frames.push(
            json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}})
            .to_string(),
        );
        frames.push("[DONE]".to_owned());
        let stream = futures_util::stream::unfold(frames.into_iter(), |mut frames| async move {
            let frame = frames.next()?;
            tokio::task::yield_now().await;
            Some((Ok::<_, std::convert::Infallible>(bytes::Bytes::from(format!("data: {frame}\n\n"))), frames))
        });
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(axum::body::Body::from_stream(stream))
            .unwrap()
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

async fn median<F, Fut>(runs: usize, mut f: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        f().await;
        times.push(start.elapsed());
    }
    times.sort();
    times[runs / 2]
}

async fn post(http: &reqwest::Client, url: &str, body: Value) -> Value {
    let response = http.post(url).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "{url}: {}", response.status());
    response.json().await.unwrap()
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    let response = http.get(url).send().await.unwrap();
    assert!(response.status().is_success(), "{url}: {}", response.status());
    response.json().await.unwrap()
}

/// `+12%`: how much slower `then` is than `before`.
fn change(before: Duration, then: Duration) -> String {
    format!("{:+.0}%", (then.as_secs_f64() / before.as_secs_f64() - 1.0) * 100.0)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().trim_end_matches(" kB").trim().to_owned()))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
