//! `opencode github run` as a GitHub Actions job runs it: GitHub's own `issue_comment` payload (from
//! `@octokit/webhooks-examples`) with a mention, a local stand-in for GitHub's API at
//! `GITHUB_API_URL`, and the mock provider as the model.

use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;

use axum::Json;
use axum::Router;
use axum::extract::Path as UrlPath;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::routing::patch;
use opencode_mock_provider::MockProvider;
use serde_json::Value;
use serde_json::json;

use super::support::Home;
use super::support::mock_config;
use super::support::requests;
use super::support::stderr;
use super::support::stdout;
use super::support::text;

/// What the stand-in received, as `METHOD number-or-id body`.
type Calls = Arc<Mutex<Vec<String>>>;

/// GitHub's API for `octo/repo` under `/api/v3`, on its own thread; its URL.
fn github_api(calls: &Calls) -> String {
    let calls = Arc::clone(calls);
    let (url_sender, url) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let app = Router::new()
                .route(
                    "/api/v3/repos/octo/repo/issues/{n}/comments",
                    get(|UrlPath(n): UrlPath<u64>, State(calls): State<Calls>| async move {
                        calls.lock().unwrap().push(format!("GET {n}"));
                        Json(json!([{"id": 11, "user": {"login": "ana"}, "body": "It crashes when the config is empty."}]))
                    })
                    .post(|UrlPath(n): UrlPath<u64>, State(calls): State<Calls>, Json(body): Json<Value>| async move {
                        calls.lock().unwrap().push(format!("POST {n} {}", body["body"].as_str().unwrap()));
                        (StatusCode::CREATED, Json(json!({"id": 900})))
                    }),
                )
                .route(
                    "/api/v3/repos/octo/repo/issues/comments/{id}",
                    patch(|UrlPath(id): UrlPath<u64>, State(calls): State<Calls>, Json(body): Json<Value>| async move {
                        calls.lock().unwrap().push(format!("PATCH {id} {}", body["body"].as_str().unwrap()));
                        Json(json!({"id": id}))
                    }),
                )
                .route(
                    "/api/v3/repos/octo/repo/check-runs",
                    axum::routing::post(|State(calls): State<Calls>, Json(body): Json<Value>| async move {
                        let line = format!(
                            "CHECK {} {} {} {} | {}",
                            body["name"].as_str().unwrap(),
                            body["head_sha"].as_str().unwrap(),
                            body["conclusion"].as_str().unwrap(),
                            body["output"]["title"].as_str().unwrap(),
                            body["output"]["summary"].as_str().unwrap()
                        );
                        calls.lock().unwrap().push(line);
                        (StatusCode::CREATED, Json(json!({"id": 5})))
                    }),
                )
                .with_state(calls);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            url_sender.send(format!("http://{}/api/v3", listener.local_addr().unwrap())).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    url.recv().unwrap()
}

/// GitHub's first example payload of event `name` with `action`.
fn example(name: &str, action: &str) -> Option<Value> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let prefix = opencode_mock_provider::peer::npm_install(cache, "@octokit/webhooks-examples@7.6.1")?;
    let index = prefix.join("node_modules/@octokit/webhooks-examples/api.github.com/index.json");
    let all: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(index).unwrap()).unwrap();
    let examples = &all.iter().find(|event| event["name"] == name).unwrap()["examples"];
    examples.as_array().unwrap().iter().find(|p| p["action"] == action).cloned()
}

/// GitHub's first example `issue_comment` (created) payload, its comment's body replaced.
fn comment_event(home: &Home, body: &str) -> Option<(std::path::PathBuf, Value)> {
    let mut payload = example("issue_comment", "created")?;
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"]["type"] = json!("User");
    let path = home.path().join("event.json");
    std::fs::write(&path, payload.to_string()).unwrap();
    Some((path, payload))
}

fn github_run(home: &Home, mock: &MockProvider, event: &Path, api: &str) -> assert_cmd::Command {
    github_run_for(home, mock, "issue_comment", event, api)
}

/// `opencode github run` as Actions runs it for event `name`, against the stand-in at `api`.
fn github_run_for(home: &Home, mock: &MockProvider, name: &str, event: &Path, api: &str) -> assert_cmd::Command {
    let mut command = home.opencode(&["github", "run"]);
    command
        .env("OPENCODE_CONFIG_CONTENT", mock_config(mock, json!({})))
        .env("GITHUB_EVENT_NAME", name)
        .env("GITHUB_EVENT_PATH", event)
        .env("GITHUB_REPOSITORY", "octo/repo")
        .env("GITHUB_TOKEN", "ghs_token")
        .env("GITHUB_API_URL", api)
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_RUN_ID", "42");
    command
}

#[test]
fn a_mention_gets_a_progress_comment_replaced_by_the_answer() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = comment_event(&home, "/oc why does it crash on start?") else { return };
    let calls = Calls::default();
    let api = github_api(&calls);
    mock.push(text("The config loader unwraps a missing key; see src/config.rs."));
    let output = github_run(&home, &mock, &event, &api).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let number = payload["issue"]["number"].as_u64().unwrap();
    let calls = calls.lock().unwrap().clone();
    let run = "https://github.example/octo/repo/actions/runs/42";
    assert_eq!(calls[0], format!("POST {number} Working on it… ([progress]({run}))"));
    assert_eq!(calls[1], format!("GET {number}"));
    assert_eq!(
        calls[2],
        format!(
            "PATCH 900 The config loader unwraps a missing key; see src/config.rs.\n\n<sub>opencode · [run]({run})</sub>"
        )
    );
    // The request leads the prompt; the thread and its conversation follow.
    let prompt = requests(&mock)[0].iter().find(|m| m["role"] == "user").unwrap()["content"].to_string();
    assert!(prompt.starts_with("\"why does it crash on start?"), "{prompt}");
    assert!(prompt.contains("It crashes when the config is empty."), "{prompt}");
    assert!(prompt.contains(payload["issue"]["title"].as_str().unwrap()), "{prompt}");
}

#[test]
fn a_comment_without_a_mention_does_nothing() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, _)) = comment_event(&home, "Thanks, that fixed it.") else { return };
    let calls = Calls::default();
    let api = github_api(&calls);
    let output = github_run(&home, &mock, &event, &api).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("nothing to do: the comment does not mention /opencode or /oc"));
    assert!(calls.lock().unwrap().is_empty());
    assert!(mock.requests().is_empty());
}

#[test]
fn an_opened_pull_request_is_reviewed_in_a_check_run_on_its_head() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some(mut payload) = example("pull_request", "opened") else { return };
    payload["pull_request"]["user"]["type"] = json!("User");
    let event = home.path().join("event.json");
    std::fs::write(&event, payload.to_string()).unwrap();
    let calls = Calls::default();
    let api = github_api(&calls);
    mock.push(text("Looks right; one missing test for the empty case."));
    let output = github_run_for(&home, &mock, "pull_request", &event, &api).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let number = payload["pull_request"]["number"].as_u64().unwrap();
    let sha = payload["pull_request"]["head"]["sha"].as_str().unwrap();
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls[0], format!("GET {number}"));
    let run = "https://github.example/octo/repo/actions/runs/42";
    assert_eq!(
        calls[1],
        format!(
            "CHECK opencode review {sha} neutral Review of #{number} | Looks right; one missing test for the empty case.\n\n<sub>opencode · [run]({run})</sub>"
        )
    );
    let prompt = requests(&mock)[0].iter().find(|m| m["role"] == "user").unwrap()["content"].to_string();
    assert!(prompt.starts_with("\"Review this pull request"), "{prompt}");
}
