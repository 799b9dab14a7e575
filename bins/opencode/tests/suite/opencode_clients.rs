//! OpenCode 1.18.34's own clients against our server (`opencode serve`), as its users run them: its
//! TUI (`opencode attach URL`, in tmux), its CLI (`opencode run --attach`), and the order and shape of
//! the events they read, compared with what OpenCode's own server sends for the same turn. Skipped
//! with a notice without the OpenCode binary or tmux; required under `CI`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use opencode_mock_provider::MockProvider;
use opencode_mock_provider::peer::OpenCode;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::support::Home;
use super::support::Served;
use super::tui::ANSWER;
use super::tui::Tmux;
use super::tui::mock;
use super::tui::project;

/// OpenCode's own `opencode serve` in the project.
fn theirs(opencode: &OpenCode, home: &Home) -> Served {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut command = opencode.command_in(&home.path().join("peer-home"), &home.work());
    command.args(["serve", "--hostname", "127.0.0.1", "--port", &port.to_string()]);
    command.stdout(Stdio::piped()).stderr(Stdio::null());
    Served::start(command)
}

/// OpenCode's TUI attached to our `opencode serve`, in a git project whose `opencode.json` names the
/// mock (which calls `bash ls`, then answers) with `extra` merged in.
struct Attached {
    tui: Tmux,
    server: Served,
    home: Home,
    mock: MockProvider,
    opencode: OpenCode,
    _rt: tokio::runtime::Runtime,
}

/// [`Attached`], or `None` (with a notice) without the OpenCode binary or tmux.
fn attached(extra: Value) -> Option<Attached> {
    let opencode = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR")))?;
    let (rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, extra);
    opencode_mock_provider::git::init_committed(&home.work());
    let server = home.serve();
    let tui = their_tui(&opencode, &home, &server.url)?;
    Some(Attached { tui, server, home, mock, opencode, _rt: rt })
}

/// OpenCode's TUI attached to `url`, in tmux, in the project.
fn their_tui(opencode: &OpenCode, home: &Home, url: &str) -> Option<Tmux> {
    their_tui_in(opencode, home, url, &home.work())
}

/// OpenCode's TUI attached to `url` for the directory `work`, in tmux.
fn their_tui_in(opencode: &OpenCode, home: &Home, url: &str, work: &Path) -> Option<Tmux> {
    let env: Vec<String> = opencode
        .environment(&home.path().join("tui-home"))
        .into_iter()
        .map(|(key, value)| format!("{key}='{value}'"))
        .collect();
    let work = work.display().to_string();
    let line = format!(
        "cd '{work}' && env -i PATH=\"$PATH\" TERM=xterm-256color PWD='{work}' {} '{}' attach '{url}' --dir '{work}'",
        env.join(" "),
        opencode.binary.display()
    );
    let tui = Tmux::start(&line)?;
    tui.wait_for(&["Ask anything"]);
    Some(tui)
}

#[test]
fn opencodes_tui_shows_a_tool_turn_live_and_undo_hides_it() {
    let Some(attached) = attached(json!({})) else { return };
    let tui = &attached.tui;
    tui.type_line("list the files here");
    // OpenCode's TUI shows the command and, collapsed, not its output.
    tui.wait_for(&["list the files here", "$ ls", ANSWER]);
    tui.type_line("/undo");
    let screen = tui.wait_for(&["reverted"]);
    assert!(!screen.contains(ANSWER), "the reverted turn is hidden:\n{screen}");
}

#[test]
fn opencodes_tui_asks_for_permission_and_allow_once_finishes_the_turn() {
    let Some(attached) = attached(json!({"permission": {"bash": "ask"}})) else { return };
    let tui = &attached.tui;
    tui.type_line("list the files here");
    tui.wait_for(&["Permission required", "Allow once"]);
    tui.keys(&["Enter"]);
    let screen = tui.wait_for(&["$ ls", ANSWER]);
    assert!(!screen.contains("Permission required"), "{screen}");
}

/// "Allow always" asks once for the project; "Reject" halts the turn there: the model is not asked
/// again, as against OpenCode's own server.
#[test]
fn opencodes_tui_allow_always_asks_once_and_reject_halts_the_turn() {
    let Some(attached) = attached(json!({"permission": {"bash": "ask"}})) else { return };
    let Attached { tui, server, home, mock, opencode, _rt } = attached;
    tui.type_line("list the files here");
    tui.wait_for(&["Permission required", "Allow always"]);
    tui.keys(&["Right", "Enter"]);
    tui.wait_for(&["This will allow the following patterns", "- ls *"]);
    tui.keys(&["Enter"]);
    tui.wait_for(&["notes.txt", ANSWER]);
    tui.type_line("and again");
    tui.wait_for(&["┃  and again"]);
    let screen = tui.wait_until("the second answer", |screen| screen.matches(ANSWER).count() >= 2);
    assert!(!screen.contains("Permission required"), "asked again after allow always:\n{screen}");

    // A new project has approved nothing: Reject there ends the turn after the call.
    let other = home.work().join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(home.work().join("opencode.json"), other.join("opencode.json")).unwrap();
    opencode_mock_provider::git::init_committed(&other);
    drop(tui);
    let Some(tui) = their_tui_in(&opencode, &home, &server.url, &other) else { return };
    let turns_before = tool_turns(&mock);
    tui.type_line("list the files here");
    tui.wait_for(&["Permission required", "Reject"]);
    tui.keys(&["Right", "Right", "Enter"]);
    // The dialog closes first (a failure here shows the screen), then the turn ends.
    tui.wait_until("the permission dialog to close", |screen| !screen.contains("Permission required"));
    wait_idle(&server.url, &other);
    assert_eq!(tool_turns(&mock), turns_before + 1, "the model was asked again after a rejection");
    let screen = tui.screen();
    assert!(!screen.contains("Permission required") && !screen.contains(ANSWER), "{screen}");
}

/// What a user does with sessions in OpenCode's TUI, against our server: undo and redo, compact,
/// rename, a second session, delete, and the agent switch.
#[test]
fn opencodes_tui_drives_redo_compact_rename_new_delete_and_agents() {
    let Some(attached) = attached(json!({})) else { return };
    let (tui, url, work) = (&attached.tui, &attached.server.url, attached.home.work());
    tui.type_line("list the files here");
    tui.wait_for(&["$ ls", "notes.txt", ANSWER]);
    tui.type_line("/undo");
    tui.wait_for(&["1 message reverted"]);
    tui.keys(&["C-x", "r"]);
    let screen = tui.wait_for(&["notes.txt", ANSWER]);
    assert!(!screen.contains("reverted"), "{screen}");

    tui.type_line("/compact");
    tui.wait_for(&["Compaction", "▣  Compaction"]);

    tui.type_line("/sessions");
    tui.wait_for(&["Sessions", "rename ctrl+r"]);
    tui.keys(&["C-r"]);
    tui.wait_for(&["Rename Session"]);
    tui.keys(&["C-u"]);
    tui.type_line("Renamed by the user");
    wait_for_sessions(url, &work, |titles| titles == ["Renamed by the user"]);

    tui.type_line("/new");
    tui.type_line("a second prompt");
    tui.wait_for(&["┃  a second prompt", ANSWER]);
    wait_for_sessions(url, &work, |titles| titles.len() == 2);
    tui.type_line("/sessions");
    tui.wait_for(&["Sessions", "Renamed by the user"]);
    // The current session is first; the renamed one is below it.
    tui.keys(&["Down", "C-d"]);
    tui.wait_for(&["again to confirm"]);
    tui.keys(&["C-d"]);
    wait_for_sessions(url, &work, |titles| titles.len() == 1 && !titles.contains(&"Renamed by the user".to_owned()));
    tui.keys(&["Escape", "Tab"]);
    tui.wait_for(&["Plan ·"]);
}

#[test]
fn opencodes_cli_prints_the_tool_call_and_the_final_answer_every_time() {
    let Some(opencode) = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR"))) else { return };
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let server = home.serve();
    for run in 0..5 {
        let output = opencode
            .command_in(&home.path().join("cli-home"), &home.work())
            .args(["run", "--attach", &server.url, "--dir", &home.work().display().to_string(), "list files"])
            .output()
            .unwrap();
        let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "run {run}:\n{printed}");
        for shown in ["ls", "notes.txt", ANSWER] {
            assert!(printed.contains(shown), "run {run} did not print {shown:?}:\n{printed}");
        }
    }
}

/// One tool turn (a `bash` call, then the answer) against OpenCode's server and ours, with the same
/// mock: each assistant message's parts must go through the same steps in the same order, and every
/// property OpenCode's events carry must be in ours too.
#[test]
fn the_event_stream_matches_opencodes_for_a_tool_turn() {
    let Some(opencode) = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR"))) else { return };
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let their_events = turn_events(&theirs(&opencode, &home).url, &home);
    let our_events = turn_events(&home.serve().url, &home);

    assert_eq!(part_steps(&our_events), part_steps(&their_events), "the steps of each message's parts");
    let expected = vec![
        vec!["step-start", "tool:pending", "tool:running", "tool:completed", "step-finish"],
        vec!["step-start", "text:announced", "text:delta", "text:done", "step-finish"],
    ];
    assert_eq!(part_steps(&our_events), expected);
    let mut lacking = Vec::new();
    for (kind, keys) in property_keys(&their_events) {
        let ours = property_keys(&our_events).into_iter().find(|(k, _)| *k == kind);
        let Some((_, our_keys)) = ours else {
            assert!(!MUST_SEND.contains(&kind.as_str()), "we never send {kind}");
            continue;
        };
        let missing: Vec<&String> =
            keys.iter().filter(|key| !our_keys.contains(key) && !KNOWN_GAPS.contains(&key.as_str())).collect();
        if !missing.is_empty() {
            lacking.push(format!("{kind} lacks {missing:?}"));
        }
    }
    assert!(lacking.is_empty(), "{}", lacking.join("\n"));
    let ours_last = our_events.iter().rev().find(|e| e["type"] == "session.status").unwrap();
    assert_eq!(ours_last["properties"]["status"]["type"], "idle");
    assert!(!our_events.iter().any(|e| e["type"].as_str().unwrap().starts_with("session.next.")));
}

/// A turn that writes a file in a git project, against OpenCode's server and ours: the step parts
/// carry snapshots, the writing step ends with a `patch` part, the user message gets its
/// `summary.diffs`, both send `session.diff`; and undo removes the written file on both.
#[test]
fn a_write_turn_in_a_git_project_records_the_same_snapshots_and_undo_removes_the_file() {
    let Some(opencode) = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR"))) else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    mock.respond_with(|request| {
        let body = request.body_json().unwrap_or_default();
        let offers_write = body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "write"));
        let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
        if offers_write && last["role"] == "user" {
            let input = json!({"filePath": "hello.txt", "content": "hi there\n"});
            opencode_mock_provider::MockResponse::chat_tool_calls(&[("call_1", "write", input)], None)
        } else {
            opencode_mock_provider::MockResponse::chat_text(ANSWER)
        }
    });
    let home = Home::new();
    project(&home, &mock, json!({}));
    opencode_mock_provider::git::init_committed(&home.work());
    let hello = home.work().join("hello.txt");
    let mut runs = Vec::new();
    for server in [theirs(&opencode, &home), home.serve()] {
        let events = turn_events(&server.url, &home);
        assert_eq!(std::fs::read_to_string(&hello).unwrap(), "hi there\n");
        let session =
            events.iter().find_map(|e| e["properties"]["info"]["id"].as_str().filter(|id| id.starts_with("ses")));
        let session = session.unwrap().to_owned();
        // OpenCode computes the turn's diff after the session goes idle: wait until it is stored.
        let stored = || get(&server.url, &format!("/session/{session}/message"), &home.work());
        let mut messages = stored();
        for _ in 0..100 {
            if messages[0]["info"]["summary"]["diffs"].as_array().is_some_and(|diffs| !diffs.is_empty()) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            messages = stored();
        }
        let user = messages[0]["info"]["id"].as_str().unwrap().to_owned();
        let reverted =
            post(&server.url, &format!("/session/{session}/revert"), json!({"messageID": user}), &home.work());
        assert!(!hello.exists(), "undo removes the written file: {reverted}");
        runs.push((events, messages, reverted));
    }
    let [(their_events, theirs_stored, their_revert), (our_events, ours_stored, our_revert)] = &runs[..] else {
        unreachable!()
    };
    let expected = vec![
        vec!["step-start", "tool:pending", "tool:running", "tool:completed", "step-finish", "patch"],
        vec!["step-start", "text:announced", "text:delta", "text:done", "step-finish"],
    ];
    assert_eq!(part_steps(their_events), expected);
    assert_eq!(part_steps(our_events), expected);
    for events in [their_events, our_events] {
        assert!(events.iter().any(|e| e["type"] == "session.diff"), "session.diff is sent");
    }
    for stored in [theirs_stored, ours_stored] {
        let diffs = &stored[0]["info"]["summary"]["diffs"];
        assert_eq!((diffs[0]["file"].as_str(), diffs[0]["status"].as_str()), (Some("hello.txt"), Some("added")));
        let parts = stored[1]["parts"].as_array().unwrap();
        assert!(parts[0]["snapshot"].is_string(), "{}", parts[0]);
        let patch = parts.iter().find(|p| p["type"] == "patch").unwrap();
        assert_eq!(patch["files"], json!([hello.to_string_lossy()]));
        assert_eq!(patch["hash"], parts[0]["snapshot"]);
    }
    for revert in [their_revert, our_revert] {
        assert!(revert["revert"]["snapshot"].is_string(), "{revert}");
        assert!(revert["revert"]["diff"].as_str().unwrap().contains("-hi there"), "{revert}");
    }
}

/// Session fields OpenCode fills from every prompt: the agent and model last used. Ours records them
/// when a prompt names them (OpenCode's TUI always does), so that a session without a choice of its
/// own keeps following the configured model.
const KNOWN_GAPS: &[&str] = &["info.agent", "info.model"];

/// Events OpenCode's clients act on; ours must send each of them for this turn.
const MUST_SEND: &[&str] = &[
    "session.created",
    "session.updated",
    "session.status",
    "session.idle",
    "message.updated",
    "message.part.updated",
    "message.part.delta",
];

/// The `/event` stream of one synchronous prompt, from subscription to idle.
fn turn_events(url: &str, home: &Home) -> Vec<Value> {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let directory = home.work().display().to_string();
        let http = reqwest::Client::new();
        let with_dir = |request: reqwest::RequestBuilder| request.query(&[("directory", &directory)]);
        let mut stream = with_dir(http.get(format!("{url}/event"))).send().await.unwrap();
        let session: Value =
            with_dir(http.post(format!("{url}/session")).json(&json!({}))).send().await.unwrap().json().await.unwrap();
        let id = session["id"].as_str().unwrap().to_owned();
        let body = json!({"parts": [{"type": "text", "text": "list the files here"}]});
        let prompt = tokio::spawn(with_dir(http.post(format!("{url}/session/{id}/message")).json(&body)).send());
        let (mut events, mut buffer) = (Vec::new(), String::new());
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let chunk = tokio::time::timeout(Duration::from_secs(30), stream.chunk()).await.unwrap().unwrap().unwrap();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let frame: String = buffer.drain(..end + 2).collect();
                let Some(data) = frame.lines().find_map(|l| l.strip_prefix("data: ")) else { continue };
                let event: Value = serde_json::from_str(data).unwrap();
                let mine = event["properties"]["sessionID"] == id.as_str()
                    || event["properties"]["info"]["id"] == id.as_str()
                    || event["properties"]["part"]["sessionID"] == id.as_str();
                if mine {
                    events.push(event);
                }
            }
            let idle =
                events.iter().any(|e| e["type"] == "session.status" && e["properties"]["status"]["type"] == "idle");
            if idle {
                break;
            }
        }
        prompt.await.unwrap().unwrap();
        events
    })
}

/// For each assistant message, in order, what happened to its parts: `type[:status]`, a text part's
/// first (empty) announcement, its deltas and its final state, consecutive repeats collapsed.
fn part_steps(events: &[Value]) -> Vec<Vec<String>> {
    let mut messages: Vec<(String, Vec<String>)> = Vec::new();
    let mut step = |message: &str, what: String| {
        if !messages.iter().any(|(id, _)| id == message) {
            messages.push((message.to_owned(), Vec::new()));
        }
        let steps = &mut messages.iter_mut().find(|(id, _)| id == message).unwrap().1;
        if steps.last() != Some(&what) {
            steps.push(what);
        }
    };
    for event in events {
        let properties = &event["properties"];
        match event["type"].as_str().unwrap() {
            "message.part.updated" => {
                let part = &properties["part"];
                let kind = part["type"].as_str().unwrap();
                let what = match kind {
                    "tool" => format!("tool:{}", part["state"]["status"].as_str().unwrap()),
                    "text" if part["time"]["end"].is_null() => "text:announced".to_owned(),
                    "text" => "text:done".to_owned(),
                    other => other.to_owned(),
                };
                step(part["messageID"].as_str().unwrap(), what);
            }
            "message.part.delta" => step(properties["messageID"].as_str().unwrap(), "text:delta".to_owned()),
            _ => {}
        }
    }
    messages.into_iter().map(|(_, steps)| steps).filter(|steps| steps.len() > 1).collect()
}

/// Each event type's property keys (and its `info` / `part` keys), first occurrence.
fn property_keys(events: &[Value]) -> Vec<(String, Vec<String>)> {
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap().to_owned();
        if seen.iter().any(|(k, _)| *k == kind) {
            continue;
        }
        let mut keys = Vec::new();
        if let Value::Object(properties) = &event["properties"] {
            for (key, value) in properties {
                keys.push(key.clone());
                if let (true, Value::Object(inner)) = (key == "info" || key == "part", value) {
                    keys.extend(inner.keys().map(|inner| format!("{key}.{inner}")));
                }
            }
        }
        seen.push((kind, keys));
    }
    seen
}

/// How many requests offered the model its tools (provider turns, not titles).
fn tool_turns(mock: &opencode_mock_provider::MockProvider) -> usize {
    mock.requests().iter().filter(|r| r.body_json().is_ok_and(|body| body["tools"].is_array())).count()
}

/// `GET url path?directory=work` as JSON.
fn get(url: &str, path: &str, work: &Path) -> Value {
    call(reqwest::Method::GET, url, path, None, work)
}

fn post(url: &str, path: &str, body: Value, work: &Path) -> Value {
    call(reqwest::Method::POST, url, path, Some(body), work)
}

/// One call for the project `work`; the JSON answer.
fn call(method: reqwest::Method, url: &str, path: &str, body: Option<Value>, work: &Path) -> Value {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut request = reqwest::Client::new()
            .request(method, format!("{url}{path}"))
            .query(&[("directory", work.display().to_string())]);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap().json().await.unwrap()
    })
}

/// Waits until no session of `work` is busy.
fn wait_idle(url: &str, work: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    // A turn starts before its permission is asked; the statuses then show it until it ends.
    while get(url, "/session/status", work).as_object().is_some_and(|busy| !busy.is_empty()) {
        assert!(Instant::now() < deadline, "the session never went idle");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the titles of `work`'s sessions satisfy `done`.
fn wait_for_sessions(url: &str, work: &Path, done: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let sessions = get(url, "/session", work);
        let titles: Vec<String> =
            sessions.as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap().to_owned()).collect();
        if done(&titles) {
            return;
        }
        assert!(Instant::now() < deadline, "sessions never as expected: {titles:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
