#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! The web UI's figures (run with `cargo xtask bench opencode-http-api`, or `cargo bench -p
//! opencode-http-api --bench web`), against a server on 127.0.0.1 with the echo driver:
//!
//! 1. Transfer size of the whole UI, raw and gzip, as served (sum of the answers' bodies).
//! 2. Resident memory: the server idle before any UI request, then after every UI file was served
//!    (raw and gzip, so the compressed copies are made and kept); and the bytes the UI adds to the
//!    binary.
//! 3. In headless Chromium (skipped with a notice when it is missing): first contentful paint of
//!    `/` (a fresh load after about:blank, 15 runs after one warm-up, median); opening a 2,000-message session until its last message is on
//!    screen; scrolling it from the end to the start with the long tasks (> 50 ms) counted.

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use opencode_config::Env;
use opencode_config::Paths;
use opencode_http_api::EchoDriver;
use opencode_http_api::ServerContext;
use opencode_http_api::ServerOptions;
use opencode_mock_provider::browser::Chromium;
use opencode_session_store::Store;
use serde_json::Value;
use serde_json::json;

fn main() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(run());
}

async fn run() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    let paths = Paths::under(&root.path().join("home"));
    std::fs::create_dir_all(&paths.data).unwrap();
    let env = Env::from_pairs([("HOME", root.path().join("home").to_string_lossy().into_owned())]);
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let driver = Arc::new(EchoDriver::new(Arc::clone(&store)));
    let context = ServerContext::new(store, driver, env, paths, dir);
    let server =
        opencode_http_api::serve(ServerOptions { port: 0, ..ServerOptions::default() }, context).await.unwrap();
    let url = server.url();
    let http = reqwest::Client::builder().no_gzip().build().unwrap();

    // Idle, then every UI file served raw and compressed.
    http.get(format!("{url}/global/health")).send().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss_kib();
    let (mut raw, mut gzip) = (0, 0);
    for path in opencode_http_api::web::asset_paths() {
        let plain = http.get(format!("{url}{path}")).send().await.unwrap().bytes().await.unwrap();
        let packed = http.get(format!("{url}{path}")).header("accept-encoding", "gzip").send().await.unwrap();
        assert_eq!(packed.headers()["content-encoding"], "gzip", "{path}");
        raw += plain.len();
        gzip += packed.bytes().await.unwrap().len();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let served = rss_kib();
    println!(
        "UI transfer size: {:.1} KB raw, {:.1} KB gzip ({} files)",
        kb(raw),
        kb(gzip),
        opencode_http_api::web::asset_paths().count()
    );
    println!("UI bytes embedded in the binary: {:.1} KB", kb(opencode_http_api::web::transfer_size().0));
    println!(
        "server RSS idle: {idle} KiB; after serving the whole UI: {served} KiB (+{} KiB)",
        served.saturating_sub(idle)
    );

    let Some(chromium) = Chromium::start() else { return };
    let b = chromium.browser(1280, 860).await;

    // The first load after the browser started measures from the browser's start: a warm-up.
    b.goto(&url).await;
    b.until("the warm-up load", "document.querySelector('#new-session')").await;
    let mut paints = Vec::new();
    for _ in 0..15 {
        b.goto("about:blank").await;
        b.goto(&url).await;
        let fcp = b
            .until("first contentful paint", "performance.getEntriesByName('first-contentful-paint')[0]?.startTime")
            .await;
        paints.push(fcp.as_f64().unwrap());
    }
    paints.sort_by(f64::total_cmp);
    let all: Vec<String> = paints.iter().map(|p| format!("{p:.0}")).collect();
    println!(
        "first contentful paint of / on loopback: median {:.0} ms (15 fresh loads, sorted: {} ms)",
        paints[7],
        all.join(" ")
    );

    // A 2,000-message session: 1,000 echo turns.
    let session: Value =
        http.post(format!("{url}/session")).json(&json!({"title": "Long"})).send().await.unwrap().json().await.unwrap();
    let id = session["id"].as_str().unwrap().to_owned();
    let seeded = Instant::now();
    for n in 0..1000 {
        let prompt =
            json!({"parts": [{"type": "text", "text": format!("prompt number {n}: {}", "some words ".repeat(20))}]});
        let r = http.post(format!("{url}/session/{id}/message")).json(&prompt).send().await.unwrap();
        assert!(r.status().is_success());
    }
    println!("(seeded 2,000 messages in {:.1} s)", seeded.elapsed().as_secs_f64());
    b.goto(&url).await;
    b.until("the UI", "document.querySelector('#new-session')").await;
    let mut opens = Vec::new();
    for _ in 0..5 {
        b.goto(&format!("{url}/#/")).await;
        b.until("no session open", "!document.querySelector('.msg')").await;
        let open = b
            .js_async(&format!(
                "const done = arguments[arguments.length - 1]; const t0 = performance.now();
                 location.hash = '#/session/{id}';
                 const poll = () => document.body.innerText.includes('prompt number 999:')
                   ? requestAnimationFrame(() => done(performance.now() - t0)) : requestAnimationFrame(poll);
                 poll();"
            ))
            .await;
        opens.push(open.as_f64().unwrap());
    }
    opens.sort_by(f64::total_cmp);
    println!("open a 2,000-message session until its last message shows: median {:.0} ms (5 runs)", opens[2]);

    let scroll = b
        .js_async(
            "const done = arguments[arguments.length - 1];
             const long = [];
             new PerformanceObserver((list) => list.getEntries().forEach((e) => long.push(e.duration)))
               .observe({ type: 'longtask', buffered: false });
             const t = document.querySelector('#timeline');
             const t0 = performance.now();
             let frames = 0;
             const step = () => {
               frames++;
               const first = [...document.querySelectorAll('.msg.user')].some((m) => m.innerText.startsWith('prompt number 0:'));
               if ((first && t.scrollTop === 0) || frames > 5000) {
                 setTimeout(() => done({ ms: performance.now() - t0, frames, long: long.length,
                   worst: long.length ? Math.max(...long) : 0, nodes: document.querySelectorAll('.msg').length }), 100);
                 return;
               }
               t.scrollTop = Math.max(0, t.scrollTop - 600);
               requestAnimationFrame(step);
             };
             requestAnimationFrame(step);",
        )
        .await;
    println!(
        "scroll the 2,000 messages from the end to the start: {:.0} ms over {} frames, {} long tasks (worst {:.0} ms), {} messages in the DOM at the end",
        scroll["ms"].as_f64().unwrap_or(0.0),
        scroll["frames"],
        scroll["long"],
        scroll["worst"].as_f64().unwrap_or(0.0),
        scroll["nodes"]
    );
    b.quit().await;
    server.shutdown().await.unwrap();
}

fn kb(bytes: usize) -> f64 {
    bytes as f64 / 1000.0
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
