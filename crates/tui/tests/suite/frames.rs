use std::path::Path;

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use crossterm::event::KeyModifiers;
use opencode_client::Event;
use opencode_client::ModelRef;
use opencode_tui::Theme;
use opencode_tui::app::App;
use opencode_tui::app::Command;
use opencode_tui::app::Msg;
use pretty_assertions::assert_eq;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::Value;
use serde_json::json;

const SESSION: &str = "ses_0001";

fn session(extra: Value) -> opencode_client::Session {
    let mut value = json!({"id": SESSION, "projectID": "p", "directory": "/w", "title": "Fix the answer",
        "time": {"created": 1, "updated": 2}});
    value.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    serde_json::from_value(value).unwrap()
}

fn part(message: &str, id: &str, kind: Value) -> Value {
    let mut value = json!({"id": id, "sessionID": SESSION, "messageID": message});
    value.as_object_mut().unwrap().extend(kind.as_object().unwrap().clone());
    value
}

/// A user prompt, a step that edits a file and runs a command, and the answer.
fn messages() -> Vec<opencode_client::Message> {
    let diff = "Index: src/lib.rs\n--- src/lib.rs\n+++ src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn answer() -> u32 {\n-    41\n+    42\n }\n";
    serde_json::from_value(json!([
        {"info": {"id": "msg_01", "sessionID": SESSION, "role": "user", "time": {"created": 1000}, "agent": "build"},
         "parts": [part("msg_01", "prt_01", json!({"type": "text", "text": "Fix the answer in src/lib.rs"}))]},
        {"info": {"id": "msg_02", "sessionID": SESSION, "role": "assistant", "time": {"created": 1100, "completed": 1500},
                  "agent": "build", "providerID": "mock", "modelID": "mock-model", "finish": "tool-calls", "cost": 0.01,
                  "tokens": {"input": 1200, "output": 40, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         "parts": [
            part("msg_02", "prt_02", json!({"type": "tool", "callID": "c1", "tool": "edit",
                "state": {"status": "completed", "input": {"filePath": "src/lib.rs"}, "output": "Edit applied.",
                          "metadata": {"diff": diff}}})),
            part("msg_02", "prt_03", json!({"type": "tool", "callID": "c2", "tool": "bash",
                "state": {"status": "completed", "input": {"command": "cargo test"},
                          "output": "running 1 test\ntest answer ... ok\n\ntest result: ok. 1 passed\nmore\nmore\nmore\n"}}))
         ]},
        {"info": {"id": "msg_03", "sessionID": SESSION, "role": "assistant", "time": {"created": 1600, "completed": 3600},
                  "agent": "build", "providerID": "mock", "modelID": "mock-model", "finish": "stop", "cost": 0.02,
                  "tokens": {"input": 1300, "output": 60, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         "parts": [part("msg_03", "prt_04", json!({"type": "text",
            "text": "Fixed: `answer()` now returns **42**.\n\n- edited `src/lib.rs`\n- the test passes"}))]}
    ]))
    .unwrap()
}

fn app() -> App {
    let mut app = App::new(Theme::default());
    let agents = serde_json::from_value(json!([
        {"name": "build", "mode": "primary"}, {"name": "plan", "mode": "primary"}, {"name": "general", "mode": "subagent"}
    ]))
    .unwrap();
    app.update(Msg::Agents(agents));
    let providers = serde_json::from_value(json!({"providers": [{"id": "mock", "name": "Mock",
        "models": {"mock-model": {"limit": {"context": 128000}}}}], "default": {"mock": "mock-model"}}))
    .unwrap();
    app.update(Msg::Providers(providers));
    app.update(Msg::Opened(session(json!({})), messages()));
    app
}

fn key(app: &mut App, code: KeyCode, modifiers: KeyModifiers) -> Vec<Command> {
    app.update(Msg::Key(KeyEvent::new(code, modifiers)))
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c), KeyModifiers::NONE);
    }
}

/// The frame as text, one line per row, trailing spaces kept so the layout shows.
fn frame(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| opencode_tui::view::draw(f, app)).unwrap();
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..height {
        let row: String = (0..width).map(|x| buffer[(x, y)].symbol().to_owned()).collect();
        text.push_str(row.trim_end());
        text.push('\n');
    }
    text
}

fn snapshot(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots").join(format!("{name}.txt"));
    if std::env::var_os("OPENCODE_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("{} is missing: run with OPENCODE_UPDATE_SNAPSHOTS=1", path.display()));
    assert_eq!(actual, expected, "frame {name} changed (OPENCODE_UPDATE_SNAPSHOTS=1 rewrites it)");
}

#[test]
fn a_finished_turn_at_two_sizes() {
    let mut app = app();
    snapshot("turn_80x24", &frame(&mut app, 80, 24));
    snapshot("turn_20x8", &frame(&mut app, 20, 8));
    // Nothing panics however small the terminal gets.
    for (w, h) in [(1, 1), (2, 3), (5, 2), (0, 0)] {
        let _ = frame(&mut app, w.max(1), h.max(1));
    }
}

#[test]
fn streaming_deltas_grow_the_answer_and_idle_refetches() {
    let mut app = app();
    let user = json!({"id": "msg_04", "sessionID": SESSION, "role": "user", "time": {"created": 4000}});
    let answer = json!({"id": "msg_05", "sessionID": SESSION, "role": "assistant", "time": {"created": 4100}});
    for info in [user, answer] {
        app.update(Msg::Server(Event::MessageUpdated(serde_json::from_value(info).unwrap())));
    }
    let text = part("msg_05", "prt_09", json!({"type": "text", "text": ""}));
    app.update(Msg::Server(Event::PartUpdated(serde_json::from_value(text).unwrap())));
    for delta in ["Streaming ", "**works**", " fine."] {
        app.update(Msg::Server(Event::PartDelta {
            session_id: SESSION.into(),
            message_id: "msg_05".into(),
            part_id: "prt_09".into(),
            field: "text".into(),
            delta: delta.into(),
        }));
    }
    app.update(Msg::Server(Event::SessionStatus {
        session_id: SESSION.into(),
        status: opencode_client::SessionStatus::Busy,
    }));
    snapshot("streaming_80x12", &frame(&mut app, 80, 12));
    let idle = app.update(Msg::Server(Event::SessionIdle { session_id: SESSION.into() }));
    assert_eq!(idle, [Command::OpenSession(SESSION.into())]);
    assert!(!app.busy);
}

#[test]
fn the_permission_dialog_answers_once_always_or_reject_with_a_message() {
    let mut app = app();
    let ask = |id: &str| {
        Msg::Server(Event::PermissionAsked(
            serde_json::from_value(json!({"id": id, "sessionID": SESSION, "permission": "bash",
                "patterns": ["rm -rf build"], "always": ["rm *"], "metadata": {"command": "rm -rf build"}}))
            .unwrap(),
        ))
    };
    app.update(ask("per_1"));
    snapshot("permission_80x16", &frame(&mut app, 80, 16));
    key(&mut app, KeyCode::Right, KeyModifiers::NONE);
    let always = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        always,
        [Command::Reply { request: "per_1".into(), reply: opencode_client::PermissionReply::Always, message: None }]
    );
    app.update(ask("per_2"));
    type_text(&mut app, "use cargo clean");
    let rejected = key(&mut app, KeyCode::Esc, KeyModifiers::NONE);
    assert_eq!(
        rejected,
        [Command::Reply {
            request: "per_2".into(),
            reply: opencode_client::PermissionReply::Reject,
            message: Some("use cargo clean".into())
        }]
    );
    assert!(app.permission().is_none());
}

#[test]
fn keys_switch_agents_prompt_undo_and_open_overlays() {
    let mut app = app();
    key(&mut app, KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(app.agent_name(), "plan");
    key(&mut app, KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(app.agent_name(), "build", "subagents are not cycled");
    type_text(&mut app, "and add a test");
    let sent = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        sent,
        [Command::Prompt {
            session: Some(SESSION.into()),
            text: "and add a test".into(),
            agent: Some("build".into()),
            model: None,
            variant: None,
            files: Vec::new()
        }]
    );
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    let undo = key(&mut app, KeyCode::Char('u'), KeyModifiers::NONE);
    assert_eq!(undo, [Command::Revert { session: SESSION.into(), message: "msg_01".into() }]);
    assert_eq!(app.input.text(), "Fix the answer in src/lib.rs", "the undone prompt is back in the input");
    // The server staged the revert: everything from msg_01 on is hidden.
    app.update(Msg::Opened(session(json!({"revert": {"messageID": "msg_01"}})), messages()));
    snapshot("reverted_60x10", &frame(&mut app, 60, 10));
    type_text(&mut app, "");
    app.input.take();
    type_text(&mut app, "/sessions");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    app.update(Msg::Sessions(vec![session(json!({})), session(json!({"id": "ses_0002", "title": "Older work"}))]));
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    snapshot("sessions_60x12", &frame(&mut app, 60, 12));
    let open = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(open, [Command::OpenSession("ses_0002".into())]);
}

#[test]
fn at_completes_files_and_the_model_picker_sets_the_prompts_model() {
    let mut app = app();
    type_text(&mut app, "read @src/l");
    let asked = key(&mut app, KeyCode::Char('i'), KeyModifiers::NONE);
    assert_eq!(asked, [Command::FindFiles("src/li".into())]);
    // An answer to an older query is dropped; the current one opens the popup.
    app.update(Msg::Files { query: "src/l".into(), files: vec!["src/old.rs".into()] });
    assert!(app.completion.is_none());
    app.update(Msg::Files { query: "src/li".into(), files: vec!["src/lib.rs".into(), "src/list.rs".into()] });
    snapshot("completion_60x12", &frame(&mut app, 60, 12));
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    key(&mut app, KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(app.input.text(), "read @src/list.rs ");
    assert!(app.completion.is_none());

    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    key(&mut app, KeyCode::Char('m'), KeyModifiers::NONE);
    snapshot("models_60x10", &frame(&mut app, 60, 10));
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    let sent = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    let model = Some(opencode_client::ModelRef { provider_id: "mock".into(), model_id: "mock-model".into() });
    let [Command::Prompt { model: chosen, files, .. }] = &sent[..] else { panic!("{sent:?}") };
    assert_eq!((chosen, files), (&model, &vec!["src/list.rs".to_owned()]));
}

#[test]
fn a_prompt_typed_while_disconnected_is_sent_after_reconnecting() {
    let mut app = app();
    app.update(Msg::Disconnected("connection refused".into()));
    type_text(&mut app, "still there?");
    assert!(key(&mut app, KeyCode::Enter, KeyModifiers::NONE).is_empty());
    snapshot("disconnected_60x8", &frame(&mut app, 60, 8));
    let resumed = app.update(Msg::Reconnected);
    assert!(resumed.contains(&Command::Prompt {
        session: Some(SESSION.into()),
        text: "still there?".into(),
        agent: Some("build".into()),
        model: None,
        variant: None,
        files: Vec::new()
    }));
    assert!(resumed.contains(&Command::OpenSession(SESSION.into())), "{resumed:?}");
}

/// A running command shows its latest output as it arrives (the part's `metadata.output`).
#[test]
fn a_running_command_shows_its_latest_output() {
    let mut app = app();
    let info = json!({"id": "msg_06", "sessionID": SESSION, "role": "assistant", "time": {"created": 5000}});
    app.update(Msg::Server(Event::MessageUpdated(serde_json::from_value(info).unwrap())));
    let output: String = (1..=20).map(|n| format!("line {n}\n")).collect();
    let running = part(
        "msg_06",
        "prt_10",
        json!({"type": "tool", "callID": "c3", "tool": "bash",
        "state": {"status": "running", "input": {"command": "./build.sh"}, "metadata": {"output": output}}}),
    );
    app.update(Msg::Server(Event::PartUpdated(serde_json::from_value(running).unwrap())));
    let shown = frame(&mut app, 80, 40);
    assert!(shown.contains("$ ./build.sh …") && shown.contains("line 20"), "{shown}");
    assert!(shown.contains("earlier lines") && !shown.contains("line 1\n"), "{shown}");
}

#[test]
fn the_sidebar_shows_context_changed_files_and_todos_on_wide_terminals() {
    let mut app = app();
    let mut stored = messages();
    stored[0].info.extra.insert(
        "summary".to_owned(),
        json!({"diffs": [{"file": "src/lib.rs", "additions": 1, "deletions": 1, "status": "modified"}]}),
    );
    app.update(Msg::Opened(session(json!({})), stored));
    assert_eq!(app.diff.len(), 1, "the turns' diffs of a session just opened");
    app.update(Msg::Server(Event::from_json(json!({"type": "todo.updated", "properties": {"sessionID": SESSION,
        "todos": [{"content": "Fix the answer", "status": "completed"}, {"content": "Add a test", "status": "pending"}]}}))));
    let wide = frame(&mut app, 130, 16);
    snapshot("sidebar_130x16", &wide);
    assert!(!frame(&mut app, 80, 16).contains("Modified files"), "no sidebar on a narrow terminal");

    // session.diff replaces the list; ctrl+x b hides the sidebar, and shows it again.
    app.update(Msg::Server(Event::from_json(json!({"type": "session.diff", "properties": {"sessionID": SESSION,
        "diff": [{"file": "README.md", "additions": 3, "deletions": 0, "status": "added"}]}}))));
    assert!(frame(&mut app, 130, 16).contains("README.md +3 -0"));
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    key(&mut app, KeyCode::Char('b'), KeyModifiers::NONE);
    assert!(!frame(&mut app, 130, 16).contains("Modified files"));
    type_text(&mut app, "/sidebar");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert!(frame(&mut app, 130, 16).contains("Modified files"));
}

#[test]
fn ctrl_x_y_copies_the_last_answer_and_ctrl_x_a_picks_an_agent() {
    let mut app = app();
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    let commands = key(&mut app, KeyCode::Char('y'), KeyModifiers::NONE);
    assert_eq!(
        commands,
        [Command::Copy("Fixed: `answer()` now returns **42**.\n\n- edited `src/lib.rs`\n- the test passes".to_owned())]
    );
    assert_eq!(app.notice.as_deref(), Some("answer sent to the terminal's clipboard (OSC 52)"));

    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    key(&mut app, KeyCode::Char('a'), KeyModifiers::NONE);
    snapshot("agents_60x10", &frame(&mut app, 60, 10));
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(app.agent_name(), "plan");

    // Nothing to copy in a new session: said, and nothing sent.
    type_text(&mut app, "/new");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    type_text(&mut app, "/copy");
    assert!(key(&mut app, KeyCode::Enter, KeyModifiers::NONE).is_empty());
    assert_eq!(app.notice.as_deref(), Some("no answer to copy yet"));
}

#[test]
fn slash_lists_built_in_and_configured_commands_and_runs_them() {
    let mut app = app();
    let commands = serde_json::from_value(json!([{"name": "review", "description": "Review the changes"}])).unwrap();
    app.update(Msg::Commands(commands));
    type_text(&mut app, "/");
    assert_eq!(app.slash_menu().len(), opencode_tui::app::BUILT_IN_COMMANDS.len() + 1);
    type_text(&mut app, "re");
    let names: Vec<String> = app.slash_menu().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["redo", "review"]);
    snapshot("slash_60x12", &frame(&mut app, 60, 12));
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    let run = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    let expected = |arguments: &str| Command::RunCommand {
        session: Some(SESSION.to_owned()),
        name: "review".to_owned(),
        arguments: arguments.to_owned(),
        agent: "build".to_owned(),
        model: None,
    };
    assert_eq!(run, [expected("")]);

    // With arguments the menu steps aside; tab completes a name.
    type_text(&mut app, "/rev");
    key(&mut app, KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(app.input.text(), "/review ");
    type_text(&mut app, "src/lib.rs");
    assert!(app.slash_menu().is_empty());
    assert_eq!(key(&mut app, KeyCode::Enter, KeyModifiers::NONE), [expected("src/lib.rs")]);
    type_text(&mut app, "/nothing");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(app.notice.as_deref(), Some("unknown command /nothing (/help lists them)"));
}

#[test]
fn ctrl_p_finds_a_command_by_name_or_description_and_runs_it() {
    let mut app = app();
    key(&mut app, KeyCode::Char('p'), KeyModifiers::CONTROL);
    type_text(&mut app, "side");
    snapshot("palette_60x10", &frame(&mut app, 60, 10));
    assert_eq!(app.palette("side"), [("sidebar".to_owned(), "show or hide the sidebar".to_owned())]);
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(app.sidebar, Some(true), "the 80-column default was hidden; running it shows the sidebar");
    // By description: "last answer" is in /copy's.
    key(&mut app, KeyCode::Char('p'), KeyModifiers::CONTROL);
    type_text(&mut app, "last answer");
    let run = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert!(matches!(&run[..], [Command::Copy(_)]), "{run:?}");
    key(&mut app, KeyCode::Char('p'), KeyModifiers::CONTROL);
    type_text(&mut app, "zzz");
    assert!(key(&mut app, KeyCode::Enter, KeyModifiers::NONE).is_empty());
}

#[test]
fn the_editor_takes_the_prompt_and_export_writes_the_transcript() {
    let mut app = app();
    type_text(&mut app, "draft");
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    assert_eq!(key(&mut app, KeyCode::Char('e'), KeyModifiers::NONE), [Command::Editor("draft".to_owned())]);
    app.update(Msg::Edited("a longer prompt\nover two lines\n".to_owned()));
    assert_eq!(app.input.text(), "a longer prompt\nover two lines");

    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    assert_eq!(key(&mut app, KeyCode::Char('x'), KeyModifiers::NONE), [Command::Export(SESSION.to_owned())]);
    let markdown = opencode_tui::app::transcript_markdown(&session(json!({})), &messages());
    assert!(markdown.starts_with("# Fix the answer\n\n## User\n\nFix the answer in src/lib.rs\n\n"), "{markdown}");
    assert!(markdown.contains("## Assistant (build · mock-model)\n\n**Tool: edit**\n\n```json\n{\n  \"filePath\": \"src/lib.rs\"\n}\n```\n\n```\nEdit applied.\n```"), "{markdown}");
    assert!(markdown.ends_with("- the test passes\n\n"), "{markdown}");
}

#[test]
fn ctrl_t_cycles_the_models_variants_and_the_prompt_carries_the_choice() {
    let mut app = app();
    key(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(app.notice.as_deref(), Some("this model has no variants"));
    let providers = serde_json::from_value(json!({"providers": [{"id": "mock", "name": "Mock",
        "models": {"mock-model": {"limit": {"context": 128000}, "variants": {"high": {}, "max": {}}}}}],
        "default": {"mock": "mock-model"}}))
    .unwrap();
    app.update(Msg::Providers(providers));
    let mut seen = Vec::new();
    for _ in 0..3 {
        key(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
        seen.push(app.variant.clone());
    }
    assert_eq!(seen, [Some("high".to_owned()), Some("max".to_owned()), None]);
    key(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
    assert_eq!(app.notice.as_deref(), Some("variant: high"));
    type_text(&mut app, "think hard");
    assert!(frame(&mut app, 80, 6).contains("mock-model high"), "the status line names the variant");
    let sent = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert!(matches!(&sent[..], [Command::Prompt { variant: Some(v), .. }] if v == "high"), "{sent:?}");
}

#[test]
fn ctrl_x_t_lists_the_themes_and_picks_one() {
    let mut app = app();
    app.theme_names = vec!["system".to_owned(), "night".to_owned()];
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    key(&mut app, KeyCode::Char('t'), KeyModifiers::NONE);
    assert!(frame(&mut app, 60, 12).contains("Themes"));
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    assert_eq!(key(&mut app, KeyCode::Enter, KeyModifiers::NONE), [Command::SetTheme("night".to_owned())]);
    let theme = Theme { accent: ratatui::style::Color::Rgb(1, 2, 3), ..Theme::default() };
    app.set_theme(theme);
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    terminal.draw(|f| opencode_tui::view::draw(f, &mut app)).unwrap();
    let coloured =
        terminal.backend().buffer().content().iter().any(|cell| cell.fg == ratatui::style::Color::Rgb(1, 2, 3));
    assert!(coloured, "the transcript is drawn again in the new theme's colours");
}

#[test]
fn ctrl_x_arrows_go_into_a_subagents_session_and_back() {
    let mut app = app();
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    assert_eq!(key(&mut app, KeyCode::Right, KeyModifiers::NONE), [Command::OpenChild(SESSION.to_owned())]);
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    assert!(key(&mut app, KeyCode::Left, KeyModifiers::NONE).is_empty());
    assert_eq!(app.notice.as_deref(), Some("this is not a subagent's session"));

    let child = session(json!({"id": "ses_0002", "parentID": SESSION, "title": "Find the tests (@general subagent)"}));
    app.update(Msg::Opened(child, Vec::new()));
    assert!(frame(&mut app, 80, 8).contains("Find the tests (@general subagent)  subagent · ctrl+x ← back"));
    key(&mut app, KeyCode::Char('x'), KeyModifiers::CONTROL);
    assert_eq!(key(&mut app, KeyCode::Left, KeyModifiers::NONE), [Command::OpenSession(SESSION.to_owned())]);
}

#[test]
fn the_wheel_arrives_as_up_and_down_and_scrolls_the_transcript() {
    let mut app = app();
    let bottom = frame(&mut app, 60, 8);
    key(&mut app, KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(app.scroll, opencode_tui::app::WHEEL_ROWS);
    assert_ne!(frame(&mut app, 60, 8), bottom);
    key(&mut app, KeyCode::Down, KeyModifiers::NONE);
    assert_eq!((app.scroll, frame(&mut app, 60, 8)), (0, bottom));
    // In a prompt of several lines Up and Down move the cursor instead.
    type_text(&mut app, "one");
    key(&mut app, KeyCode::Enter, KeyModifiers::ALT);
    type_text(&mut app, "two");
    key(&mut app, KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(app.scroll, 0);
}

#[test]
fn an_edit_diff_shows_side_by_side_on_a_wide_terminal() {
    let mut app = app();
    app.sidebar = Some(false);
    let wide = frame(&mut app, 130, 24);
    let row = wide.lines().find(|line| line.contains("-    41")).unwrap_or_else(|| panic!("{wide}"));
    assert!(row.contains(" │ +    42"), "removed and added on one row:\n{wide}");
    snapshot("split_diff_130x24", &wide);
    let narrow = frame(&mut app, 80, 24);
    assert!(narrow.contains("  -    41\n") && narrow.contains("  +    42\n"), "unified when narrow:\n{narrow}");
}

#[test]
fn an_empty_session_costs_zero_not_minus_zero() {
    let mut app = app();
    app.update(Msg::Opened(session(json!({})), Vec::new()));
    let wide = frame(&mut app, 130, 12);
    assert!(wide.contains("$0.00 spent") && !wide.contains("-0.00"), "{wide}");
}

#[test]
fn help_shows_the_keys_as_bound_now() {
    let mut app = app();
    app.update(Msg::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::CONTROL)));
    app.update(Msg::Key(KeyEvent::new(KeyCode::Char('h'), KeyModifiers::NONE)));
    snapshot("help_80x32", &frame(&mut app, 80, 32));
    app.keymap = opencode_tui::keys::Keymap::with(&json!({"leader": "ctrl+g", "session_new": "f2"})).0;
    let rebound = frame(&mut app, 80, 32);
    assert!(rebound.contains(" f2  /new ") && rebound.contains(" ctrl+g l  /sessions "), "{rebound}");
}

#[test]
fn tui_json_diff_style_stacked_keeps_diffs_unified_and_scroll_speed_sets_the_wheel_step() {
    let mut stacked = app();
    stacked.sidebar = Some(false);
    let problems = stacked.apply_display_settings(&serde_json::json!({"diff_style": "stacked", "scroll_speed": 5}));
    assert!(problems.is_empty(), "{problems:?}");
    let wide = frame(&mut stacked, 130, 24);
    assert!(wide.contains("  -    41") && wide.contains("  +    42"), "unified however wide:\n{wide}");
    assert!(!wide.lines().any(|line| line.contains("-    41") && line.contains("+    42")), "{wide}");
    key(&mut stacked, KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(stacked.scroll, 5);

    let mut other = app();
    let problems = other.apply_display_settings(&serde_json::json!({"diff_style": "sideways", "scroll_speed": -1}));
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("diff_style \"sideways\"") && problems[1].contains("scroll_speed -1"), "{problems:?}");
    key(&mut other, KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(other.scroll, opencode_tui::app::WHEEL_ROWS, "the default is kept");
}

#[test]
fn a_written_file_shows_what_it_holds_collapsed_to_its_first_lines() {
    let content: String = (1..=20).map(|n| format!("fn f{n}() {{}}\n")).collect();
    let messages = serde_json::from_value(json!([
        {"info": {"id": "msg_01", "sessionID": SESSION, "role": "assistant", "time": {"created": 1100, "completed": 1500},
                  "agent": "build", "providerID": "mock", "modelID": "mock-model", "finish": "stop", "cost": 0.0,
                  "tokens": {"input": 1, "output": 1, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
         "parts": [part("msg_01", "prt_01", json!({"type": "tool", "callID": "c1", "tool": "write",
            "state": {"status": "completed", "input": {"filePath": "src/new.rs", "content": content},
                      "output": "Wrote file successfully.", "metadata": {"exists": false}}}))]}
    ]))
    .unwrap();
    let mut app = app();
    app.sidebar = Some(false);
    app.update(Msg::Opened(session(json!({})), messages));
    let screen = frame(&mut app, 80, 30);
    assert!(screen.contains("← Write src/new.rs"), "{screen}");
    assert!(screen.contains("  fn f1() {}") && screen.contains("  fn f16() {}"), "{screen}");
    assert!(!screen.contains("fn f17()") && screen.contains("… 4 more lines"), "{screen}");
}

#[test]
fn share_publishes_the_session_and_copies_its_link_and_unshare_withdraws_it() {
    let mut app = app();
    type_text(&mut app, "/share");
    let run = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(run, [Command::Share { session: SESSION.to_owned(), shared: true }]);
    let url = "http://127.0.0.1:4096/share/ses_1".to_owned();
    assert_eq!(app.update(Msg::Shared(url.clone())), [Command::Copy(url.clone())]);
    assert!(frame(&mut app, 100, 12).contains(&format!("shared at {url} (link copied)")));
    type_text(&mut app, "/unshare");
    let run = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(run, [Command::Share { session: SESSION.to_owned(), shared: false }]);
}

#[test]
fn connect_picks_a_provider_by_typing_and_takes_its_key_masked() {
    let mut app = app();
    type_text(&mut app, "/connect");
    assert_eq!(key(&mut app, KeyCode::Enter, KeyModifiers::NONE), [Command::LoadConnectable]);
    let entry = |id: &str, name: &str, connected| opencode_client::ProviderEntry {
        id: id.into(),
        name: name.into(),
        connected,
    };
    app.update(Msg::ProvidersToConnect(vec![
        entry("mock", "Mock", true),
        entry("anthropic", "Anthropic", false),
        entry("openai", "OpenAI", false),
    ]));
    let list = frame(&mut app, 80, 20);
    assert!(list.contains("Anthropic · anthropic") && list.contains("Mock · mock  (connected)"), "{list}");
    type_text(&mut app, "open");
    let filtered = frame(&mut app, 80, 20);
    assert!(filtered.contains("OpenAI · openai") && !filtered.contains("Anthropic"), "{filtered}");
    key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    type_text(&mut app, "sk-secret");
    let typing = frame(&mut app, 80, 20);
    assert!(typing.contains("API key for OpenAI") && typing.contains("•••••••••"), "{typing}");
    assert!(!typing.contains("sk-secret"), "the key is never shown:\n{typing}");
    let stored = key(&mut app, KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(
        stored,
        [Command::SetApiKey { provider: "openai".into(), name: "OpenAI".into(), key: "sk-secret".into() }]
    );
    assert_eq!(app.overlay, opencode_tui::app::Overlay::None);
}

#[test]
fn chosen_models_come_first_in_the_picker_and_f2_steps_through_them() {
    let mut app = app();
    let providers = serde_json::from_value(json!({"providers": [{"id": "mock", "name": "Mock",
        "models": {"a": {}, "b": {}, "c": {}}}], "default": {"mock": "a"}}))
    .unwrap();
    app.update(Msg::Providers(providers));
    let pick = |app: &mut App, name: &str| {
        let at = app.models().iter().position(|(_, model)| model == name).unwrap();
        app.overlay = opencode_tui::app::Overlay::Models { selected: at };
        key(app, KeyCode::Enter, KeyModifiers::NONE)
    };
    pick(&mut app, "c");
    let saved = pick(&mut app, "b");
    let model = |id: &str| ModelRef { provider_id: "mock".into(), model_id: id.into() };
    assert_eq!(saved, [Command::SaveRecentModels(vec![model("b"), model("c")])]);
    let order: Vec<String> = app.models().into_iter().map(|(_, model)| model).collect();
    assert_eq!(order, ["b", "c", "a"], "recent first");
    key(&mut app, KeyCode::F(2), KeyModifiers::NONE);
    assert_eq!(app.model_choice, Some(model("c")));
    key(&mut app, KeyCode::F(2), KeyModifiers::NONE);
    assert_eq!(app.model_choice, Some(model("b")), "it wraps around");
    key(&mut app, KeyCode::F(2), KeyModifiers::SHIFT);
    assert_eq!(app.model_choice, Some(model("c")));
}
