//! Runs the built binary in a temporary home with a clean environment.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use opencode_mock_provider::{MockProvider, MockResponse};
use serde_json::{Value, json};

pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.config/opencode")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn global_config(&self) -> PathBuf {
        self.path().join("home/.config/opencode/opencode.json")
    }

    pub fn auth_file(&self) -> PathBuf {
        self.path().join("home/.local/share/opencode/auth.json")
    }

    pub fn work(&self) -> PathBuf {
        self.path().join("work")
    }

    /// `opencode <args>` with only HOME set (and model fetching off).
    pub fn opencode(&self, args: &[&str]) -> Command {
        let mut command = Command::cargo_bin("opencode").unwrap();
        command
            .env_clear()
            .env("HOME", self.path().join("home"))
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .current_dir(self.work())
            .args(args);
        command
    }
}

/// The configuration of a custom OpenAI-compatible provider `mock` served by `mock`, with `mock/m`
/// as the model; `extra` is merged on top.
pub fn mock_config(mock: &MockProvider, extra: Value) -> String {
    let mut config = json!({
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "x"},
            "models": {"m": {"tool_call": true, "limit": {"context": 200_000, "output": 8_000}}}
        }},
        "model": "mock/m"
    });
    if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
        config.extend(extra);
    }
    config.to_string()
}

impl Home {
    /// `opencode run <args>` against the mock provider, with nothing on standard input.
    pub fn run(&self, mock: &MockProvider, args: &[&str]) -> Command {
        self.run_with(mock, json!({}), args)
    }

    /// [`Home::run`] with extra configuration.
    pub fn run_with(&self, mock: &MockProvider, extra: Value, args: &[&str]) -> Command {
        let mut command = self.opencode(&["run"]);
        command.args(args).env("OPENCODE_CONFIG_CONTENT", mock_config(mock, extra));
        command
    }

    /// `opencode <args>` with the mock provider configured.
    pub fn with_mock(&self, mock: &MockProvider, args: &[&str]) -> Command {
        let mut command = self.opencode(args);
        command.env("OPENCODE_CONFIG_CONTENT", mock_config(mock, json!({})));
        command
    }
}

/// A streamed text answer with usage.
pub fn text(answer: &str) -> MockResponse {
    MockResponse::chat_text(answer)
}

/// A streamed answer calling one tool.
pub fn tool_call(id: &str, name: &str, input: Value) -> MockResponse {
    MockResponse::chat_tool_calls(&[(id, name, input)], Some((50, 5)))
}

/// The chat messages of every request the mock received.
pub fn requests(mock: &MockProvider) -> Vec<Vec<Value>> {
    mock.requests().iter().map(|r| r.body_json().unwrap()["messages"].as_array().unwrap().clone()).collect()
}

/// `role: text` of each non-system message of a request (tool calls as `name(args)`).
pub fn transcript(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let mut line = format!("{}: ", m["role"].as_str().unwrap());
            match &m["content"] {
                Value::String(text) => line.push_str(text),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).for_each(|t| line.push_str(t)),
                _ => {}
            }
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                line.push_str(&format!(
                    "{}({})",
                    call["function"]["name"].as_str().unwrap(),
                    call["function"]["arguments"].as_str().unwrap()
                ));
            }
            line
        })
        .collect()
}

pub fn stdout(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}
