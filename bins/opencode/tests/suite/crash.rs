//! `kill -9` of `opencode run` mid-stream and mid-tool, then `opencode run -c`: the history stays
//! consistent, nothing runs twice, and the new prompt completes.

use std::io::Read;
use std::process::{Child, Stdio};

use opencode_mock_provider::{MockProvider, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Home, mock_config, requests, stderr, stdout, text, tool_call, transcript};

fn spawn_run(home: &Home, mock: &MockProvider, message: &str) -> Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_opencode"))
        .env_clear()
        .env("HOME", home.path().join("home"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_CONFIG_CONTENT", mock_config(mock, json!({})))
        .current_dir(home.work())
        .args(["run", message])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The exported session of the work directory.
fn export(home: &Home, mock: &MockProvider) -> Value {
    let output = home.with_mock(mock, &["export"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap()
}

fn user_texts(exported: &Value) -> Vec<String> {
    exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["info"]["role"] == "user")
        .map(|m| m["parts"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect::<String>())
        .collect()
}

#[test]
fn a_run_killed_mid_stream_is_continued_with_consistent_history() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    let home = Home::new();
    let first = json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Partial ans"}}]});
    mock.push(MockResponse::sse([first.to_string()]).then_stall());
    let mut child = spawn_run(&home, &mock, "first prompt");
    let mut out = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("Partial ans") {
        let read = out.read(&mut buffer).unwrap();
        assert!(read > 0, "the run ended before streaming: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..read]);
    }
    child.kill().unwrap();
    child.wait().unwrap();

    mock.push(text("Done."));
    let output = home.run(&mock, &["-c", "go on"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Done.\n");
    let sent = transcript(&requests(&mock)[1]);
    assert_eq!(sent.first().map(String::as_str), Some("user: first prompt"));
    assert_eq!(sent.last().map(String::as_str), Some("user: go on"));
    assert_eq!(sent.iter().filter(|line| line.starts_with("user: ")).count(), 2, "{sent:?}");

    let exported = export(&home, &mock);
    assert_eq!(user_texts(&exported), ["first prompt", "go on"]);
    let last = exported["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["info"]["role"], "assistant");
    assert!(last["info"]["time"]["completed"].is_i64());
    assert!(last["parts"].as_array().unwrap().iter().any(|p| p["text"] == "Done."));
}

#[test]
fn a_run_killed_mid_tool_never_runs_the_tool_again() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    let home = Home::new();
    let command = "echo ran >> ran.txt && sleep 5";
    mock.push(tool_call("call_1", "bash", json!({"command": command, "description": "slow step"})));
    let mut child = spawn_run(&home, &mock, "do the slow step");
    let ran = home.work().join("ran.txt");
    while !std::fs::read_to_string(&ran).is_ok_and(|text| text == "ran\n") {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before the tool started");
        std::thread::yield_now();
    }
    child.kill().unwrap();
    child.wait().unwrap();

    mock.push(text("Continuing."));
    let output = home.run(&mock, &["-c", "continue"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Continuing.\n");
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n", "the tool ran once");
    assert_eq!(mock.requests().len(), 2);
    let sent = transcript(&requests(&mock)[1]);
    assert_eq!(
        sent,
        [
            "user: do the slow step".to_owned(),
            format!("assistant: bash({})", json!({"command": command, "description": "slow step"})),
            "tool: Tool execution interrupted".to_owned(),
            "user: continue".to_owned(),
        ]
    );
    let exported = export(&home, &mock);
    assert_eq!(user_texts(&exported), ["do the slow step", "continue"]);
    let tool = exported["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().iter())
        .find(|p| p["type"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["state"]["status"], "error");
    assert_eq!(tool["state"]["error"], "Tool execution interrupted");
}

#[test]
fn ctrl_c_interrupts_the_run_and_exits_130() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    let home = Home::new();
    let first =
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Thinking about"}}]});
    mock.push(MockResponse::sse([first.to_string()]).then_stall());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_opencode"))
        .env_clear()
        .env("HOME", home.path().join("home"))
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_CONFIG_CONTENT", mock_config(&mock, json!({})))
        .current_dir(home.work())
        .args(["run", "a long question"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("Thinking about") {
        let read = out.read(&mut buffer).unwrap();
        assert!(read > 0, "the run ended before streaming");
        seen.extend_from_slice(&buffer[..read]);
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{err}");
    assert!(err.contains("error: interrupted\nhint: "), "{err}");

    // The interrupted session continues.
    mock.push(text("Answered."));
    let again = home.run(&mock, &["-c", "go on"]).output().unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    let sent = transcript(&requests(&mock)[1]);
    assert_eq!(sent.first().map(String::as_str), Some("user: a long question"));
    assert_eq!(sent.last().map(String::as_str), Some("user: go on"));
}
