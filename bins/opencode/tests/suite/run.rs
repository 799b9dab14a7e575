//! `opencode run` end to end: the built binary against the mock provider configured as a custom
//! OpenAI-compatible provider.

use opencode_mock_provider::{MockProvider, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Home, requests, stderr, stdout, text, tool_call, transcript};

pub(super) fn mock() -> (tokio::runtime::Runtime, MockProvider) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    (runtime, mock)
}

#[test]
fn a_plain_run_streams_the_answer_and_reports_usage() {
    let (_rt, mock) = mock();
    let home = Home::new();
    mock.push(text("Hello there"));
    let output = home.run(&mock, &["say", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Hello there\n");
    assert!(stderr(&output).contains("tokens: 100 in, 10 out · cost $0.0000"), "{}", stderr(&output));
    let request = &mock.requests()[0];
    assert_eq!(request.path_and_query, "/v1/chat/completions");
    let body = request.body_json().unwrap();
    assert_eq!(body["model"], "m");
    assert_eq!(transcript(body["messages"].as_array().unwrap()), ["user: say hi"]);
}

#[test]
fn standard_input_is_appended_to_the_message() {
    let (_rt, mock) = mock();
    let home = Home::new();
    mock.push(text("ok"));
    let output = home.run(&mock, &["summarise:"]).write_stdin("line one\nline two\n").output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(transcript(&requests(&mock)[0]), ["user: summarise:\nline one\nline two"]);
}

#[test]
fn a_tool_loop_reads_and_edits_files_in_the_project() {
    let (_rt, mock) = mock();
    let home = Home::new();
    std::fs::create_dir(home.work().join("src")).unwrap();
    std::fs::write(home.work().join("src/lib.rs"), "pub fn answer() -> u32 {\n    41\n}\n").unwrap();
    mock.push_all([
        tool_call("call_1", "read", json!({"filePath": "src/lib.rs"})),
        tool_call("call_2", "edit", json!({"filePath": "src/lib.rs", "oldString": "41", "newString": "42"})),
        tool_call("call_3", "write", json!({"filePath": "NOTES.md", "content": "answer fixed\n"})),
        text("The answer is now 42."),
    ]);
    let output = home.run(&mock, &["Fix the answer"]).output().unwrap();
    let err = stderr(&output);
    assert!(output.status.success(), "{err}");
    assert_eq!(stdout(&output), "The answer is now 42.\n");
    let tools: Vec<&str> = err.lines().filter(|line| line.starts_with("| ")).collect();
    assert_eq!(tools.len(), 3, "{err}");
    assert!(tools[0].starts_with("| read ") && tools[1].starts_with("| edit ") && tools[2].starts_with("| write "));
    assert!(err.contains("tokens: 250 in, 25 out"), "{err}");
    // The final tree.
    let mut tree: Vec<(String, String)> = walk(&home.work());
    tree.sort();
    assert_eq!(
        tree,
        [
            ("NOTES.md".to_owned(), "answer fixed\n".to_owned()),
            ("src/lib.rs".to_owned(), "pub fn answer() -> u32 {\n    42\n}\n".to_owned()),
        ]
    );
    let requests = requests(&mock);
    assert_eq!(requests.len(), 4);
    let read = requests[1].iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(read.contains("41"), "{read}");
}

#[test]
fn json_format_prints_one_event_per_line() {
    let (_rt, mock) = mock();
    let home = Home::new();
    std::fs::write(home.work().join("hello.txt"), "hello\n").unwrap();
    mock.push_all([tool_call("call_1", "read", json!({"filePath": "hello.txt"})), text("It says hello.")]);
    let output = home.run(&mock, &["--format", "json", "What does hello.txt say?"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events: Vec<Value> = stdout(&output).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["step_start", "tool_use", "step_finish", "step_start", "text", "step_finish"]);
    let session = events[0]["sessionID"].as_str().unwrap();
    assert!(session.starts_with("ses_"));
    assert!(events.iter().all(|e| e["sessionID"] == session && e["timestamp"].as_i64().unwrap() > 0));
    assert_eq!(events[1]["part"]["tool"], "read");
    assert_eq!(events[1]["part"]["state"]["status"], "completed");
    assert!(events[1]["part"]["state"]["output"].as_str().unwrap().contains("hello"));
    assert_eq!(events[4]["part"]["text"], "It says hello.");
    assert_eq!(events[5]["part"]["tokens"]["output"], 10);
    assert!(!stderr(&output).contains("tokens:"), "usage is in step_finish events, not on stderr");
}

#[test]
fn continue_sends_the_first_turn_as_history_of_the_second() {
    let (_rt, mock) = mock();
    let home = Home::new();
    mock.push_all([text("Nice to meet you, Ada."), text("Your name is Ada.")]);
    let first = home.run(&mock, &["--title", "names", "My name is Ada."]).output().unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let second = home.run(&mock, &["-c", "What is my name?"]).output().unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(stdout(&second), "Your name is Ada.\n");
    assert_eq!(
        transcript(&requests(&mock)[1]),
        ["user: My name is Ada.", "assistant: Nice to meet you, Ada.", "user: What is my name?"]
    );
    let list = home.with_mock(&mock, &["session", "list", "--format", "json"]).output().unwrap();
    let sessions: Vec<Value> = serde_json::from_str(&stdout(&list)).unwrap();
    assert_eq!(sessions.len(), 1);
    assert_eq!(sessions[0]["title"], "names");
}

#[test]
fn session_and_fork_pick_the_session_to_continue() {
    let (_rt, mock) = mock();
    let home = Home::new();
    mock.push_all([text("one"), text("two"), text("three")]);
    let first = home.run(&mock, &["--format", "json", "first"]).output().unwrap();
    let events: Vec<Value> = stdout(&first).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let id = events[0]["sessionID"].as_str().unwrap().to_owned();
    let forked = home.run(&mock, &["-s", &id, "--fork", "--format", "json", "second"]).output().unwrap();
    assert!(forked.status.success(), "{}", stderr(&forked));
    let fork_id = serde_json::from_str::<Value>(stdout(&forked).lines().next().unwrap()).unwrap()["sessionID"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(fork_id, id);
    assert_eq!(transcript(&requests(&mock)[1]), ["user: first", "assistant: one", "user: second"]);
    // The original is unchanged by the fork.
    let again = home.run(&mock, &["-s", &id, "third"]).output().unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(transcript(&requests(&mock)[2]), ["user: first", "assistant: one", "user: third"]);
    let unknown = home.run(&mock, &["-s", "ses_nope", "hi"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).starts_with("error: no session `ses_nope`\nhint: "), "{}", stderr(&unknown));
}

#[test]
fn without_a_model_run_explains_how_to_set_one_up_in_two_lines() {
    let home = Home::new();
    let output = home.opencode(&["run", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0], "error: no model given and no provider has credentials");
    assert!(lines[1].starts_with("hint: set an API key"), "{err}");
    assert!(lines[1].contains("Ollama, LM Studio") && lines[1].contains("baseURL"), "{err}");
    assert_eq!(stdout(&output), "");
}

#[test]
fn a_permission_request_is_rejected_without_auto_and_approved_with_it() {
    let (_rt, mock) = mock();
    let home = Home::new();
    std::fs::write(home.work().join("a.txt"), "old\n").unwrap();
    let ask = json!({"permission": {"edit": "ask"}});
    let edit = || tool_call("call_1", "edit", json!({"filePath": "a.txt", "oldString": "old", "newString": "new"}));
    mock.push(edit());
    let rejected = home.run_with(&mock, ask.clone(), &["edit a.txt"]).output().unwrap();
    let err = stderr(&rejected);
    assert!(
        err.contains(
            "permission requested: edit (a.txt); rejected because the run is non-interactive (pass --auto to approve)"
        ),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(home.work().join("a.txt")).unwrap(), "old\n");
    // A declined call halts the turn, as in OpenCode: the model is not asked again.
    assert!(rejected.status.success(), "{err}");
    assert_eq!(requests(&mock).len(), 1);

    mock.push_all([edit(), text("Done.")]);
    let approved = home.run_with(&mock, ask, &["--auto", "edit a.txt"]).output().unwrap();
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert!(stderr(&approved).contains("permission edit (a.txt) approved (--auto)"), "{}", stderr(&approved));
    assert_eq!(std::fs::read_to_string(home.work().join("a.txt")).unwrap(), "new\n");
}

#[test]
fn run_is_assembled_as_the_server_is_its_tools_and_the_projects_saved_approvals() {
    let (_rt, mock) = mock();
    let home = Home::new();
    std::fs::write(home.work().join("a.txt"), "old\n").unwrap();
    // An `always` approval the project got on the server (or in an editor) holds in `run` too.
    let database = home.path().join("home/.local/share/opencode/opencode-rs.db");
    std::fs::create_dir_all(database.parent().unwrap()).unwrap();
    let store = opencode_session_store::Store::open(&database).unwrap();
    store
        .write(|tx| {
            tx.ensure_global_project()?;
            tx.save_approval(opencode_session_store::GLOBAL_PROJECT, "edit", "*")
        })
        .unwrap();
    drop(store);
    let edit = tool_call("call_1", "edit", json!({"filePath": "a.txt", "oldString": "old", "newString": "new"}));
    mock.push_all([edit, text("Done.")]);
    let output = home.run_with(&mock, json!({"permission": {"edit": "ask"}}), &["edit a.txt"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!stderr(&output).contains("permission requested"), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(home.work().join("a.txt")).unwrap(), "new\n");
    let body = mock.requests()[0].body_json().unwrap();
    let tools: Vec<&str> =
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    for name in ["todowrite", "todoread", "question", "bash", "edit"] {
        assert!(tools.contains(&name), "{name} missing from {tools:?}");
    }
}

#[test]
fn a_provider_failure_exits_non_zero_with_a_one_line_cause() {
    let (_rt, mock) = mock();
    let home = Home::new();
    let failure = MockResponse::json(500, &json!({"error": {"message": "upstream exploded", "type": "server_error"}}))
        .header("retry-after-ms", "1");
    mock.push_all(std::iter::repeat_n(failure, 20));
    let output = home.run(&mock, &["hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines.len() >= 2, "{err}");
    let (cause, hint) = (lines[lines.len() - 2], lines[lines.len() - 1]);
    assert!(cause.starts_with("error: ") && cause.contains("upstream exploded"), "{err}");
    assert!(hint.starts_with("hint: "), "{err}");
    assert!(mock.requests().len() <= 9, "retries are bounded");

    let (_rt2, garbage) = self::mock();
    garbage.push(MockResponse::body(200, "text/event-stream", "data: {not json\n\n"));
    let output = home.run(&garbage, &["hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[lines.len() - 2].starts_with("error: "), "{err}");
    assert!(lines[lines.len() - 1].starts_with("hint: "), "{err}");
}

#[test]
fn attachments_become_file_parts_or_inlined_text() {
    let (_rt, mock) = mock();
    let home = Home::new();
    std::fs::write(home.work().join("notes.txt"), "remember the milk\n").unwrap();
    std::fs::write(home.work().join("dot.png"), [0x89, b'P', b'N', b'G']).unwrap();
    mock.push(text("Seen."));
    let output = home.run(&mock, &["-f", "notes.txt", "--file", "dot.png", "look"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let body = mock.requests()[0].body_json().unwrap();
    let user = body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap().clone();
    assert_eq!(user["content"][0]["text"], "look\n\n<file path=\"notes.txt\">\nremember the milk\n</file>");
    assert_eq!(user["content"][1]["type"], "image_url");
    assert_eq!(user["content"][1]["image_url"]["url"], "data:image/png;base64,iVBORw==");
    let missing = home.run(&mock, &["-f", "nope.txt", "look"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).starts_with("error: cannot read attachment nope.txt"), "{}", stderr(&missing));
}

/// Every file under `root` as (relative path, content).
fn walk(root: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            for (name, content) in walk(&path) {
                out.push((format!("{}/{name}", path.file_name().unwrap().to_string_lossy()), content));
            }
        } else {
            out.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn model_and_agent_flags_are_used_and_checked() {
    let (_rt, mock) = mock();
    let home = Home::new();
    mock.push(text("planned"));
    let extra = json!({"provider": {"mock": {"models": {"big": {"tool_call": true}}}}});
    let output =
        home.run_with(&mock, extra.clone(), &["-m", "mock/big", "--agent", "plan", "plan it"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(mock.requests()[0].body_json().unwrap()["model"], "big");
    let bad_model = home.run_with(&mock, extra.clone(), &["-m", "big", "hi"]).output().unwrap();
    assert_eq!(bad_model.status.code(), Some(1));
    assert!(stderr(&bad_model).contains("is not of the form provider/model"), "{}", stderr(&bad_model));
    let bad_agent = home.run_with(&mock, extra, &["--agent", "nope", "hi"]).output().unwrap();
    assert_eq!(bad_agent.status.code(), Some(1));
    assert!(stderr(&bad_agent).starts_with("error: unknown agent \"nope\""), "{}", stderr(&bad_agent));
    assert_eq!(mock.requests().len(), 1, "nothing is sent for a bad flag");
}

#[test]
fn an_unknown_variant_fails_in_one_line_naming_the_model() {
    let (_rt, mock) = mock();
    let home = Home::new();
    let output = home.run(&mock, &["--variant", "nope", "hi"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with("error: model mock/"), "{err}");
    assert!(err.contains("has no variant `nope`"), "{err}");
    assert_eq!(mock.requests().len(), 0, "nothing was sent");
}

#[test]
fn a_command_expands_its_template_with_the_message_as_arguments() {
    let (_rt, mock) = mock();
    let home = Home::new();
    let dir = home.work().join(".opencode/command");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("review.md"),
        "---\ndescription: review a file\n---\nReview @$1 for $2.\nBranch: !`echo main`\n",
    )
    .unwrap();
    std::fs::write(home.work().join("notes.md"), "remember the milk\n").unwrap();
    mock.push(text("Reviewed."));
    let output = home.run(&mock, &["--command", "review", "notes.md", "\"typos and style\""]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Reviewed.\n");
    assert_eq!(
        transcript(&requests(&mock)[0]),
        [
            "user: Review @notes.md for typos and style.\nBranch: main\n\n<file path=\"notes.md\">\nremember the milk\n</file>"
        ]
    );
}

#[test]
fn a_configured_command_brings_its_model() {
    let (_rt, mock) = mock();
    let home = Home::new();
    let extra = json!({
        "provider": {"mock": {"models": {"m2": {}}}},
        "command": {"summary": {"template": "Summarise $ARGUMENTS briefly", "model": "mock/m2"}}
    });
    mock.push(text("Short."));
    let output = home.run_with(&mock, extra, &["--command", "/summary", "the", "repo"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let body = mock.requests()[0].body_json().unwrap();
    assert_eq!(body["model"], "m2");
    assert_eq!(transcript(body["messages"].as_array().unwrap()), ["user: Summarise the repo briefly"]);
}

#[test]
fn an_unknown_command_fails_listing_the_known_ones() {
    let (_rt, mock) = mock();
    let home = Home::new();
    std::fs::create_dir_all(home.work().join(".opencode/commands")).unwrap();
    std::fs::write(home.work().join(".opencode/commands/lint.md"), "Lint it").unwrap();
    let output = home.run(&mock, &["--command", "nope", "x"]).output().unwrap();
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(err.contains("unknown command `nope` (known: init, lint)"), "{err}");
    assert!(mock.requests().is_empty());
}

#[test]
fn a_subtask_command_runs_its_agent_in_a_child_session_before_the_model_summarises() {
    let (_rt, mock) = mock();
    let home = Home::new();
    let extra = json!({
        "command": {"probe": {"template": "Probe $ARGUMENTS", "description": "probe the code", "agent": "general", "subtask": true}}
    });
    mock.push(text("Child found it."));
    mock.push(text("Parent: found."));
    let output = home.run_with(&mock, extra, &["--command", "probe", "the", "code"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).ends_with("Parent: found.\n"), "{}", stdout(&output));
    let sent = requests(&mock);
    assert_eq!(sent.len(), 2, "the child's turn, then the parent's");
    assert_eq!(transcript(&sent[0]).last().unwrap(), "user: Probe the code");
    let parent = transcript(&sent[1]);
    assert_eq!(parent.first().unwrap(), "user: The following tool was executed by the user");
    assert!(
        parent.iter().any(|line| line.starts_with("tool: <task id=") && line.contains("Child found it.")),
        "{parent:?}"
    );
    assert_eq!(parent.last().unwrap(), &format!("user: {}", opencode_session_runtime::SUBTASK_SUMMARY_PROMPT));
}

/// The real `@modelcontextprotocol/server-everything` (from npm) is configured: the first and only
/// model request already offers its tools (the turn waited for it to connect). A server that never
/// answers is left out after its own `timeout`, and the user is told.
#[test]
fn mcp_tools_are_offered_in_the_first_turn() {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let spec = "@modelcontextprotocol/server-everything@2026.8.31";
    let Some(prefix) = opencode_mock_provider::peer::npm_install(cache, spec) else { return };
    let everything = prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let stuck = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/mcp/tests/servers/scripted.mjs");
    let (_rt, mock) = mock();
    let home = Home::new();
    mock.push(text("ok"));
    let mcp = json!({"mcp": {
        "everything": {"type": "local", "command": ["node", everything, "stdio"]},
        "stuck": {"type": "local", "command": ["node", stuck, "--stuck"], "timeout": 1000}
    }});
    let output = home.run_with(&mock, mcp, &["say", "hi"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(mock.requests().len(), 1);
    let request = mock.requests()[0].body_json().unwrap();
    let tools: Vec<&str> =
        request["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(tools.contains(&"everything_echo"), "{tools:?}");
    assert!(!tools.iter().any(|name| name.starts_with("stuck_")), "{tools:?}");
    assert!(stderr(&output).contains("warning: MCP server `stuck` is left out: failed"), "{}", stderr(&output));
}
