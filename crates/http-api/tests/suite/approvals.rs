//! `always` approvals are a project's, and durable: a restarted server over the same data directory
//! still applies them in that project, and never in another. Pending permission requests are listed
//! by `GET /permission` (OpenCode 1.18's `permission.list`).

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use opencode_config::Env;
use opencode_http_api::Server;
use opencode_http_api::ServerOptions;
use opencode_mock_provider::MockProvider;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::directory_query;
use super::events::Events;
use super::runtime::first_of;
use super::runtime::prompt;
use super::runtime::text;
use super::runtime::tool_call;
use super::runtime::until_idle;
use super::send;

/// Two git projects (`a`, `b`) configured with the mock provider and `bash: ask`, and a home whose
/// data directory survives server restarts.
struct Projects {
    root: tempfile::TempDir,
    a: PathBuf,
    b: PathBuf,
    mock: MockProvider,
}

impl Projects {
    async fn new() -> Self {
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        let mock = MockProvider::start().await.unwrap();
        let root = tempfile::tempdir().unwrap();
        let config = mock.opencode_config(json!({
            "agent": {"title": {"disable": true}},
            "permission": {"bash": "ask"}
        }));
        let project = |name: &str| {
            let dir = root.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
            git(&dir, &["init", "-q"]);
            git(&dir, &["add", "."]);
            git(&dir, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", name]);
            dir.canonicalize().unwrap()
        };
        let (a, b) = (project("a"), project("b"));
        Self { a, b, mock, root }
    }

    /// A server started in project `a` over the shared home.
    async fn start(&self) -> Client {
        let env = Env::from_pairs([("HOME", self.root.path().join("home").to_string_lossy().into_owned())]);
        let options = ServerOptions { port: 0, ..ServerOptions::default() };
        let server = opencode_http_api::start_server(options, env, self.a.clone()).await.unwrap();
        Client { url: server.url(), server, http: reqwest::Client::new() }
    }
}

struct Client {
    server: Server,
    url: String,
    http: reqwest::Client,
}

impl Client {
    async fn get(&self, path: &str) -> (u16, Value) {
        send(self.http.get(format!("{}{path}", self.url))).await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        send(self.http.post(format!("{}{path}", self.url)).json(&body)).await
    }

    async fn events(&self, dir: &Path) -> Events {
        let mut events = Events::open(&self.http, &format!("{}/event?{}", self.url, directory_query(dir))).await;
        assert_eq!(events.next().await.1["type"], "server.connected");
        events
    }

    async fn session(&self, dir: &Path) -> String {
        let (status, session) = self.post(&format!("/session?{}", directory_query(dir)), json!({})).await;
        assert_eq!(status, 200, "{session}");
        session["id"].as_str().unwrap().to_owned()
    }

    /// Prompts `session` in `dir` and waits until it is idle; the events it produced.
    async fn run(&self, dir: &Path, session: &str, events: &mut Events) -> Vec<Value> {
        let path = format!("/session/{session}/prompt_async?{}", directory_query(dir));
        assert_eq!(self.post(&path, prompt("run it")).await.0, 204);
        until_idle(events, session).await
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success(), "git {args:?} failed");
}

fn echo() -> Value {
    json!({ "command": "echo approved", "description": "Say approved" })
}

/// The one tool part of the session's messages.
async fn tool_part(client: &Client, session: &str) -> Value {
    let (_, messages) = client.get(&format!("/session/{session}/message")).await;
    let mut parts = messages.as_array().unwrap().iter().flat_map(|m| m["parts"].as_array().unwrap().clone());
    parts.find(|p| p["type"] == "tool").unwrap()
}

#[tokio::test]
async fn always_approvals_survive_a_restart_in_their_project_only() {
    let projects = Projects::new().await;
    let first = projects.start().await;

    // Project a: the call asks, is listed by GET /permission, and is approved "always".
    projects.mock.push(tool_call("call_1", "bash", echo()));
    projects.mock.push(text("Done."));
    let session_a = first.session(&projects.a).await;
    let mut events = first.events(&projects.a).await;
    let path = format!("/session/{session_a}/prompt_async?{}", directory_query(&projects.a));
    assert_eq!(first.post(&path, prompt("run it")).await.0, 204);
    let asked = first_of(&mut events, &session_a, "permission.asked").await;
    let request = asked["properties"]["id"].as_str().unwrap().to_owned();
    assert!(request.starts_with("per_"), "{request}");
    let (status, listed) = first.get(&format!("/permission?{}", directory_query(&projects.a))).await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["id"], request.as_str());
    assert_eq!(listed[0]["sessionID"], session_a.as_str());
    assert_eq!(listed[0]["permission"], "bash");
    assert_eq!(listed[0]["patterns"], json!(["echo approved"]));
    assert_eq!(listed[0]["tool"]["callID"], "call_1");
    // Another project's instance does not list it.
    let (_, other) = first.get(&format!("/permission?{}", directory_query(&projects.b))).await;
    assert_eq!(other, json!([]));
    let reply = first.post(&format!("/permission/{request}/reply"), json!({ "reply": "always" })).await;
    assert_eq!(reply, (200, json!(true)));
    until_idle(&mut events, &session_a).await;
    assert_eq!(tool_part(&first, &session_a).await["state"]["status"], "completed");
    assert_eq!(first.get("/permission").await.1, json!([]));
    first.server.shutdown().await.unwrap();

    // A new server over the same data directory: the same call in project a runs without asking.
    let second = projects.start().await;
    projects.mock.push(tool_call("call_2", "bash", echo()));
    projects.mock.push(text("Done again."));
    let again = second.session(&projects.a).await;
    let mut events = second.events(&projects.a).await;
    let seen = second.run(&projects.a, &again, &mut events).await;
    assert!(seen.iter().all(|e| e["type"] != "permission.asked"), "asked again after the restart");
    let tool = tool_part(&second, &again).await;
    assert_eq!(tool["state"]["status"], "completed", "{tool}");
    assert!(tool["state"]["output"].as_str().unwrap().contains("approved"), "{tool}");

    // Project b never approved it: the same call asks there.
    projects.mock.push(tool_call("call_3", "bash", echo()));
    let asked_before = projects.mock.requests().len();
    let session_b = second.session(&projects.b).await;
    let mut events = second.events(&projects.b).await;
    let path = format!("/session/{session_b}/prompt_async?{}", directory_query(&projects.b));
    assert_eq!(second.post(&path, prompt("run it")).await.0, 204);
    let asked = first_of(&mut events, &session_b, "permission.asked").await;
    let request = asked["properties"]["id"].as_str().unwrap();
    let reply = second.post(&format!("/permission/{request}/reply"), json!({ "reply": "reject" })).await;
    assert_eq!(reply, (200, json!(true)));
    until_idle(&mut events, &session_b).await;
    assert_eq!(tool_part(&second, &session_b).await["state"]["status"], "error");
    // Declined without a word, the turn halts there (as in OpenCode): the model is not asked again.
    assert_eq!(projects.mock.requests().len(), asked_before + 1);

    // Declined with feedback, the model goes on with it.
    let path = format!("/session/{session_b}/prompt_async?{}", directory_query(&projects.b));
    projects.mock.push(tool_call("call_4", "bash", echo()));
    projects.mock.push(text("Done with printf."));
    assert_eq!(second.post(&path, prompt("try again")).await.0, 204);
    let asked = first_of(&mut events, &session_b, "permission.asked").await;
    let request = asked["properties"]["id"].as_str().unwrap();
    let reply = json!({ "reply": "reject", "message": "use printf" });
    assert_eq!(second.post(&format!("/permission/{request}/reply"), reply).await, (200, json!(true)));
    until_idle(&mut events, &session_b).await;
    let last = projects.mock.requests().last().unwrap().body_json().unwrap().to_string();
    assert!(last.contains("with the following feedback: use printf"), "{last}");
}
