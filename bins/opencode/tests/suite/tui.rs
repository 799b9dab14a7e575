//! The terminal UI in a real terminal: the built binary in tmux, typed into with send-keys and read
//! with capture-pane, against our in-process server (`opencode`) and, attached, against OpenCode
//! 1.18.34's own server (`opencode attach URL`). Skipped with a notice without tmux (required under CI).

use std::io::BufRead;
use std::io::BufReader;
use std::path::Path;
use std::process::Command;
use std::process::Stdio;
use std::time::Duration;
use std::time::Instant;

use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_mock_provider::peer::OpenCode;
use serde_json::json;

use super::support::Home;

/// A tmux session running one command; killed when dropped.
pub(super) struct Tmux {
    pub(super) name: String,
}

impl Tmux {
    pub(super) fn start(command: &str) -> Option<Self> {
        if Command::new("tmux").arg("-V").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "tmux is required under CI for the terminal UI tests");
            eprintln!("notice: tmux not found; skipping the terminal UI test");
            return None;
        }
        let name = format!("opencode-tui-{}-{}", std::process::id(), fastrand_suffix());
        let status = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "100",
                "-y",
                "30",
                &format!("{command}; echo \"exited with $?\"; sleep 60"),
            ])
            .status()
            .unwrap();
        assert!(status.success());
        Some(Self { name })
    }

    pub(super) fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = Command::new("tmux").args(["send-keys", "-t", &self.name, key]).status().unwrap();
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    pub(super) fn type_line(&self, text: &str) {
        Command::new("tmux").args(["send-keys", "-t", &self.name, "-l", text]).status().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        self.keys(&["Enter"]);
    }

    pub(super) fn screen(&self) -> String {
        let out = Command::new("tmux").args(["capture-pane", "-p", "-t", &self.name]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until every one of `texts` is on the screen; fails with the screen otherwise.
    pub(super) fn wait_for(&self, texts: &[&str]) -> String {
        self.wait_until(&format!("{texts:?}"), |screen| texts.iter().all(|t| screen.contains(t)))
    }

    /// Waits (30 s at most) until `done` holds for the screen; returns that screen.
    pub(super) fn wait_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "never shown: {what}\n--- screen ---\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    pub(super) fn resize(&self, width: u16, height: u16) {
        let (w, h) = (width.to_string(), height.to_string());
        Command::new("tmux").args(["resize-window", "-t", &self.name, "-x", &w, "-y", &h]).status().unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _killed = Command::new("tmux").args(["kill-session", "-t", &self.name]).status();
    }
}

fn fastrand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() % 1_000_000_007
}

/// A mock that answers each new prompt with one `bash ls` call, then with `ANSWER`.
pub(super) const ANSWER: &str = "All done here.";

pub(super) fn mock() -> (tokio::runtime::Runtime, MockProvider) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    mock.respond_with(|request| {
        let body = request.body_json().unwrap_or_default();
        let offers_bash = body["tools"].as_array().is_some_and(|t| t.iter().any(|t| t["function"]["name"] == "bash"));
        let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
        if offers_bash && last["role"] == "user" {
            MockResponse::chat_tool_calls(&[("call_1", "bash", json!({"command": "ls", "description": "List"}))], None)
        } else {
            MockResponse::chat_text(ANSWER)
        }
    });
    (runtime, mock)
}

/// A project whose model is the mock; `extra` is merged into its opencode.json.
pub(super) fn project(home: &Home, mock: &MockProvider, extra: serde_json::Value) {
    let mut config: serde_json::Value =
        serde_json::from_str(&opencode_mock_provider::peer::mock_project_config(&format!("{}/v1", mock.base_url())))
            .unwrap();
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    std::fs::write(home.work().join("opencode.json"), config.to_string()).unwrap();
    std::fs::write(home.work().join("notes.txt"), "hello\n").unwrap();
}

/// `cd work && HOME=... opencode <args>` as a shell line for tmux.
fn shell_line(home: &Home, args: &str) -> String {
    format!(
        "cd '{}' && env -i HOME='{}' PATH=\"$PATH\" TERM=xterm-256color OPENCODE_DISABLE_MODELS_FETCH=1 '{}' {args}",
        home.work().display(),
        home.path().join("home").display(),
        env!("CARGO_BIN_EXE_opencode"),
    )
}

#[test]
fn a_turn_with_a_tool_call_agents_undo_and_resize_in_a_real_terminal() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["Ask anything", "build"]);
    tui.type_line("list the files here");
    tui.wait_for(&["┃ list the files here", "$ ls", "notes.txt", ANSWER, "▣ build"]);
    tui.keys(&["Tab"]);
    tui.wait_for(&["┌ plan"]);
    tui.keys(&["BTab"]);
    tui.wait_for(&["┌ build"]);
    tui.keys(&["C-x", "u"]);
    let screen = tui.wait_for(&["1 message reverted"]);
    assert!(!screen.contains("notes.txt"), "the reverted turn is hidden:\n{screen}");
    tui.keys(&["C-x", "r"]);
    tui.wait_for(&["notes.txt", ANSWER]);
    tui.resize(20, 8);
    tui.resize(100, 30);
    tui.wait_for(&[ANSWER]);
    Command::new("tmux").args(["send-keys", "-t", &tui.name, "-l", "summarise @note"]).status().unwrap();
    tui.wait_for(&["@ files", "notes.txt"]);
    tui.keys(&["Tab"]);
    tui.wait_for(&["summarise @notes.txt"]);
    tui.keys(&["Enter"]);
    tui.wait_for(&["┃ summarise @notes.txt", "┃ [file] notes.txt"]);
    // Ctrl+C with an empty prompt quits, leaving the terminal as it was.
    tui.keys(&["C-c"]);
    tui.wait_for(&["exited with 0"]);
}

#[test]
fn a_configured_command_runs_from_the_slash_menu_and_the_sidebar_shows_the_context() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(
        &home,
        &mock,
        json!({"command": {"hello": {"template": "Say hello to $ARGUMENTS", "description": "Greets"}}}),
    );
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["Ask anything"]);
    Command::new("tmux").args(["send-keys", "-t", &tui.name, "-l", "/hell"]).status().unwrap();
    tui.wait_for(&["/hello", "Greets"]);
    tui.keys(&["Tab"]);
    Command::new("tmux").args(["send-keys", "-t", &tui.name, "-l", "the team"]).status().unwrap();
    tui.keys(&["Enter"]);
    tui.wait_for(&["Say hello to the team", ANSWER]);
    let sent = mock.requests()[0].body_json().unwrap().to_string();
    assert!(sent.contains("Say hello to the team"), "{sent}");
    // The sidebar (ctrl+x b on a narrow terminal) shows the session's context and cost.
    tui.keys(&["C-x", "b"]);
    tui.wait_for(&["Context", "tokens", "spent"]);
}

#[test]
fn the_external_editor_writes_the_prompt_and_export_saves_the_transcript() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let editor = home.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf 'list the files here' > \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let line = shell_line(&home, "").replacen("env -i ", &format!("env -i EDITOR='{}' ", editor.display()), 1);
    let Some(tui) = Tmux::start(&line) else { return };
    tui.wait_for(&["Ask anything"]);
    Command::new("tmux").args(["send-keys", "-t", &tui.name, "-l", "draft"]).status().unwrap();
    tui.keys(&["C-x", "e"]);
    tui.wait_for(&["│list the files here"]);
    tui.keys(&["Enter"]);
    tui.wait_for(&[ANSWER]);
    tui.keys(&["C-x", "x"]);
    let screen = tui.wait_for(&["transcript saved to opencode-ses_"]);
    let name = screen.split("transcript saved to ").nth(1).unwrap().split_whitespace().next().unwrap();
    let saved = std::fs::read_to_string(home.work().join(name)).unwrap();
    assert!(saved.contains("## User\n\nlist the files here") && saved.contains(ANSWER), "{saved}");
}

#[test]
fn a_theme_file_is_listed_chosen_and_remembered_in_tui_json() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let themes = home.path().join("home/.config/opencode/themes");
    std::fs::create_dir_all(&themes).unwrap();
    std::fs::write(
        themes.join("night.json"),
        json!({"theme": {"primary": "#7aa2f7", "textMuted": "#565f89"}}).to_string(),
    )
    .unwrap();
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["Ask anything"]);
    tui.keys(&["C-x", "t"]);
    tui.wait_for(&["Themes", "system", "night"]);
    tui.keys(&["Down", "Enter"]);
    tui.wait_for(&["theme: night"]);
    let settings = home.path().join("home/.config/opencode/tui.json");
    let saved: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(settings).unwrap()).unwrap();
    assert_eq!(saved["theme"], "night");
}

#[test]
fn a_subagents_session_is_entered_and_left_with_ctrl_x_arrows() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(MockProvider::start()).unwrap();
    mock.respond_with(|request| {
        let body = request.body_json().unwrap_or_default();
        let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
        let text = last["content"].to_string();
        if last["role"] == "tool" {
            MockResponse::chat_text(ANSWER)
        } else if text.contains("look around for me") {
            MockResponse::chat_text("The subagent found two files.")
        } else if text.contains("delegate") {
            let input =
                json!({"description": "Look around", "prompt": "look around for me", "subagent_type": "general"});
            MockResponse::chat_tool_calls(&[("call_task", "task", input)], None)
        } else {
            MockResponse::chat_text("Hello.")
        }
    });
    let home = Home::new();
    project(&home, &mock, json!({}));
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["Ask anything"]);
    tui.type_line("delegate the search");
    tui.wait_for(&[ANSWER]);
    tui.keys(&["C-x", "Right"]);
    tui.wait_for(&["look around for me", "The subagent found two files.", "subagent · ctrl+x ← back"]);
    tui.keys(&["C-x", "Left"]);
    let screen = tui.wait_for(&["delegate the search", ANSWER]);
    assert!(!screen.contains("subagent · ctrl+x"), "{screen}");
}

#[test]
fn tui_json_keybinds_rebind_the_leader_and_name_a_bad_binding() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let keybinds = json!({"keybinds": {"leader": "ctrl+g", "sidebar_toggle": "<leader>s", "model_list": "hyper+m"}});
    std::fs::write(home.path().join("home/.config/opencode/tui.json"), keybinds.to_string()).unwrap();
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["tui.json: keybinds.model_list: `hyper` in `hyper+m` is not a modifier"]);
    tui.keys(&["C-g", "s"]);
    tui.wait_for(&["Context", "spent"]);
    // ctrl+x is no leader any more: `s` is typed into the prompt and the sidebar stays.
    tui.keys(&["C-x", "s"]);
    tui.wait_for(&["│s", "Context"]);
}

#[test]
fn permission_asks_are_answered_in_the_terminal() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({"permission": {"bash": "ask"}}));
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["Ask anything"]);
    tui.type_line("list the files here");
    tui.wait_for(&["Permission required", "bash: ls", "Allow once"]);
    tui.keys(&["Enter"]);
    tui.wait_for(&["notes.txt", ANSWER]);
    tui.type_line("and again");
    tui.wait_for(&["Permission required"]);
    Command::new("tmux").args(["send-keys", "-t", &tui.name, "-l", "not now"]).status().unwrap();
    tui.keys(&["Escape"]);
    let screen = tui.wait_for(&["┃ and again", "✗"]);
    assert!(!screen.contains("Permission required"), "{screen}");
}

/// OpenCode's own server: `opencode serve` from npm, offline; our TUI attaches to it.
#[test]
fn the_tui_attaches_to_opencodes_own_server() {
    let Some(opencode) = OpenCode::install(Path::new(env!("CARGO_TARGET_TMPDIR"))) else { return };
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = opencode
        .command_in(&home.path().join("peer-home"), &home.work())
        .args(["serve", "--hostname", "127.0.0.1", "--port", &port.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let url = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.split("listening on ").nth(1).map(str::to_owned))
        .expect("OpenCode printed its URL");
    let tui = Tmux::start(&shell_line(&home, &format!("attach {url}")));
    if let Some(tui) = tui {
        tui.wait_for(&["Ask anything"]);
        tui.type_line("list the files here");
        tui.wait_for(&["┃ list the files here", "$ ls", "notes.txt", ANSWER]);
    }
    let _killed = server.kill();
    let _reaped = server.wait();
}

#[test]
fn connect_stores_a_providers_key_typed_in_the_terminal() {
    let (_rt, mock) = mock();
    let home = Home::new();
    project(&home, &mock, json!({}));
    let Some(tui) = Tmux::start(&shell_line(&home, "")) else { return };
    tui.wait_for(&["Ask anything"]);
    tui.type_line("/connect");
    tui.wait_for(&["Connect a provider", "Anthropic"]);
    Command::new("tmux").args(["send-keys", "-t", &tui.name, "-l", "groq"]).status().unwrap();
    tui.wait_for(&["Groq · groq"]);
    tui.keys(&["Enter"]);
    tui.wait_for(&["API key for Groq"]);
    tui.type_line("gsk-from-the-terminal");
    tui.wait_for(&["Groq connected"]);
    let auth: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(home.auth_file()).unwrap()).unwrap();
    assert_eq!(auth["groq"], json!({"type": "api", "key": "gsk-from-the-terminal"}));
    assert!(!tui.screen().contains("gsk-from-the-terminal"), "the key is never on screen");
}
