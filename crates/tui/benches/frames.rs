#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! `opencode-tui` frame benchmarks (`cargo xtask bench opencode-tui`, or
//! `cargo bench -p opencode-tui --bench frames`), on a 2,000-message session (1,000 turns: a prompt,
//! and an answer with markdown and a `bash` call), drawn at 160x48 on ratatui's `TestBackend`:
//!
//! 1. The first frame after opening the session (every cache cold).
//! 2. A frame while streaming: one text delta applied, then a draw (the streaming message re-renders).
//! 3. A keystroke while streaming: a key into the prompt, then a draw.
//! 4. Scrolling: PageUp, then a draw, through the whole session.
//! 5. Resident memory of the process with the session loaded and drawn.

use std::time::Duration;
use std::time::Instant;

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use crossterm::event::KeyModifiers;
use opencode_client::Event;
use opencode_tui::Theme;
use opencode_tui::app::App;
use opencode_tui::app::Msg;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

const TURNS: usize = 1000;
const SESSION: &str = "ses_bench";

fn main() {
    let rss_before = rss_kb();
    let messages = session();
    let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let mut app = App::new(Theme::default());
    let session =
        serde_json::from_value(json!({"id": SESSION, "title": "bench", "time": {"created": 1, "updated": 1}})).unwrap();

    let started = Instant::now();
    app.update(Msg::Opened(session, messages));
    terminal.draw(|f| opencode_tui::view::draw(f, &mut app)).unwrap();
    println!("first frame of a {}-message session: {:.2} ms (open + draw)", TURNS * 2, ms(started.elapsed()));

    let last = format!("msg_{:06}", TURNS * 2 - 1);
    let streaming = time(300, || {
        app.update(Msg::Server(Event::PartDelta {
            session_id: SESSION.into(),
            message_id: last.clone(),
            part_id: format!("prt_{:06}_t", TURNS * 2 - 1),
            field: "text".into(),
            delta: " more streamed words".into(),
        }));
        terminal.draw(|f| opencode_tui::view::draw(f, &mut app)).unwrap();
    });
    report("frame while streaming (delta + draw)", &streaming);

    let keys = time(300, || {
        app.update(Msg::Key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)));
        app.update(Msg::Server(Event::PartDelta {
            session_id: SESSION.into(),
            message_id: last.clone(),
            part_id: format!("prt_{:06}_t", TURNS * 2 - 1),
            field: "text".into(),
            delta: " w".into(),
        }));
        terminal.draw(|f| opencode_tui::view::draw(f, &mut app)).unwrap();
    });
    report("keystroke to frame while streaming", &keys);

    let scroll = time(TURNS * 2, || {
        app.update(Msg::Key(KeyEvent::new(KeyCode::PageUp, KeyModifiers::NONE)));
        terminal.draw(|f| opencode_tui::view::draw(f, &mut app)).unwrap();
    });
    report("scroll frame (PageUp + draw, top to bottom of the session)", &scroll);
    println!("resident memory for the loaded and drawn session: {:.1} MB", (rss_kb() - rss_before) as f64 / 1024.0);
    println!("process RSS: {:.1} MB", rss_kb() as f64 / 1024.0);
}

/// 1,000 turns: a prompt, then an answer with a `bash` call and two paragraphs of markdown.
fn session() -> Vec<opencode_client::Message> {
    let mut messages = Vec::with_capacity(TURNS * 2);
    for turn in 0..TURNS {
        let (user, answer) = (format!("msg_{:06}", turn * 2), format!("msg_{:06}", turn * 2 + 1));
        messages.push(json!({
            "info": {"id": user, "sessionID": SESSION, "role": "user", "time": {"created": turn}},
            "parts": [{"id": format!("prt_{:06}_u", turn * 2), "sessionID": SESSION, "messageID": user,
                       "type": "text", "text": format!("Step {turn}: look at src/module_{turn}.rs and fix what fails")}]
        }));
        messages.push(json!({
            "info": {"id": answer, "sessionID": SESSION, "role": "assistant", "agent": "build",
                     "providerID": "mock", "modelID": "mock-model", "finish": "stop",
                     "time": {"created": turn, "completed": turn + 900}, "cost": 0.001,
                     "tokens": {"input": 1000, "output": 100, "reasoning": 0, "cache": {"read": 0, "write": 0}}},
            "parts": [
                {"id": format!("prt_{:06}_b", turn * 2 + 1), "sessionID": SESSION, "messageID": answer, "type": "tool",
                 "callID": format!("c{turn}"), "tool": "bash",
                 "state": {"status": "completed", "input": {"command": "cargo test"},
                           "output": "running 3 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\n\ntest result: ok. 3 passed\n"}},
                {"id": format!("prt_{:06}_t", turn * 2 + 1), "sessionID": SESSION, "messageID": answer, "type": "text",
                 "text": format!("## Step {turn}\n\nThe **bug** was in `module_{turn}`: an off-by-one in the loop bound. \
                    I changed it and the tests pass now.\n\n- fixed the bound\n- added a test for the edge case\n\n\
                    ```rust\nfor i in 0..len {{\n    visit(i);\n}}\n```")}
            ]
        }));
    }
    serde_json::from_value(json!(messages)).unwrap()
}

fn time(runs: usize, mut f: impl FnMut()) -> Vec<Duration> {
    let mut samples: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    samples
}

fn report(label: &str, samples: &[Duration]) {
    let at = |q: f64| ms(samples[((samples.len() - 1) as f64 * q) as usize]);
    println!("{label}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms", at(0.5), at(0.99), at(1.0));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn rss_kb() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
