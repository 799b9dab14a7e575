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
/// as the model; `extra` is merged over it object by object.
pub fn mock_config(mock: &MockProvider, extra: Value) -> String {
    mock.opencode_config(extra).to_string()
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

/// A server process (`opencode serve`, `opencode web`, OpenCode's own `serve`), killed when dropped.
/// `line` is the line that printed its address, `address` its `host:port`.
pub struct Served {
    pub child: std::process::Child,
    pub line: String,
    pub url: String,
    pub address: String,
    /// The rest of its standard output.
    pub stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _killed = self.child.kill();
        let _reaped = self.child.wait();
    }
}

impl Home {
    /// `opencode <args>` as a server process with only HOME set, its output piped.
    pub fn server_command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_opencode"));
        command
            .args(args)
            .env_clear()
            .env("HOME", self.path().join("home"))
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .current_dir(self.work())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        command
    }

    /// Our `opencode serve --port 0`, started.
    pub fn serve(&self) -> Served {
        Served::start(self.server_command(&["serve", "--port", "0"]))
    }
}

impl Served {
    /// Spawns `command` and reads its output up to the line that ends with its address.
    pub fn start(mut command: std::process::Command) -> Self {
        use std::io::BufRead;
        let mut child = command.spawn().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("http://") {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "the server exited before printing its address");
        }
        let url = line.split_whitespace().last().unwrap_or_default().trim_end_matches('/').to_owned();
        let address = url.trim_start_matches("http://").to_owned();
        Self { child, line, url, address, stdout }
    }
}
