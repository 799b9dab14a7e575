//! `opencode import --from-opencode` on a database the real OpenCode 1.18.34 wrote (npm, offline,
//! against the mock provider): a text turn, a tool loop, a child session from the `task` tool and an
//! aborted turn. Ours then shows exactly what OpenCode's own `export` shows, and OpenCode's files are
//! never changed.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use opencode_mock_provider::peer::{OpenCode, mock_project_config};
use opencode_mock_provider::{MockProvider, MockResponse, RecordedRequest};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Home, stderr, stdout};

const SUBAGENT_PROMPT: &str = "Look around the project and report.";
/// A prompt the model starts answering and then never finishes.
const STALLING_PROMPT: &str = "Stall-forever-please";

/// What the model answers, by the conversation so far (OpenCode also asks for titles meanwhile).
fn answer(request: &RecordedRequest) -> MockResponse {
    let body = request.body_json().unwrap_or_default();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or_default();
    let text = last["content"].to_string();
    if body["tools"].as_array().is_none_or(Vec::is_empty) {
        return MockResponse::chat_text("A mock title");
    }
    if last["role"] == "tool" {
        return MockResponse::chat_text("Done with the tools.");
    }
    if text.contains(SUBAGENT_PROMPT) {
        MockResponse::chat_text("The subagent looked around.")
    } else if text.contains("list files") {
        MockResponse::chat_tool_calls(
            &[("call_ls", "bash", json!({"command": "ls", "description": "List files"}))],
            Some((40, 6)),
        )
    } else if text.contains("delegate") {
        let input = json!({"description": "Look around", "prompt": SUBAGENT_PROMPT, "subagent_type": "general"});
        MockResponse::chat_tool_calls(&[("call_task", "task", input)], Some((50, 8)))
    } else if text.contains(STALLING_PROMPT) {
        let first =
            json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Starting a long"}}]});
        MockResponse::sse([first.to_string()]).then_stall()
    } else {
        MockResponse::chat_text("Hello from the mock.")
    }
}

struct Peer {
    opencode: OpenCode,
    home: Home,
    _runtime: tokio::runtime::Runtime,
    mock: MockProvider,
}

impl Peer {
    fn start() -> Option<Self> {
        let opencode = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR")))?;
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let mock = runtime.block_on(MockProvider::start()).unwrap();
        mock.respond_with(answer);
        let home = Home::new();
        let config = mock_project_config(&format!("{}/v1", mock.base_url()));
        std::fs::write(home.work().join("opencode.json"), config).unwrap();
        Some(Self { opencode, home, _runtime: runtime, mock })
    }

    fn theirs(&self) -> Command {
        self.opencode.command_in(&self.home.path().join("home"), &self.home.work())
    }

    /// Runs OpenCode; fails the test with its output if it fails.
    fn run_theirs(&self, args: &[&str]) -> String {
        let output = self.theirs().args(args).output().unwrap();
        assert!(output.status.success(), "OpenCode {args:?} failed:\n{}\n{}", stdout(&output), stderr(&output));
        stdout(&output)
    }

    /// `opencode run` interrupted while the model is still answering.
    fn aborted_turn(&self) {
        let asked = |mock: &MockProvider| {
            mock.requests().iter().any(|r| String::from_utf8_lossy(&r.body).contains(STALLING_PROMPT))
        };
        let mut child =
            self.theirs().args(["run", STALLING_PROMPT]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let started = Instant::now();
        while !asked(&self.mock) && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(800));
        let _sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _killed = child.kill();
        let _reaped = child.wait();
    }

    fn data_dir(&self) -> PathBuf {
        self.home.path().join("home/.local/share/opencode")
    }

    fn ours(&self, args: &[&str]) -> std::process::Output {
        self.home.opencode(args).output().unwrap()
    }
}

/// Numbers as floats: JavaScript writes a cost of 0 as `0`, Rust's f64 as `0.0`; both are the same number.
fn same_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(Value::Number(n), |f| json!(f)),
        Value::Array(items) => Value::Array(items.into_iter().map(same_numbers).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, same_numbers(v))).collect()),
        other => other,
    }
}

/// OpenCode's database and its write-ahead log, byte for byte.
fn their_files(data: &Path) -> Vec<(String, Vec<u8>)> {
    ["opencode.db", "opencode.db-wal"]
        .into_iter()
        .filter_map(|name| std::fs::read(data.join(name)).ok().map(|bytes| (name.to_owned(), bytes)))
        .collect()
}

fn session_ids(listing: &str) -> Vec<String> {
    let mut ids: Vec<String> = listing
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.starts_with("ses_"))
        .map(str::to_owned)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// `GET path` on our server (HTTP/1.0, so the body is plain).
fn get(address: &str, path: &str) -> Value {
    let mut stream = TcpStream::connect(address).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|err| panic!("{err}: {response}"))
}

/// The messages of each session through our `serve`, as `GET /session/{id}/message` returns them.
fn served_messages(home: &Home, ids: &[String]) -> Vec<Value> {
    let server = home.serve();
    ids.iter().map(|id| get(&server.address, &format!("/session/{id}/message"))).collect()
}

#[test]
fn opencode_history_comes_across_as_opencode_itself_exports_it() {
    let Some(peer) = Peer::start() else { return };
    peer.run_theirs(&["run", "say hi"]);
    peer.run_theirs(&["run", "list files"]);
    peer.run_theirs(&["run", "delegate this"]);
    peer.aborted_turn();
    let roots = session_ids(&peer.run_theirs(&["session", "list"]));
    assert_eq!(roots.len(), 4, "OpenCode made four sessions");
    let mut exports: Vec<(String, Value)> = Vec::new();
    for id in &roots {
        let export: Value = serde_json::from_str(&peer.run_theirs(&["export", id])).unwrap();
        exports.push((id.clone(), export));
    }
    let child: Vec<String> = exports
        .iter()
        .flat_map(|(_, e)| e["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["tool"] == "task")
        .filter_map(|p| p["state"]["metadata"]["sessionId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(child.len(), 1, "the task tool made a child session");
    let export: Value = serde_json::from_str(&peer.run_theirs(&["export", &child[0]])).unwrap();
    exports.push((child[0].clone(), export));

    let unfinished = exports
        .iter()
        .flat_map(|(_, e)| e["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| {
            m["info"]["role"] == "assistant"
                && (m["info"]["error"].is_object() || m["info"]["time"]["completed"].is_null())
        })
        .count();
    assert_eq!(unfinished, 1, "the interrupted turn left its answer unfinished");

    let before = their_files(&peer.data_dir());
    let first = peer.ours(&["import", "--from-opencode"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let summary = stderr(&first);
    assert!(summary.contains("imported from") && summary.contains("5 sessions"), "{summary}");
    assert!(!summary.contains("skipped"), "{summary}");

    // Ours shows the same sessions, messages and parts as OpenCode's own export of them.
    let listed = session_ids(&stdout(&peer.ours(&["session", "list"])));
    assert_eq!(listed, roots);
    for (id, theirs) in &exports {
        let ours: Value = serde_json::from_str(&stdout(&peer.ours(&["export", id]))).unwrap();
        assert_eq!(same_numbers(ours), same_numbers(theirs.clone()), "session {id}");
    }
    let ids: Vec<String> = exports.iter().map(|(id, _)| id.clone()).collect();
    for ((id, theirs), served) in exports.iter().zip(served_messages(&peer.home, &ids)) {
        assert_eq!(same_numbers(served), same_numbers(theirs["messages"].clone()), "GET /session/{id}/message");
    }
    let texts = exports.iter().map(|(_, e)| e.to_string()).collect::<String>();
    for seen in ["Hello from the mock.", "Done with the tools.", "The subagent looked around.", "opencode.json"] {
        assert!(texts.contains(seen), "{seen} is in the history");
    }

    // Again: nothing added, nothing changed; OpenCode's files as they were; OpenCode still works.
    let again = stderr(&peer.ours(&["import", "--from-opencode"]));
    assert!(again.contains(": 0 sessions, 0 messages, 0 parts"), "{again}");
    assert!(their_files(&peer.data_dir()) == before, "OpenCode's database and log are unchanged");
    assert_eq!(session_ids(&peer.run_theirs(&["session", "list"])), roots);
}

#[test]
fn the_hint_to_import_is_shown_once_and_not_after_an_import() {
    let Some(peer) = Peer::start() else { return };
    peer.run_theirs(&["run", "say hi"]);
    let hint = "opencode import --from-opencode";
    let first = stderr(&peer.ours(&["session", "list"]));
    assert_eq!(first.lines().filter(|l| l.contains(hint)).count(), 1, "{first}");
    assert!(!stderr(&peer.ours(&["session", "list"])).contains(hint), "shown once");

    let fresh = Peer { home: Home::new(), ..peer };
    let config = mock_project_config(&format!("{}/v1", fresh.mock.base_url()));
    std::fs::write(fresh.home.work().join("opencode.json"), config).unwrap();
    fresh.run_theirs(&["run", "say hi"]);
    assert!(fresh.ours(&["import", "--from-opencode"]).status.success());
    assert!(!stderr(&fresh.ours(&["session", "list"])).contains(hint), "not after an import");
}
