//! The server over the real session runtime (`start_server`), configured like a user would: the mock
//! provider as a custom OpenAI-compatible provider in the project's `opencode.json`. (The official SDK
//! against this server is in `sdk`.)

use std::path::PathBuf;

use opencode_config::Env;
use opencode_http_api::Server;
use opencode_http_api::ServerOptions;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::events::Events;
use super::send;

pub struct RuntimeServer {
    /// Kept so that the server runs for the whole test.
    _server: Server,
    pub url: String,
    pub http: reqwest::Client,
    pub mock: MockProvider,
    /// The project directory (the server's default instance).
    pub dir: PathBuf,
    _root: tempfile::TempDir,
}

/// A server whose project config points `mock/m` at a fresh mock provider; `extra` is merged into the
/// config's top level.
pub async fn start_runtime(extra: Value) -> RuntimeServer {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let mock = MockProvider::start().await.unwrap();
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("project");
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    let mut config = mock.opencode_config(json!({
        // The mock answers in arrival order: a background title request would take a scripted answer.
        "agent": {"title": {"disable": true}}
    }));
    if let (Value::Object(config), Value::Object(extra)) = (&mut config, extra) {
        config.extend(extra);
    }
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
    let env = Env::from_pairs([("HOME", root.path().join("home").to_string_lossy().into_owned())]);
    let options = ServerOptions { port: 0, ..ServerOptions::default() };
    let server = opencode_http_api::start_server(options, env, dir.clone()).await.unwrap();
    let url = server.url();
    RuntimeServer { _server: server, url, http: reqwest::Client::new(), mock, dir, _root: root }
}

impl RuntimeServer {
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        send(self.http.get(self.at(path))).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        send(self.http.post(self.at(path)).json(&body)).await
    }

    pub async fn session(&self) -> String {
        let (status, session) = self.post("/session", json!({})).await;
        assert_eq!(status, 200, "{session}");
        session["id"].as_str().unwrap().to_owned()
    }

    /// `/event`, past its `server.connected`.
    pub async fn events(&self) -> Events {
        let mut events = Events::open(&self.http, &self.at("/event")).await;
        assert_eq!(events.next().await.1["type"], "server.connected");
        events
    }
}

/// Events of `session` until (and with) its `session.idle`.
pub async fn until_idle(events: &mut Events, session: &str) -> Vec<Value> {
    let mut seen = Vec::new();
    loop {
        let (_, event) = events.next().await;
        if event["properties"]["sessionID"] != session {
            continue;
        }
        let idle = event["type"] == "session.idle";
        seen.push(event);
        if idle {
            return seen;
        }
    }
}

/// The first event of `session` of type `kind`.
pub async fn first_of(events: &mut Events, session: &str, kind: &str) -> Value {
    loop {
        let (_, event) = events.next().await;
        if event["type"] == kind && event["properties"]["sessionID"] == session {
            return event;
        }
    }
}

pub fn text(answer: &str) -> MockResponse {
    MockResponse::chat_text(answer)
}

pub fn tool_call(id: &str, name: &str, input: Value) -> MockResponse {
    MockResponse::chat_tool_calls(&[(id, name, input)], None)
}

pub fn prompt(text: &str) -> Value {
    json!({ "parts": [{ "type": "text", "text": text }] })
}

pub fn texts(message: &Value) -> String {
    message["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect()
}

/// The chat messages the mock received in request `index`.
pub fn sent_messages(mock: &MockProvider, index: usize) -> Vec<Value> {
    mock.requests()[index].body_json().unwrap()["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_sync_prompt_returns_the_assistant_reply_from_the_provider() {
    let t = start_runtime(json!({})).await;
    t.mock.push(text("Hello from the mock."));
    let id = t.session().await;

    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("Say hello")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    assert_eq!(reply["info"]["providerID"], "mock");
    assert_eq!(reply["info"]["modelID"], "m");
    assert_eq!(texts(&reply), "Hello from the mock.");

    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let roles: Vec<&str> = messages.as_array().unwrap().iter().map(|m| m["info"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant"]);
    assert_eq!(reply["info"]["parentID"], messages[0]["info"]["id"]);
    assert_eq!(texts(&messages[0]), "Say hello");
    let sent = sent_messages(&t.mock, 0);
    assert_eq!(sent.last().unwrap()["role"], "user");
    assert!(sent.last().unwrap()["content"].to_string().contains("Say hello"), "{sent:?}");
    assert_eq!(t.get("/session/status").await.1, json!({}));
}

#[tokio::test]
async fn prompt_async_streams_deltas_part_updates_and_idle() {
    let t = start_runtime(json!({})).await;
    t.mock.push(text("Streamed answer."));
    let id = t.session().await;
    let mut events = t.events().await;

    let response =
        t.http.post(t.at(&format!("/session/{id}/prompt_async"))).json(&prompt("stream")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let seen = until_idle(&mut events, &id).await;

    let kinds: Vec<&str> = seen.iter().map(|e| e["type"].as_str().unwrap()).collect();
    // OpenCode's instance stream carries no V2 (`session.next.*`) events.
    assert!(!kinds.iter().any(|kind| kind.starts_with("session.next.")), "{kinds:?}");
    // The text part is announced before its first delta: OpenCode's clients drop deltas of unknown parts.
    let first_delta = kinds.iter().position(|kind| *kind == "message.part.delta").unwrap();
    let announced = seen[..first_delta].iter().any(|e| {
        e["type"] == "message.part.updated"
            && e["properties"]["part"]["id"] == seen[first_delta]["properties"]["partID"]
    });
    assert!(announced, "{kinds:?}");
    let first_status = seen.iter().find(|e| e["type"] == "session.status").unwrap();
    assert_eq!(first_status["properties"]["status"], json!({"type": "busy"}));
    let deltas: String = seen
        .iter()
        .filter(|e| e["type"] == "message.part.delta")
        .inspect(|e| assert_eq!(e["properties"]["field"], "text"))
        .map(|e| e["properties"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Streamed answer.");
    let text_part = seen
        .iter()
        .rev()
        .find(|e| e["type"] == "message.part.updated" && e["properties"]["part"]["type"] == "text")
        .unwrap_or_else(|| panic!("no text part update in {kinds:?}"));
    assert_eq!(text_part["properties"]["part"]["text"], "Streamed answer.");
    assert!(kinds.contains(&"message.updated"), "{kinds:?}");
    let status_before_idle = &seen[seen.len() - 2];
    assert_eq!(status_before_idle["type"], "session.status");
    assert_eq!(status_before_idle["properties"]["status"], json!({"type": "idle"}));

    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    assert_eq!(texts(&messages[1]), "Streamed answer.");
}

#[tokio::test]
async fn abort_ends_a_running_prompt_with_an_aborted_reply() {
    let t = start_runtime(json!({})).await;
    let stalled = MockResponse::sse([
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Thinking"}}]})
            .to_string(),
    ])
    .then_stall();
    t.mock.push(stalled);
    let id = t.session().await;
    let mut events = t.events().await;

    let sync = {
        let (http, url) = (t.http.clone(), t.at(&format!("/session/{id}/message")));
        tokio::spawn(async move { send(http.post(url).json(&prompt("take your time"))).await })
    };
    let delta = first_of(&mut events, &id, "message.part.delta").await;
    assert_eq!(delta["properties"]["delta"], "Thinking");
    assert_eq!(t.get("/session/status").await.1, json!({ id.clone(): {"type": "busy"} }));

    assert_eq!(t.post(&format!("/session/{id}/abort"), json!({})).await, (200, json!(true)));
    let (status, reply) = sync.await.unwrap();
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["info"]["role"], "assistant");
    assert_eq!(reply["info"]["error"]["name"], "MessageAbortedError");
    assert_eq!(t.get("/session/status").await.1, json!({}));
    let seen = until_idle(&mut events, &id).await;
    assert_eq!(seen.last().unwrap()["type"], "session.idle");
}

#[tokio::test]
async fn a_tool_call_runs_the_real_read_tool_and_shows_as_a_tool_part() {
    let t = start_runtime(json!({})).await;
    let file = t.dir.join("hello.txt");
    std::fs::write(&file, "hello from the project\n").unwrap();
    t.mock.push(tool_call("call_1", "read", json!({ "filePath": file.to_string_lossy() })));
    t.mock.push(text("The file greets you."));
    let id = t.session().await;

    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("What does hello.txt say?")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "The file greets you.");

    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let tool = messages
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .find(|p| p["type"] == "tool")
        .unwrap_or_else(|| panic!("no tool part in {messages}"));
    assert_eq!(tool["tool"], "read");
    assert_eq!(tool["callID"], "call_1");
    assert_eq!(tool["state"]["status"], "completed", "{tool}");
    assert!(tool["state"]["output"].as_str().unwrap().contains("hello from the project"), "{tool}");
    // The second request carried the tool result back to the model.
    let sent = sent_messages(&t.mock, 1);
    let result = sent.iter().find(|m| m["role"] == "tool").unwrap();
    assert!(result["content"].to_string().contains("hello from the project"), "{result}");
}

#[tokio::test]
async fn a_permission_ask_waits_for_the_reply_over_http() {
    let t = start_runtime(json!({ "permission": { "bash": "ask" } })).await;
    t.mock.push(tool_call("call_1", "bash", json!({ "command": "echo approved", "description": "Say approved" })));
    t.mock.push(text("Done."));
    let id = t.session().await;
    let mut events = t.events().await;

    let response =
        t.http.post(t.at(&format!("/session/{id}/prompt_async"))).json(&prompt("run it")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let asked = first_of(&mut events, &id, "permission.asked").await;
    assert_eq!(asked["properties"]["permission"], "bash");
    assert_eq!(asked["properties"]["patterns"], json!(["echo approved"]));
    assert_eq!(asked["properties"]["tool"]["callID"], "call_1");
    let request = asked["properties"]["id"].as_str().unwrap();

    assert_eq!(t.post(&format!("/permission/{request}/reply"), json!({ "reply": "once" })).await, (200, json!(true)));
    let seen = until_idle(&mut events, &id).await;
    let replied = seen.iter().find(|e| e["type"] == "permission.replied").unwrap();
    assert_eq!(replied["properties"]["requestID"], request);
    assert_eq!(replied["properties"]["reply"], "once");

    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let parts: Vec<&Value> = messages.as_array().unwrap().iter().flat_map(|m| m["parts"].as_array().unwrap()).collect();
    let tool = parts.iter().find(|p| p["type"] == "tool").unwrap();
    assert_eq!(tool["state"]["status"], "completed", "{tool}");
    assert!(tool["state"]["output"].as_str().unwrap().contains("approved"), "{tool}");
    assert_eq!(texts(messages.as_array().unwrap().last().unwrap()), "Done.");
    // Answering again is a conflict, not a second delivery.
    assert_eq!(t.post(&format!("/permission/{request}/reply"), json!({ "reply": "once" })).await.0, 409);
}

#[tokio::test]
async fn todowrite_keeps_the_list_in_the_store_and_announces_it() {
    let t = start_runtime(json!({})).await;
    let todos = json!([{ "content": "write the tests", "status": "in_progress", "priority": "high" }]);
    t.mock.push(tool_call("call_1", "todowrite", json!({ "todos": todos })));
    t.mock.push(text("Planned."));
    let id = t.session().await;
    let mut events = t.events().await;

    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("plan")).await;
    assert_eq!(status, 200, "{reply}");
    let updated = first_of(&mut events, &id, "todo.updated").await;
    assert_eq!(updated["properties"]["todos"], todos);
    assert_eq!(t.get(&format!("/session/{id}/todo")).await, (200, todos));
}

#[tokio::test]
async fn summarize_compacts_the_session_through_the_runtime() {
    // Keep no recent turns out of the summary, so that a short conversation has something to compact.
    let t = start_runtime(json!({ "compaction": { "preserve_recent_tokens": 0 } })).await;
    t.mock.push(text("First answer."));
    t.mock.push(text("Summary of the conversation."));
    let id = t.session().await;
    assert_eq!(t.post(&format!("/session/{id}/message"), prompt("first")).await.0, 200);

    let body = json!({ "providerID": "mock", "modelID": "m" });
    assert_eq!(t.post(&format!("/session/{id}/summarize"), body).await, (200, json!(true)));
    assert_eq!(t.mock.requests().len(), 2);
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let summary = messages.as_array().unwrap().iter().find(|m| m["info"]["summary"] == true).unwrap();
    assert_eq!(texts(summary), "Summary of the conversation.");
}

#[tokio::test]
async fn an_unknown_model_in_a_prompt_is_invalid_input() {
    let t = start_runtime(json!({})).await;
    let id = t.session().await;
    let body =
        json!({ "model": { "providerID": "mock", "modelID": "nope" }, "parts": [{ "type": "text", "text": "x" }] });
    let (status, error) = t.post(&format!("/session/{id}/message"), body).await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["data"]["code"], "INVALID_INPUT");
    assert!(t.mock.requests().is_empty());
}

#[tokio::test]
async fn health_reports_the_runtime_caches_under_the_configured_budget() {
    let t = start_runtime(json!({"memory": {"history_cache_mb": 1, "location_idle_seconds": 0}})).await;
    let session = t.session().await;
    t.mock.push(text("Hi."));
    let (status, reply) = t.post(&format!("/session/{session}/message"), prompt("hello")).await;
    assert_eq!(status, 200, "{reply}");

    let (status, health) = t.get("/global/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["healthy"], true);
    let memory = &health["memory"];
    assert!(memory["rss"].as_u64().is_some_and(|rss| rss > 0), "{memory}");
    let history = &memory["runtime"]["history"];
    assert_eq!(history["budget"], 1024 * 1024, "{memory}");
    assert_eq!(history["sessions"], 1, "{memory}");
    assert!(history["bytes"].as_u64().is_some_and(|bytes| bytes > 0), "{memory}");
    assert_eq!(memory["runtime"]["locations"], 1, "{memory}");
    // Only a binary chooses (and reports) the allocator.
    assert_eq!(memory["allocator"], Value::Null);
}

#[tokio::test]
async fn undo_puts_back_the_files_a_turn_wrote_and_redo_brings_them_back() {
    let t = start_runtime(json!({})).await;
    opencode_mock_provider::git::init_committed(&t.dir);
    let id = t.session().await;
    let mut events = t.events().await;
    t.mock.push(tool_call("call_1", "write", json!({ "filePath": "hello.txt", "content": "hi there\n" })));
    t.mock.push(text("Done."));
    let (status, _) = t.post(&format!("/session/{id}/message"), prompt("write hello")).await;
    assert_eq!(status, 200);
    let hello = t.dir.join("hello.txt");
    assert_eq!(std::fs::read_to_string(&hello).unwrap(), "hi there\n");

    // The turn's diff: on the user message, at /session/{id}/diff, and as `session.diff`.
    let diff = first_of(&mut events, &id, "session.diff").await;
    assert_eq!(diff["properties"]["diff"][0]["file"], "hello.txt", "{diff}");
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let user = messages[0]["info"]["id"].as_str().unwrap().to_owned();
    assert_eq!(messages[0]["info"]["summary"]["diffs"][0]["status"], "added", "{}", messages[0]["info"]);
    let patch = messages[1]["parts"].as_array().unwrap().iter().find(|p| p["type"] == "patch").unwrap();
    assert_eq!(patch["files"], json!([hello.to_string_lossy()]));
    let (_, diffs) = t.get(&format!("/session/{id}/diff?messageID={user}")).await;
    assert_eq!(diffs[0]["file"], "hello.txt");
    assert_eq!(diffs[0]["additions"], 1);

    // Undo: the file the turn wrote is gone, the undone change is reported.
    let (status, session) = t.post(&format!("/session/{id}/revert"), json!({ "messageID": user })).await;
    assert_eq!(status, 200, "{session}");
    assert!(!hello.exists());
    assert!(session["revert"]["snapshot"].is_string(), "{session}");
    assert!(session["revert"]["diff"].as_str().unwrap().contains("-hi there"), "{session}");
    assert_eq!(session["summary"], json!({ "additions": 1, "deletions": 0, "files": 1 }));
    let undone = first_of(&mut events, &id, "session.diff").await;
    assert_eq!(undone["properties"]["diff"][0]["file"], "hello.txt", "{undone}");

    // Redo: back as the turn left it.
    let (status, session) = t.post(&format!("/session/{id}/unrevert"), json!({})).await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(std::fs::read_to_string(&hello).unwrap(), "hi there\n");
    assert!(session["revert"].is_null());
}
