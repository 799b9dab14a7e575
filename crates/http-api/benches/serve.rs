#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! `opencode-http-api` benchmarks over real HTTP on 127.0.0.1 (run with `cargo xtask bench
//! opencode-http-api`, or `cargo bench -p opencode-http-api --bench serve`), with the echo driver:
//!
//! 1. Start-up: `serve` called until `/global/health` has answered.
//! 2. Create a session; list 200 sessions; prompt and wait for the reply; GET 200 messages.
//! 3. Resident memory idle, and its growth over 100 prompt turns.
//! 4. A prompt turn with 100 `/event` subscribers in a child process (as real clients are), against
//!    the same session's turns just before.
//! 5. Over the session runtime (`start_server`): prompt and wait against a local OpenAI-compatible mock
//!    that streams each SSE frame as its own write, with `TCP_NODELAY` on the mock's sockets (no
//!    subscribers, 100 `/event` subscribers in a child process, none again, on one session) and once
//!    without (Nagle on, as in `../shared/bench/mock_openai.py`).

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

    // The same session just before and with the readers, so history growth does not bias the pair.
    let quiet = median(100, || async {
        post(&http, &turn_url, prompt.clone()).await;
    })
    .await;
    let readers = spawn_readers(&url);
    let busy = median(100, || async {
        post(&http, &turn_url, prompt.clone()).await;
    })
    .await;
    println!(
        "prompt and wait, 100 /event subscribers in another process: {} (just before, none: {}; {})",
        ms(busy),
        ms(quiet),
        change(quiet, busy)
    );
    server.shutdown().await.unwrap();
    assert!(readers.wait_with_output().unwrap().status.success());

    println!();
    println!("over the session runtime, against a local OpenAI-compatible mock (8 SSE frames, one write each)");
    runtime_turns(true).await;
    runtime_turns(false).await;
}

/// The child process: 100 subscribers that read `url` until the server stops, on one thread (as
/// clients in their own process would); prints `ready` once each has its first event.
fn read_events(url: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let mut subscribers = Vec::new();
        for _ in 0..100 {
            subscribers.push(subscribe(&http, url).await);
        }
        println!("ready");
        for subscriber in subscribers {
            subscriber.await.unwrap();
        }
    });
}

/// Opens an event stream, waits for its first event, and reads the rest in a task.
async fn subscribe(http: &reqwest::Client, url: &str) -> tokio::task::JoinHandle<()> {
    let response = http.get(url).send().await.unwrap();
    let mut body = response.bytes_stream();
    body.next().await.unwrap().unwrap();
    tokio::spawn(async move { while let Some(Ok(_)) = body.next().await {} })
}

/// Synchronous prompt turns through `start_server` against a mock provider, 100 per phase on one
/// session. With `nodelay`, three phases: no subscribers, 100 `/event` subscribers in a child process,
/// none again (the slowdown is against the mean of the two quiet phases, which brackets any drift as
/// the history grows).
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
    let turns = || async {
        let mut times = Vec::new();
        for _ in 0..100 {
            let start = Instant::now();
            post(&http, &turn_url, prompt.clone()).await;
            times.push(start.elapsed());
        }
        times.sort();
        (times[times.len() / 2], times[0])
    };
    let label = if nodelay { "with TCP_NODELAY" } else { "with Nagle (no TCP_NODELAY)" };
    let (quiet, min) = turns().await;
    println!("prompt and wait, mock {label}: {} (min {})", ms(quiet), ms(min));
    if nodelay {
        let mut readers = spawn_readers(&url);
        let (busy, busy_min) = turns().await;
        readers.kill().unwrap();
        readers.wait().unwrap();
        let (after, _) = turns().await;
        let bracket = (quiet + after) / 2;
        println!(
            "prompt and wait, mock {label}, 100 /event subscribers in another process: {} (min {}; none, after: {}; {} against the mean of none before and after)",
            ms(busy),
            ms(busy_min),
            ms(after),
            change(bracket, busy)
        );
    }
    server.shutdown().await.unwrap();
}

/// Starts the child process holding 100 subscribers of `{url}/event` and waits until all are connected.
fn spawn_readers(url: &str) -> std::process::Child {
    let mut readers = std::process::Command::new(std::env::current_exe().unwrap())
        .env(READERS, format!("{url}/event"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    let stdout = readers.stdout.as_mut().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    readers
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
