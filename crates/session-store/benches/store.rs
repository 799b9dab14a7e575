#![allow(clippy::expect_used, clippy::unwrap_used, reason = "a benchmark program fails loudly")]

//! `opencode-session-store` benchmarks (run with `cargo xtask bench opencode-session-store`, or
//! `cargo bench -p opencode-session-store --bench store`).
//!
//! 1. Append one part: the batched path (`stage_part`, commits coalesced) and a direct one-part write
//!    transaction; plus the durable `flush` that ends a step.
//! 2. Load the newest 200 messages (with parts) of a 10,000-message session.
//! 3. First page (50) of 10,000 sessions.
//! 4. Open an existing database and check its migrations.

use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use opencode_session_store::AssistantMessage;
use opencode_session_store::AssistantTime;
use opencode_session_store::CreatedTime;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessagePath;
use opencode_session_store::ModelRef;
use opencode_session_store::NewSession;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Project;
use opencode_session_store::ProjectTime;
use opencode_session_store::SessionQuery;
use opencode_session_store::Store;
use opencode_session_store::Tokens;
use opencode_session_store::ToolEndTime;
use opencode_session_store::ToolState;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use serde_json::json;

const PROJECT: &str = "prj_bench";

fn main() {
    let dir = std::env::temp_dir().join(format!("session-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    println!("opencode-session-store (release, WAL, synchronous=NORMAL; medians unless noted)");
    append_part(&dir.join("append.db"));
    load_history(&dir.join("history.db"));
    first_page(&dir.join("sessions.db"));
    open_existing(&dir.join("history.db"));
    std::fs::remove_dir_all(&dir).ok();
}

fn append_part(path: &Path) {
    let store = open_with_project(path);
    let session = store.write(|tx| tx.create_session(NewSession::new(PROJECT, "/w"))).unwrap();
    let (_, answer) = turn_messages(&session.id);
    store.write(|tx| tx.append_message(&answer).map(drop)).unwrap();

    // Streaming: every token updates one of a few growing parts.
    let mut parts: Vec<Part> = (0..4).map(|i| text_part(&answer, &format!("part {i}"))).collect();
    let mut staged = Vec::with_capacity(20_000);
    for token in 0..20_000 {
        let part = &mut parts[token % 4];
        if let PartKind::Text { text, .. } = &mut part.kind {
            text.push_str(" token");
        }
        let start = Instant::now();
        store.stage_part(part.clone()).unwrap();
        staged.push(start.elapsed());
    }
    let mut flushes = Vec::new();
    for _ in 0..50 {
        let part = text_part(&answer, "settled");
        store.stage_part(part).unwrap();
        let start = Instant::now();
        store.flush().unwrap();
        flushes.push(start.elapsed());
    }
    let mut direct = Vec::new();
    for _ in 0..2_000 {
        let part = text_part(&answer, "a completed part of a typical size, written on its own");
        let start = Instant::now();
        store.write(|tx| tx.upsert_part(&part)).unwrap();
        direct.push(start.elapsed());
    }
    let mean = staged.iter().sum::<Duration>() / u32::try_from(staged.len()).unwrap();
    println!(
        "append one part, batched (stage_part, 20,000 streaming updates): p50 {}  p99 {}  max {}  mean {:.1} µs",
        p(&mut staged, 50),
        p(&mut staged, 99),
        p(&mut staged, 100),
        mean.as_secs_f64() * 1e6
    );
    println!(
        "append one part, own transaction (write + upsert_part):         p50 {}  p99 {}",
        p(&mut direct, 50),
        p(&mut direct, 99)
    );
    println!("flush (commit + fsync before a step is reported finished):       p50 {}", p(&mut flushes, 50));
}

fn load_history(path: &Path) {
    let store = open_with_project(path);
    let mut sizes = Vec::new();
    for messages in [1_000usize, 10_000] {
        let session = store.write(|tx| tx.create_session(NewSession::new(PROJECT, "/w"))).unwrap();
        for batch in 0..messages / 2 / 250 {
            store
                .write(|tx| {
                    for i in 0..250 {
                        let (question, answer) = turn_messages(&session.id);
                        tx.append_message(&question)?;
                        tx.upsert_part(&text_part(
                            &question,
                            &format!("question {batch}-{i}: please look at src/main.rs"),
                        ))?;
                        tx.append_message(&answer)?;
                        tx.upsert_part(&text_part(&answer, &"Here is what I found. ".repeat(20)))?;
                        tx.upsert_part(&tool_part(&answer))?;
                        tx.upsert_part(&Part {
                            id: id::ascending(IdKind::Part),
                            session_id: session.id.clone(),
                            message_id: answer.id().into(),
                            kind: PartKind::StepFinish {
                                reason: "stop".into(),
                                snapshot: None,
                                cost: 0.01,
                                tokens: Tokens::default(),
                            },
                        })?;
                    }
                    Ok(())
                })
                .unwrap();
        }
        let mut times = Vec::new();
        for _ in 0..100 {
            let start = Instant::now();
            let page = store.read(|r| r.history(&session.id, None, 200)).unwrap();
            times.push(start.elapsed());
            assert_eq!(page.messages.len(), 200);
        }
        sizes.push((messages, p(&mut times, 50)));
    }
    for (messages, median) in sizes {
        println!("load newest 200 messages with parts of a {messages}-message session: p50 {median}");
    }
}

fn first_page(path: &Path) {
    let store = open_with_project(path);
    for _ in 0..20 {
        store
            .write(|tx| (0..500).try_for_each(|_| tx.create_session(NewSession::new(PROJECT, "/w")).map(drop)))
            .unwrap();
    }
    let mut times = Vec::new();
    let mut filtered = Vec::new();
    for _ in 0..200 {
        let start = Instant::now();
        let page = store.read(|r| r.list_sessions(&SessionQuery::default())).unwrap();
        times.push(start.elapsed());
        assert_eq!(page.sessions.len(), 50);
        let query =
            SessionQuery { project_id: Some(PROJECT.into()), directory: Some("/w".into()), ..SessionQuery::default() };
        let start = Instant::now();
        store.read(|r| r.list_sessions(&query)).unwrap();
        filtered.push(start.elapsed());
    }
    println!(
        "first page (50) of 10,000 sessions: p50 {}  (filtered by project and directory: {})",
        p(&mut times, 50),
        p(&mut filtered, 50)
    );
}

fn open_existing(path: &Path) {
    let mut times = Vec::new();
    for _ in 0..100 {
        let start = Instant::now();
        let store = Store::open(path).unwrap();
        times.push(start.elapsed());
        drop(store);
    }
    println!("open an existing database + check migrations: p50 {}  p99 {}", p(&mut times, 50), p(&mut times, 99));
}

fn open_with_project(path: &Path) -> Store {
    let store = Store::open(path).unwrap();
    store
        .write(|tx| {
            let time = ProjectTime { created: 1, updated: 1, initialized: None };
            tx.upsert_project(&Project {
                id: PROJECT.into(),
                worktree: "/w".into(),
                vcs: None,
                name: None,
                icon: None,
                commands: None,
                time,
                sandboxes: vec![],
            })
        })
        .unwrap();
    store
}

fn turn_messages(session_id: &str) -> (MessageInfo, MessageInfo) {
    let question = MessageInfo::User(UserMessage {
        id: id::ascending(IdKind::Message),
        session_id: session_id.into(),
        time: CreatedTime { created: 1 },
        format: None,
        summary: None,
        agent: "build".into(),
        model: ModelRef { provider_id: "anthropic".into(), model_id: "claude-sonnet".into(), variant: None },
        system: None,
        tools: None,
    });
    let answer = MessageInfo::Assistant(AssistantMessage {
        id: id::ascending(IdKind::Message),
        session_id: session_id.into(),
        time: AssistantTime { created: 2, completed: Some(3) },
        error: None,
        parent_id: question.id().into(),
        model_id: "claude-sonnet".into(),
        provider_id: "anthropic".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath { cwd: "/w".into(), root: "/w".into() },
        summary: None,
        cost: 0.01,
        tokens: Tokens { input: 1200, output: 300, ..Tokens::default() },
        structured: None,
        variant: None,
        finish: Some("tool-calls".into()),
    });
    (question, answer)
}

fn text_part(message: &MessageInfo, text: &str) -> Part {
    Part {
        id: id::ascending(IdKind::Part),
        session_id: message.session_id().into(),
        message_id: message.id().into(),
        kind: PartKind::Text { text: text.into(), synthetic: None, ignored: None, time: None, metadata: None },
    }
}

fn tool_part(message: &MessageInfo) -> Part {
    Part {
        id: id::ascending(IdKind::Part),
        session_id: message.session_id().into(),
        message_id: message.id().into(),
        kind: PartKind::Tool {
            call_id: "call_1".into(),
            tool: "read".into(),
            state: ToolState::Completed {
                input: json!({"filePath": "/w/src/main.rs"}),
                output: "fn main() {}\n".repeat(40),
                title: "src/main.rs".into(),
                metadata: json!({}),
                time: ToolEndTime { start: 1, end: 2, compacted: None },
                attachments: None,
            },
            metadata: None,
        },
    }
}

/// The `pct` percentile, formatted.
fn p(times: &mut [Duration], pct: usize) -> String {
    times.sort();
    let index = (times.len() * pct / 100).min(times.len() - 1);
    let t = times[index];
    if t < Duration::from_millis(1) {
        format!("{:.1} µs", t.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", t.as_secs_f64() * 1e3)
    }
}
