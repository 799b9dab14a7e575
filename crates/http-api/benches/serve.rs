#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! `opencode-http-api` benchmarks over real HTTP on 127.0.0.1 (run with `cargo xtask bench
//! opencode-http-api`, or `cargo bench -p opencode-http-api --bench serve`), with the echo driver:
//!
//! 1. Start-up: `serve` called until `/global/health` has answered.
//! 2. Create a session; list 200 sessions; prompt and wait for the reply; GET 200 messages.
//! 3. Resident memory idle, and its growth over 100 prompt turns.
//! 4. A prompt turn with 100 `/event` subscribers connected, against none.

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

fn main() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
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

    let mut subscribers = Vec::new();
    for _ in 0..100 {
        let response = http.get(format!("{url}/event")).send().await.unwrap();
        let mut body = response.bytes_stream();
        body.next().await.unwrap().unwrap();
        subscribers.push(tokio::spawn(async move { while let Some(Ok(_)) = body.next().await {} }));
    }
    let with_subscribers = median(50, || async {
        post(&http, &turn_url, prompt.clone()).await;
    })
    .await;
    println!("prompt and wait with 100 /event subscribers: {}", ms(with_subscribers));
    server.shutdown().await.unwrap();
    for subscriber in subscribers {
        subscriber.await.unwrap();
    }
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
