#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! What `opencode github run` costs beyond the session it runs, and what the action costs around
//! it. Against the in-process mock provider and a local stand-in for GitHub's API (answering at
//! once), from fresh processes:
//! - `run`: `opencode run` with the prompt a comment makes (the session alone);
//! - `github run`: the same request as an `issue_comment` event (read the event, post the progress
//!   comment, read the thread, run the session, update the comment);
//! - `ignored`: an event without a mention (start, parse the event, decide; nothing else);
//! - `action`: the action's own steps around the agent, `install.sh` from its cache and `run.sh`
//!   on the ignored event.
//!
//! Targets: `github run` − `run` ≤ 100 ms; `action` ≤ 2 s.
//! `cargo bench -p opencode --bench github` (or `cargo xtask bench opencode`); `-- <runs>` sets the
//! number of measured runs per case (default 20).

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;
use std::time::Instant;

use axum::Json;
use axum::Router;
use axum::http::StatusCode;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use serde_json::Value;
use serde_json::json;

const REQUEST: &str = "why does it crash on start?";

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|arg| arg.parse().ok()).unwrap_or(20);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("tokio");
    let mock = runtime.block_on(MockProvider::start()).expect("mock provider");
    let api = runtime.block_on(github_api());
    let root = tempfile::tempdir().expect("temp dir");
    let bench = Bench::new(root.path(), &mock, api);

    println!("opencode github run against the mock provider and a local GitHub API, {runs} runs per case");
    println!("{:<12} {:>9} {:>9} {:>9}", "case", "p50 ms", "p90 ms", "max ms");
    let mut p50 = Vec::new();
    for case in ["run", "github run", "ignored", "action"] {
        let answers = matches!(case, "run" | "github run");
        // One unmeasured run creates the database and warms the page cache.
        if answers {
            mock.push(text());
        }
        bench.once(case);
        let mut times: Vec<f64> = (0..runs)
            .map(|_| {
                if answers {
                    mock.push(text());
                }
                bench.once(case)
            })
            .collect();
        times.sort_by(f64::total_cmp);
        let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
        println!("{case:<12} {:>9.1} {:>9.1} {:>9.1}", at(0.5), at(0.9), at(1.0));
        p50.push(at(0.5));
    }
    println!("github run overhead beyond the session (p50): {:.1} ms", p50[1] - p50[0]);
}

struct Bench {
    home: PathBuf,
    work: PathBuf,
    config: String,
    api: String,
    comment: PathBuf,
    ignored: PathBuf,
    /// A release installed where the action caches it.
    tools: PathBuf,
}

impl Bench {
    fn new(root: &Path, mock: &MockProvider, api: String) -> Self {
        let (home, work, tools) = (root.join("home"), root.join("work"), root.join("tools"));
        for dir in [&home, &work, &tools] {
            std::fs::create_dir_all(dir).expect("dir");
        }
        std::fs::copy(env!("CARGO_BIN_EXE_opencode"), tools.join("opencode")).expect("install");
        let config = json!({
            "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "x"},
                "models": {"m": {"tool_call": true, "limit": {"context": 200_000, "output": 8_000}}}}},
            "model": "mock/m"
        })
        .to_string();
        let event = |name: &str, body: &str| {
            let payload = json!({
                "action": "created",
                "issue": {"number": 7, "title": "Crash on start", "body": "It crashes.", "user": {"login": "ana", "type": "User"}},
                "comment": {"id": 3, "body": body, "user": {"login": "ana", "type": "User"}},
                "repository": {"full_name": "octo/repo", "default_branch": "main"}
            });
            let path = root.join(name);
            std::fs::write(&path, payload.to_string()).expect("event");
            path
        };
        let comment = event("comment.json", &format!("/oc {REQUEST}"));
        let ignored = event("ignored.json", "thanks!");
        Self { home, work, config, api, comment, ignored, tools }
    }

    /// One run of `case`; its wall time in ms.
    fn once(&self, case: &str) -> f64 {
        let mut command = match case {
            "run" => self.opencode(&["run", REQUEST]),
            "github run" => self.github(&self.comment),
            "ignored" => self.github(&self.ignored),
            _ => self.action(),
        };
        let started = Instant::now();
        let status = command.status().expect("spawn");
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        assert!(status.success(), "{case} failed");
        elapsed
    }

    fn opencode(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_opencode"));
        command.args(args);
        self.environment(&mut command);
        command
    }

    fn github(&self, event: &Path) -> Command {
        let mut command = self.opencode(&["github", "run"]);
        command.env("GITHUB_EVENT_PATH", event);
        command
    }

    /// The action's steps: install (a cache hit), then run.
    fn action(&self) -> Command {
        let action = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../github");
        let script = format!(
            "bash {install} >/dev/null && bash {run}",
            install = action.join("install.sh").display(),
            run = action.join("run.sh").display()
        );
        let mut command = Command::new("bash");
        command.args(["-c", &script]);
        self.environment(&mut command);
        command
            .env("OPENCODE_VERSION", "v0.1.0")
            .env("OPENCODE_INSTALL_DIR", &self.tools)
            .env("OPENCODE_BIN", self.tools.join("opencode"))
            .env("RUNNER_TEMP", &self.home)
            .env("GITHUB_EVENT_PATH", &self.ignored);
        command
    }

    fn environment(&self, command: &mut Command) {
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .env("OPENCODE_CONFIG_CONTENT", &self.config)
            .env("GITHUB_EVENT_NAME", "issue_comment")
            .env("GITHUB_REPOSITORY", "octo/repo")
            .env("GITHUB_TOKEN", "ghs_bench")
            .env("GITHUB_API_URL", &self.api)
            .current_dir(&self.work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
    }
}

/// GitHub's API as far as a comment's run calls it, answering at once; its URL.
async fn github_api() -> String {
    let comments = || async { Json(json!([{"id": 1, "user": {"login": "ana"}, "body": "Since 0.3."}])) };
    let created = || async { (StatusCode::CREATED, Json(json!({"id": 900}))) };
    let updated = |Json(body): Json<Value>| async move { Json(json!({"id": 900, "body": body["body"]})) };
    let app = Router::new()
        .route("/repos/octo/repo/issues/7/comments", axum::routing::get(comments).post(created))
        .route("/repos/octo/repo/issues/comments/900", axum::routing::patch(updated));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move { axum::serve(listener, app).await.expect("serve") });
    url
}

fn text() -> MockResponse {
    MockResponse::chat_text("The config loader unwraps a missing key.")
}
