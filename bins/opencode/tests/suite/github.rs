//! `opencode github run` as a GitHub Actions job runs it: GitHub's own webhook payloads (from
//! `@octokit/webhooks-examples`), a local stand-in for GitHub's API at `GITHUB_API_URL` that
//! records every call, a real git repository with a local bare remote, and the mock provider as
//! the model. Every call the stand-in received is checked against GitHub's published REST
//! description (`@octokit/openapi`): its path, method, query and body must be a valid operation.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::http::Method;
use axum::http::StatusCode;
use axum::http::Uri;
use axum::response::IntoResponse;
use axum::response::Response;
use opencode_mock_provider::MockProvider;
use serde_json::Value;
use serde_json::json;

use super::support::Home;
use super::support::mock_config;
use super::support::requests;
use super::support::stderr;
use super::support::stdout;
use super::support::text;
use super::support::tool_call;

pub(super) const TOKEN: &str = "ghs_secret_token_value";
pub(super) const RUN: &str = "https://github.example/octo/repo/actions/runs/42";

/// One call the stand-in received.
#[derive(Debug, Clone)]
pub(super) struct Call {
    method: String,
    /// The path under the API base, with its query.
    path: String,
    body: Value,
    authorization: String,
}

impl Call {
    /// `METHOD path` and, when there is one, the body's `body` field.
    fn line(&self) -> String {
        match self.body["body"].as_str() {
            Some(text) => format!("{} {} {text}", self.method, self.path),
            None => format!("{} {}", self.method, self.path),
        }
    }
}

/// An answer the stand-in gives instead of its usual one, once, to the next call whose path
/// starts with `path`.
struct Fault {
    path: String,
    status: u16,
    headers: Vec<(&'static str, String)>,
    message: &'static str,
}

#[derive(Clone, Default)]
pub(super) struct Api {
    calls: Arc<Mutex<Vec<Call>>>,
    faults: Arc<Mutex<Vec<Fault>>>,
    /// The repository a pull request's head branch is in.
    head_repository: Arc<Mutex<String>>,
}

impl Api {
    /// The stand-in for `octo/repo`'s API under `/api/v3`, on its own thread; its URL.
    pub(super) fn start(&self) -> String {
        *self.head_repository.lock().unwrap() = "octo/repo".to_owned();
        let api = self.clone();
        let (url_sender, url) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async move {
                let app =
                    Router::new().fallback(move |method, uri, headers, body| answer(api, method, uri, headers, body));
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                url_sender.send(format!("http://{}/api/v3", listener.local_addr().unwrap())).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        url.recv().unwrap()
    }

    fn fail(&self, path: &str, status: u16, headers: &[(&'static str, &str)], message: &'static str) {
        let headers = headers.iter().map(|(name, value)| (*name, (*value).to_owned())).collect();
        self.faults.lock().unwrap().push(Fault { path: path.to_owned(), status, headers, message });
    }

    pub(super) fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    pub(super) fn lines(&self) -> Vec<String> {
        self.calls().iter().map(Call::line).collect()
    }
}

async fn answer(api: Api, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path_and_query().unwrap().as_str().trim_start_matches("/api/v3").to_owned();
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = headers.get("authorization").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    api.calls.lock().unwrap().push(Call { method: method.to_string(), path: path.clone(), body, authorization });
    let fault = {
        let mut faults = api.faults.lock().unwrap();
        faults.iter().position(|f| path.starts_with(&f.path)).map(|at| faults.remove(at))
    };
    if let Some(fault) = fault {
        let mut response =
            (StatusCode::from_u16(fault.status).unwrap(), Json(json!({"message": fault.message}))).into_response();
        for (name, value) in fault.headers {
            response.headers_mut().insert(name, value.parse().unwrap());
        }
        return response;
    }
    let segments: Vec<&str> = path.split('?').next().unwrap().trim_start_matches('/').split('/').collect();
    let created = |value: Value| (StatusCode::CREATED, Json(value)).into_response();
    match (method.as_str(), &segments[3..]) {
        ("GET", ["issues", _, "comments"]) => {
            Json(json!([{"id": 11, "user": {"login": "ana"}, "body": "It crashes when the config is empty."}]))
                .into_response()
        }
        ("POST", ["issues", _, "comments"]) => created(json!({"id": 900})),
        ("PATCH", ["issues", "comments", id]) => Json(json!({"id": id.parse::<u64>().unwrap()})).into_response(),
        ("POST", ["pulls", _, "comments", _, "replies"]) => created(json!({"id": 901})),
        ("PATCH", ["pulls", "comments", id]) => Json(json!({"id": id.parse::<u64>().unwrap()})).into_response(),
        ("POST", ["check-runs"]) => created(json!({"id": 5})),
        ("POST", ["pulls"]) => created(json!({"number": 77})),
        ("GET", ["pulls", number]) => Json(json!({
            "number": number.parse::<u64>().unwrap(),
            "head": {"ref": "feature", "repo": {"full_name": api.head_repository.lock().unwrap().clone()}},
            "base": {"ref": "main"}
        }))
        .into_response(),
        _ => (StatusCode::NOT_FOUND, Json(json!({"message": "Not Found"}))).into_response(),
    }
}

/// GitHub's first example payload of event `name` with `action`, its author a person.
fn example(name: &str, action: &str) -> Option<Value> {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let prefix = opencode_mock_provider::peer::npm_install(cache, "@octokit/webhooks-examples@7.6.1")?;
    let index = prefix.join("node_modules/@octokit/webhooks-examples/api.github.com/index.json");
    let all: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(index).unwrap()).unwrap();
    let examples = &all.iter().find(|event| event["name"] == name).unwrap()["examples"];
    let mut payload = examples.as_array().unwrap().iter().find(|p| p["action"] == action).cloned()?;
    for author in ["/comment/user/type", "/pull_request/user/type", "/issue/user/type"] {
        if let Some(kind) = payload.pointer_mut(author) {
            *kind = json!("User");
        }
    }
    Some(payload)
}

/// GitHub's first example `issue_comment` (created) payload, its comment's body replaced.
pub(super) fn comment_event(home: &Home, body: &str) -> Option<(PathBuf, Value)> {
    let mut payload = example("issue_comment", "created")?;
    payload["comment"]["body"] = json!(body);
    Some((write_event(home, &payload), payload))
}

fn write_event(home: &Home, payload: &Value) -> PathBuf {
    let path = home.path().join("event.json");
    std::fs::write(&path, payload.to_string()).unwrap();
    path
}

/// `opencode github run` as Actions runs it for event `name`, against the stand-in at `api`.
pub(super) fn github_run(home: &Home, mock: &MockProvider, name: &str, event: &Path, api: &str) -> assert_cmd::Command {
    let mut command = home.opencode(&["github", "run"]);
    command
        .env("PATH", std::env::var("PATH").unwrap())
        .env("OPENCODE_CONFIG_CONTENT", mock_config(mock, json!({})))
        .env("GITHUB_EVENT_NAME", name)
        .env("GITHUB_EVENT_PATH", event)
        .env("GITHUB_REPOSITORY", "octo/repo")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_API_URL", api)
        .env("GITHUB_SERVER_URL", "https://github.example")
        .env("GITHUB_RUN_ID", "42");
    command
}

pub(super) use opencode_mock_provider::git::git;

/// The home's work directory as Actions checks a repository out: a clone of a bare `origin` (in
/// the home) on `main`, which also has a branch `feature` one commit ahead; the bare remote.
pub(super) fn checkout(home: &Home) -> PathBuf {
    let remote = home.path().join("origin.git");
    let work = home.work();
    git(home.path(), &["init", "--quiet", "--bare", "--initial-branch=main", remote.to_str().unwrap()]);
    git(&work, &["init", "--quiet", "--initial-branch=main"]);
    std::fs::write(work.join("README.md"), "# repo\n").unwrap();
    git(&work, &["add", "README.md"]);
    git(&work, &["commit", "--quiet", "-m", "Start"]);
    git(&work, &["remote", "add", "origin", remote.to_str().unwrap()]);
    git(&work, &["push", "--quiet", "origin", "main"]);
    git(&work, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(work.join("feature.txt"), "feature\n").unwrap();
    git(&work, &["add", "feature.txt"]);
    git(&work, &["commit", "--quiet", "-m", "Feature"]);
    git(&work, &["push", "--quiet", "origin", "feature"]);
    git(&work, &["checkout", "--quiet", "main"]);
    git(&work, &["branch", "--quiet", "-D", "feature"]);
    remote
}

/// The agent writes `FIX.md`, then answers.
pub(super) fn agent_fixes(mock: &MockProvider) {
    mock.push(tool_call("call_1", "write", json!({"filePath": "FIX.md", "content": "fixed\n"})));
    mock.push(text("I added FIX.md."));
}

#[test]
fn a_mention_gets_a_progress_comment_replaced_by_the_answer() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = comment_event(&home, "/oc why does it crash on start?") else { return };
    let api = Api::default();
    let url = api.start();
    mock.push(text("The config loader unwraps a missing key; see src/config.rs."));
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let n = payload["issue"]["number"].as_u64().unwrap();
    assert_eq!(
        api.lines(),
        [
            format!("POST /repos/octo/repo/issues/{n}/comments Working on it… ([progress]({RUN}))"),
            format!("GET /repos/octo/repo/issues/{n}/comments?per_page=100"),
            format!(
                "PATCH /repos/octo/repo/issues/comments/900 The config loader unwraps a missing key; see src/config.rs.\n\n<sub>opencode · [run]({RUN})</sub>"
            ),
        ]
    );
    assert_valid_rest(&api.calls());
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
    let api = Api::default();
    let url = api.start();
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("nothing to do: the comment does not mention /opencode or /oc"));
    assert!(api.calls().is_empty());
    assert!(mock.requests().is_empty());
}

#[test]
fn an_opened_pull_request_is_reviewed_in_a_check_run_on_its_head() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some(payload) = example("pull_request", "opened") else { return };
    let event = write_event(&home, &payload);
    let api = Api::default();
    let url = api.start();
    mock.push(text("Looks right; one missing test for the empty case."));
    let output = github_run(&home, &mock, "pull_request", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let n = payload["pull_request"]["number"].as_u64().unwrap();
    let sha = payload["pull_request"]["head"]["sha"].as_str().unwrap();
    let calls = api.calls();
    assert_eq!(calls[0].line(), format!("GET /repos/octo/repo/issues/{n}/comments?per_page=100"));
    assert_eq!(calls[1].line(), "POST /repos/octo/repo/check-runs");
    assert_eq!(
        calls[1].body,
        json!({"name": "opencode review", "head_sha": sha, "status": "completed", "conclusion": "neutral", "output": {
            "title": format!("Review of #{n}"),
            "summary": format!("Looks right; one missing test for the empty case.\n\n<sub>opencode · [run]({RUN})</sub>")
        }})
    );
    assert_valid_rest(&calls);
    let prompt = requests(&mock)[0].iter().find(|m| m["role"] == "user").unwrap()["content"].to_string();
    assert!(prompt.starts_with("\"Review this pull request"), "{prompt}");
}

#[test]
fn a_review_comment_is_answered_in_its_thread() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some(mut payload) = example("pull_request_review_comment", "created") else { return };
    payload["comment"]["body"] = json!("/opencode is this line safe?");
    let event = write_event(&home, &payload);
    let api = Api::default();
    let url = api.start();
    mock.push(text("Yes: the index is checked two lines above."));
    let output = github_run(&home, &mock, "pull_request_review_comment", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    let (n, comment) =
        (payload["pull_request"]["number"].as_u64().unwrap(), payload["comment"]["id"].as_u64().unwrap());
    let lines = api.lines();
    assert_eq!(
        lines[0],
        format!("POST /repos/octo/repo/pulls/{n}/comments/{comment}/replies Working on it… ([progress]({RUN}))")
    );
    assert_eq!(lines[1], format!("GET /repos/octo/repo/pulls/{n}"));
    assert!(lines[3].starts_with("PATCH /repos/octo/repo/pulls/comments/901 Yes: the index is checked"), "{lines:?}");
    assert_valid_rest(&api.calls());
    let prompt = requests(&mock)[0].iter().find(|m| m["role"] == "user").unwrap()["content"].to_string();
    assert!(prompt.contains(payload["comment"]["diff_hunk"].as_str().unwrap().lines().next().unwrap()), "{prompt}");
}

#[test]
fn a_fix_asked_on_an_issue_lands_on_a_new_branch_with_a_pull_request() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = comment_event(&home, "/oc please fix the crash on an empty config") else { return };
    let remote = checkout(&home);
    let api = Api::default();
    let url = api.start();
    agent_fixes(&mock);
    let export = home.path().join("session.json");
    let output = github_run(&home, &mock, "issue_comment", &event, &url)
        .args(["--export", export.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    // The branch is on the remote with the agent's commit, the asker as co-author.
    let n = payload["issue"]["number"].as_u64().unwrap();
    let branches = git(&remote, &["branch", "--list", &format!("opencode/issue{n}-*"), "--format=%(refname:short)"]);
    assert_eq!(branches.lines().count(), 1, "{branches}");
    let commit = git(&remote, &["log", "-1", "--format=%an <%ae>%n%s%n%b", &branches]);
    let commenter = payload["comment"]["user"]["login"].as_str().unwrap();
    assert_eq!(
        commit,
        format!(
            "opencode-agent[bot] <opencode-agent[bot]@users.noreply.github.com>\nPlease fix the crash on an empty config\nCo-authored-by: {commenter} <{commenter}@users.noreply.github.com>"
        )
    );
    assert_eq!(git(&remote, &["show", &format!("{branches}:FIX.md")]), "fixed");
    assert_eq!(git(&remote, &["rev-parse", &format!("{branches}~1")]), git(&remote, &["rev-parse", "main"]));

    // The pull request closes the issue; the comment links it.
    let calls = api.calls();
    let opened = calls.iter().find(|call| call.method == "POST" && call.path == "/repos/octo/repo/pulls").unwrap();
    assert_eq!(opened.body["head"], json!(branches));
    assert_eq!(opened.body["base"], payload["repository"]["default_branch"]);
    assert_eq!(opened.body["title"], "Please fix the crash on an empty config");
    assert!(opened.body["body"].as_str().unwrap().starts_with(&format!("I added FIX.md.\n\nCloses #{n}")));
    let last = calls.last().unwrap().line();
    assert!(last.ends_with(&format!("I added FIX.md.\n\nOpened #77: https://github.example/octo/repo/pull/77\n\n<sub>opencode · [run]({RUN})</sub>")), "{last}");
    assert_valid_rest(&calls);

    // The session's export is there for the workflow to upload.
    let exported: Value = serde_json::from_str(&std::fs::read_to_string(export).unwrap()).unwrap();
    assert_eq!(exported["messages"].as_array().unwrap().len(), 3);
}

/// A comment on pull request `feature`'s conversation (the example's issue made a pull request).
fn pull_request_comment(home: &Home, body: &str) -> Option<(PathBuf, Value)> {
    let mut payload = example("issue_comment", "created")?;
    payload["comment"]["body"] = json!(body);
    payload["issue"]["pull_request"] = json!({"url": "https://api.github.example/repos/octo/repo/pulls/1"});
    Some((write_event(home, &payload), payload))
}

#[test]
fn a_change_asked_on_a_pull_request_is_pushed_onto_its_branch() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = pull_request_comment(&home, "/oc add a FIX.md") else { return };
    let remote = checkout(&home);
    let before = git(&remote, &["rev-parse", "feature"]);
    let api = Api::default();
    let url = api.start();
    agent_fixes(&mock);
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));

    // One commit on top of the branch's head, with the branch's own file and the agent's.
    assert_eq!(git(&remote, &["rev-parse", "feature~1"]), before);
    assert_eq!(git(&remote, &["show", "feature:FIX.md"]), "fixed");
    assert_eq!(git(&remote, &["show", "feature:feature.txt"]), "feature");
    let sha = git(&remote, &["rev-parse", "--short=7", "feature"]);
    let n = payload["issue"]["number"].as_u64().unwrap();
    let lines = api.lines();
    assert_eq!(lines[1], format!("GET /repos/octo/repo/pulls/{n}"));
    assert!(lines.last().unwrap().contains(&format!("I added FIX.md.\n\nPushed {sha} to `feature`.")), "{lines:?}");
    assert!(!lines.iter().any(|line| line.starts_with("POST /repos/octo/repo/pulls ")), "{lines:?}");
    assert_valid_rest(&api.calls());
}

#[test]
fn a_change_on_a_forks_pull_request_is_reported_not_pushed() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, _)) = pull_request_comment(&home, "/oc add a FIX.md") else { return };
    let remote = checkout(&home);
    let before = git(&remote, &["rev-parse", "feature"]);
    let api = Api::default();
    let url = api.start();
    *api.head_repository.lock().unwrap() = "someone/fork".to_owned();
    agent_fixes(&mock);
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(git(&remote, &["rev-parse", "feature"]), before);
    let last = api.lines().pop().unwrap();
    assert!(last.contains("My changes are not pushed: the branch is in someone/fork"), "{last}");
}

#[test]
fn a_secondary_rate_limit_is_waited_out() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = comment_event(&home, "/oc hello") else { return };
    let api = Api::default();
    let url = api.start();
    let n = payload["issue"]["number"].as_u64().unwrap();
    let message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.";
    api.fail(&format!("/repos/octo/repo/issues/{n}/comments"), 403, &[("retry-after", "1")], message);
    mock.push(text("Hello."));
    let started = std::time::Instant::now();
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    let lines = api.lines();
    assert_eq!(lines[0], lines[1], "the refused comment is posted again: {lines:?}");
    assert!(lines[3].starts_with("PATCH /repos/octo/repo/issues/comments/900 Hello."), "{lines:?}");
}

#[test]
fn a_refused_call_fails_the_run_in_one_line_without_the_token() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, payload)) = comment_event(&home, "/oc hello") else { return };
    let api = Api::default();
    let url = api.start();
    let n = payload["issue"]["number"].as_u64().unwrap();
    api.fail(&format!("/repos/octo/repo/issues/{n}/comments"), 404, &[], "Not Found");
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(!output.status.success());
    let stderr = stderr(&output);
    assert!(
        stderr.contains(&format!("GitHub POST /repos/octo/repo/issues/{n}/comments failed: 404 Not Found")),
        "{stderr}"
    );
    assert!(stderr.contains("check GITHUB_REPOSITORY"), "{stderr}");
    assert!(!stderr.contains(TOKEN) && !stdout(&output).contains(TOKEN));
    assert!(mock.requests().is_empty(), "nothing is asked of the model when GitHub refuses");
}

#[test]
fn a_model_failure_is_reported_in_the_comment_and_fails_the_run() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some((event, _)) = comment_event(&home, "/oc hello") else { return };
    let api = Api::default();
    let url = api.start();
    let refused = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}});
    mock.push(opencode_mock_provider::MockResponse::json(401, &refused));
    let output = github_run(&home, &mock, "issue_comment", &event, &url).output().unwrap();
    assert!(!output.status.success());
    let last = api.lines().pop().unwrap();
    assert!(last.starts_with("PATCH /repos/octo/repo/issues/comments/900 I could not finish: "), "{last}");
    assert!(last.contains("Incorrect API key provided"), "{last}");
}

#[test]
fn a_missing_or_broken_event_is_a_one_line_error() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let url = "http://127.0.0.1:9/api/v3";
    let missing = home.path().join("missing.json");
    let output = github_run(&home, &mock, "issue_comment", &missing, url).output().unwrap();
    assert!(!output.status.success());
    assert!(stderr(&output).contains(&format!("cannot read the event {}", missing.display())), "{}", stderr(&output));

    let broken = home.path().join("broken.json");
    std::fs::write(&broken, "{not json").unwrap();
    let output = github_run(&home, &mock, "issue_comment", &broken, url).output().unwrap();
    assert!(!output.status.success());
    assert!(stderr(&output).contains("is not JSON"), "{}", stderr(&output));

    std::fs::write(&broken, "{}").unwrap();
    let output = github_run(&home, &mock, "deployment", &broken, url).output().unwrap();
    assert!(output.status.success());
    assert_eq!(stdout(&output), "nothing to do: the deployment event is not one the agent handles\n");
}

/// GitHub's published REST description (`@octokit/openapi`), read once per test process.
fn rest_description() -> Option<&'static Value> {
    static DESCRIPTION: std::sync::OnceLock<Option<Value>> = std::sync::OnceLock::new();
    DESCRIPTION
        .get_or_init(|| {
            let cache = Path::new(env!("CARGO_TARGET_TMPDIR"));
            let prefix = opencode_mock_provider::peer::npm_install(cache, "@octokit/openapi@23.0.2")?;
            let file = prefix.join("node_modules/@octokit/openapi/generated/api.github.com.json");
            Some(serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap())
        })
        .as_ref()
}

/// Fails unless every call is a valid operation of GitHub's REST API: a described path and
/// method, described query parameters, and a body with the required fields and only described
/// ones, each of its described type.
pub(super) fn assert_valid_rest(calls: &[Call]) {
    let Some(description) = rest_description() else { return };
    for call in calls {
        let (path, query) = call.path.split_once('?').unwrap_or((&call.path, ""));
        let operation = description["paths"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(template, _)| path_matches(template, path))
            .find_map(|(_, item)| item.get(call.method.to_lowercase()))
            .unwrap_or_else(|| panic!("{} {path} is not an operation of GitHub's REST API", call.method));
        let parameters: Vec<&str> = operation["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|parameter| resolve(description, parameter))
            .filter(|parameter| parameter["in"] == "query")
            .filter_map(|parameter| parameter["name"].as_str())
            .collect();
        for name in query.split('&').filter(|pair| !pair.is_empty()).map(|pair| pair.split('=').next().unwrap()) {
            assert!(parameters.contains(&name), "{} {path}: no query parameter `{name}`", call.method);
        }
        if call.body.is_null() {
            continue;
        }
        let schema = resolve(description, &operation["requestBody"]["content"]["application/json"]["schema"]);
        for required in schema["required"].as_array().into_iter().flatten() {
            let required = required.as_str().unwrap();
            assert!(!call.body[required].is_null(), "{} {path}: `{required}` is required", call.method);
        }
        for (name, value) in call.body.as_object().unwrap() {
            let property = resolve(description, &schema["properties"][name]);
            assert!(!property.is_null(), "{} {path}: no body field `{name}`", call.method);
            if let Some(kind) = property["type"].as_str() {
                assert!(has_type(value, kind), "{} {path}: `{name}` should be a {kind}: {value}", call.method);
            }
        }
        assert_eq!(call.authorization, format!("Bearer {TOKEN}"), "{} {path}", call.method);
    }
}

fn path_matches(template: &str, path: &str) -> bool {
    let template: Vec<&str> = template.split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    template.len() == path.len()
        && template.iter().zip(&path).all(|(t, p)| t == p || (t.starts_with('{') && t.ends_with('}') && !p.is_empty()))
}

/// `value`, or what its `$ref` points at in the description.
fn resolve<'a>(description: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            resolve(description, description.pointer(pointer).unwrap_or(&Value::Null))
        }
        None => value,
    }
}

fn has_type(value: &Value, kind: &str) -> bool {
    match kind {
        "string" => value.is_string(),
        "integer" => value.is_u64() || value.is_i64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        _ => true,
    }
}

#[test]
fn the_rest_check_refuses_calls_github_does_not_describe() {
    if rest_description().is_none() {
        return;
    }
    let call = |method: &str, path: &str, body: Value| Call {
        method: method.to_owned(),
        path: path.to_owned(),
        body,
        authorization: format!("Bearer {TOKEN}"),
    };
    let refused = |c: Call| std::panic::catch_unwind(|| assert_valid_rest(&[c])).is_err();
    assert!(!refused(call("POST", "/repos/o/r/pulls", json!({"title": "t", "head": "h", "base": "main"}))));
    assert!(refused(call("POST", "/repos/o/r/pulls", json!({"title": "t", "base": "main"}))), "head is required");
    assert!(refused(call("POST", "/repos/o/r/pulls", json!({"head": "h", "base": "main", "colour": "red"}))));
    assert!(refused(call("PUT", "/repos/o/r/issues/comments/1", json!({"body": "b"}))), "no such method");
    assert!(refused(call("GET", "/repos/o/r/issues/1/comments?pages=2", Value::Null)), "no such parameter");
    assert!(refused(call("PATCH", "/repos/o/r/issues/comments/1", json!({"body": 5}))), "body is a string");
}

#[test]
fn an_opened_issue_is_answered_in_a_comment() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let Some(payload) = example("issues", "opened") else { return };
    let event = write_event(&home, &payload);
    let api = Api::default();
    let url = api.start();
    mock.push(text("Set `timeout` in the config; the default is 30 s."));
    let output = github_run(&home, &mock, "issues", &event, &url).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let n = payload["issue"]["number"].as_u64().unwrap();
    let lines = api.lines();
    assert_eq!(lines[0], format!("POST /repos/octo/repo/issues/{n}/comments Working on it… ([progress]({RUN}))"));
    assert!(
        lines[2].starts_with("PATCH /repos/octo/repo/issues/comments/900 Set `timeout` in the config"),
        "{lines:?}"
    );
    assert_valid_rest(&api.calls());
    let prompt = requests(&mock)[0].iter().find(|m| m["role"] == "user").unwrap()["content"].to_string();
    assert!(prompt.starts_with("\"Answer this issue"), "{prompt}");
}

#[test]
fn a_manual_run_does_the_workflows_prompt_and_opens_a_pull_request_for_its_changes() {
    let (_rt, mock) = super::run::mock();
    let home = Home::new();
    let remote = checkout(&home);
    let payload = json!({"inputs": {}, "ref": "refs/heads/main", "repository": {"full_name": "octo/repo", "default_branch": "main"}, "sender": {"login": "ana", "type": "User"}});
    let event = write_event(&home, &payload);
    let api = Api::default();
    let url = api.start();
    agent_fixes(&mock);
    let output = github_run(&home, &mock, "workflow_dispatch", &event, &url)
        .args(["--prompt", "add the weekly FIX.md"])
        .env("GITHUB_ACTOR", "ana")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let branches = git(&remote, &["branch", "--list", "opencode/run-*", "--format=%(refname:short)"]);
    assert_eq!(branches.lines().count(), 1, "{branches}");
    let trailer = git(&remote, &["log", "-1", "--format=%b", &branches]);
    assert_eq!(trailer, "Co-authored-by: ana <ana@users.noreply.github.com>");
    let calls = api.calls();
    assert_eq!(calls.len(), 1, "a manual run has no thread: only the pull request: {:?}", api.lines());
    assert_eq!(calls[0].body["title"], "Add the weekly FIX.md");
    assert_valid_rest(&calls);

    // Without a prompt a manual run is refused, saying which input to set.
    let output = github_run(&home, &mock, "workflow_dispatch", &event, &url).output().unwrap();
    assert!(!output.status.success());
    assert!(stderr(&output).contains("set the action's `prompt` input"), "{}", stderr(&output));
}
