//! `opencode acp` driven by the official TypeScript ACP client (`@agentclientprotocol/sdk`, installed
//! from npm by the test): initialize, a new session, a prompt with a tool call whose permission the
//! client grants, cancel, set mode, set model, and the session loaded in a fresh agent with its
//! history replayed. Skipped with a notice without node/npm; required under `CI`.

use std::path::Path;
use std::process::Command;

use opencode_mock_provider::{MockProvider, MockResponse};
use serde_json::{Value, json};

use super::support::{Home, stderr, stdout};

/// The SDK release the test is written against.
const SDK: &str = "@agentclientprotocol/sdk@2.4.0";

fn sdk() -> Option<std::path::PathBuf> {
    opencode_mock_provider::peer::npm_install(Path::new(env!("CARGO_TARGET_TMPDIR")), SDK)
}

/// The mock (`mock/m`, `mock/r`) and a second provider answering title requests, so that the
/// scripted turns are served in order.
fn config(mock: &MockProvider, titles: &MockProvider) -> String {
    let provider = |url: String, models: Value| json!({"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": url, "apiKey": "x"}, "models": models});
    json!({
        "provider": {
            "mock": provider(format!("{}/v1", mock.base_url()), json!({"m": {"tool_call": true}, "r": {"tool_call": true}})),
            "titles": provider(format!("{}/v1", titles.base_url()), json!({"t": {}}))
        },
        "model": "mock/m",
        "small_model": "titles/t",
        "permission": {"bash": "ask"}
    })
    .to_string()
}

/// The session updates of `kind`.
fn of_kind<'a>(updates: &'a Value, kind: &str) -> Vec<&'a Value> {
    updates.as_array().unwrap().iter().map(|n| &n["update"]).filter(|u| u["sessionUpdate"] == kind).collect()
}

fn text_of(updates: &Value, kind: &str) -> String {
    of_kind(updates, kind).iter().filter_map(|u| u["content"]["text"].as_str()).collect()
}

#[test]
fn the_official_typescript_client_drives_opencode_acp() {
    let Some(prefix) = sdk() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mock, titles) =
        runtime.block_on(async { (MockProvider::start().await.unwrap(), MockProvider::start().await.unwrap()) });
    titles.respond_with(|_| MockResponse::chat_text("A title"));
    let call = json!({"command": "echo e2e-ok", "description": "Print a word"});
    let stalled = json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Thinking"}}]});
    mock.push_all([
        MockResponse::chat_tool_calls(&[("call_1", "bash", call)], Some((50, 5))),
        MockResponse::chat_text("Done."),
        MockResponse::chat_tool_calls(
            &[("call_2", "edit", json!({"filePath": "a.txt", "oldString": "one", "newString": "two"}))],
            Some((50, 5)),
        ),
        MockResponse::chat_text("Fixed."),
        MockResponse::sse([stalled.to_string()]).then_stall(),
    ]);
    let home = Home::new();
    std::fs::write(home.work().join("a.txt"), "saved one\n").unwrap();
    // The script sits beside the installed SDK, so that Node resolves the package from there.
    let script = prefix.join("acp-client.mjs");
    std::fs::write(&script, include_str!("../acp/client.mjs")).unwrap();
    let output = Command::new("node")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_opencode"))
        .arg(home.work())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path().join("home"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_CONFIG_CONTENT", config(&mock, &titles))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_str(stdout(&output).trim()).unwrap();

    assert_eq!(seen["init"]["agentInfo"]["name"], "opencode");
    assert_eq!(seen["init"]["agentCapabilities"]["loadSession"], true);
    assert_eq!(seen["created"]["modes"]["currentModeId"], "build");
    assert_eq!(seen["ran"]["stopReason"], "end_turn");
    let updates = &seen["updates"];
    let titles: Vec<&str> = of_kind(updates, "tool_call_update")
        .iter()
        .chain(of_kind(updates, "tool_call").iter())
        .filter_map(|u| u["title"].as_str())
        .collect();
    assert!(titles.contains(&"echo e2e-ok"), "{titles:?}");
    let kinds: Vec<(&str, &str)> = of_kind(updates, "tool_call")
        .iter()
        .map(|u| (u["toolCallId"].as_str().unwrap(), u["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("call_1", "execute"), ("call_2", "edit")]);
    let completed = of_kind(updates, "tool_call_update").into_iter().find(|u| u["status"] == "completed").unwrap();
    assert!(completed["rawOutput"]["output"].as_str().unwrap().contains("e2e-ok"), "{completed}");
    let permission = &seen["permissions"][0];
    assert_eq!(permission["toolCall"]["toolCallId"], "call_1");
    let kinds: Vec<&str> =
        permission["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert!(text_of(updates, "agent_message_chunk").contains("Done."));
    // The editor advertised its file system: the edit read its unsaved buffer and wrote through it.
    assert_eq!(seen["edited"]["stopReason"], "end_turn");
    let path = home.work().join("a.txt");
    assert_eq!(seen["writes"], json!([{"sessionId": seen["sessionId"], "path": path, "content": "unsaved two\n"}]));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "saved one\n", "the disk is the editor's business");
    assert_eq!(seen["cancelled"]["stopReason"], "cancelled");
    let options = seen["model"]["configOptions"].as_array().unwrap();
    let current = |id: &str| options.iter().find(|o| o["id"] == id).unwrap()["currentValue"].clone();
    assert_eq!((current("mode"), current("model")), (json!("plan"), json!("mock/r")));

    // Loaded in a fresh agent: the whole history comes back.
    let replayed = &seen["replayed"];
    assert!(text_of(replayed, "user_message_chunk").contains("run the command"), "{replayed}");
    assert!(text_of(replayed, "user_message_chunk").contains("take your time"), "{replayed}");
    let call = of_kind(replayed, "tool_call").into_iter().find(|u| u["toolCallId"] == "call_1").unwrap();
    assert_eq!((call["title"].as_str(), call["status"].as_str()), (Some("echo e2e-ok"), Some("completed")));
    assert!(text_of(replayed, "agent_message_chunk").contains("Done."));
    assert_eq!(seen["loaded"]["modes"]["currentModeId"], "plan");
    assert_eq!(seen["exits"], json!([0, 0]), "{}", String::from_utf8_lossy(&output.stderr));

    // The editor's session is the project's: `opencode session list` shows it.
    let listed = home.opencode(&["session", "list", "--format", "json"]).output().unwrap();
    assert!(stdout(&listed).contains(seen["sessionId"].as_str().unwrap()), "{}", stdout(&listed));
}

#[test]
fn the_agent_keeps_stdout_for_protocol_frames_and_writes_its_diagnostics_to_a_log_file() {
    use std::io::Write as _;
    let home = Home::new();
    let mut agent = Command::new(env!("CARGO_BIN_EXE_opencode"))
        .args(["acp", "--cwd", &home.work().display().to_string()])
        .env_clear()
        .env("HOME", home.path().join("home"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}});
    let mut stdin = agent.stdin.take().unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    // The editor lets the agent go (closes its input) once it has the answer.
    let mut answers = std::io::BufReader::new(agent.stdout.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut answers, &mut first).unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut answers, &mut rest).unwrap();
    let output = agent.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let frames: Vec<Value> = (first + &rest).lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(!frames.is_empty() && frames.iter().all(|frame| frame["jsonrpc"] == "2.0"), "{frames:?}");
    assert_eq!(frames[0]["result"]["agentInfo"]["name"], "opencode");
    let logs = home.path().join("home/.local/share/opencode/log");
    let log: Vec<_> = std::fs::read_dir(&logs).unwrap().map(|entry| entry.unwrap().path()).collect();
    assert_eq!(log.len(), 1, "{log:?}");
    assert!(log[0].file_name().unwrap().to_string_lossy().starts_with("acp-"));
    let text = std::fs::read_to_string(&log[0]).unwrap();
    assert!(text.contains("acp agent started") && text.contains("the client closed the connection"), "{text}");
}
