//! Test helpers: temporary directories, a store with one project, message and part builders.

use std::path::Path;
use std::path::PathBuf;

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
use opencode_session_store::Session;
use opencode_session_store::Store;
use opencode_session_store::Tokens;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;

pub const PROJECT: &str = "prj_test";

/// A directory removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("session-store-{}-{}", std::process::id(), fastrand::u64(..)));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn db(&self) -> PathBuf {
        self.0.join("opencode.db")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// A fresh store with project [`PROJECT`].
pub fn store() -> (TempDir, Store) {
    let dir = TempDir::new();
    let store = Store::open(dir.db()).unwrap();
    add_project(&store);
    (dir, store)
}

pub fn add_project(store: &Store) {
    store
        .write(|tx| {
            let time = ProjectTime { created: 1, updated: 1, initialized: None };
            tx.upsert_project(&Project {
                id: PROJECT.into(),
                worktree: "/work/project".into(),
                vcs: Some("git".into()),
                name: None,
                icon: None,
                commands: None,
                time,
                sandboxes: vec![],
            })
        })
        .unwrap();
}

pub fn session(store: &Store) -> Session {
    store.write(|tx| tx.create_session(NewSession::new(PROJECT, "/work/project"))).unwrap()
}

pub fn user(session_id: &str) -> MessageInfo {
    MessageInfo::User(UserMessage {
        id: id::ascending(IdKind::Message),
        session_id: session_id.into(),
        time: CreatedTime { created: 1 },
        format: None,
        summary: None,
        agent: "build".into(),
        model: ModelRef { provider_id: "anthropic".into(), model_id: "claude".into(), variant: None },
        system: None,
        tools: None,
    })
}

pub fn assistant(session_id: &str, parent: &str, cost: f64, input_tokens: u64) -> MessageInfo {
    MessageInfo::Assistant(AssistantMessage {
        id: id::ascending(IdKind::Message),
        session_id: session_id.into(),
        time: AssistantTime { created: 2, completed: Some(3) },
        error: None,
        parent_id: parent.into(),
        model_id: "claude".into(),
        provider_id: "anthropic".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath { cwd: "/work/project".into(), root: "/work/project".into() },
        summary: None,
        cost,
        tokens: Tokens { input: input_tokens, ..Tokens::default() },
        structured: None,
        variant: None,
        finish: Some("stop".into()),
    })
}

pub fn text(message: &MessageInfo, text: &str) -> Part {
    Part {
        id: id::ascending(IdKind::Part),
        session_id: message.session_id().into(),
        message_id: message.id().into(),
        kind: PartKind::Text { text: text.into(), synthetic: None, ignored: None, time: None, metadata: None },
    }
}

/// Appends a user message and an assistant answer, each with one text part, in one transaction.
pub fn turn(store: &Store, session_id: &str, label: &str) -> (MessageInfo, MessageInfo) {
    store
        .write(|tx| {
            let question = user(session_id);
            tx.append_message(&question)?;
            tx.upsert_part(&text(&question, &format!("question {label}")))?;
            let answer = assistant(session_id, question.id(), 0.0, 0);
            tx.append_message(&answer)?;
            tx.upsert_part(&text(&answer, &format!("answer {label}")))?;
            Ok((question, answer))
        })
        .unwrap()
}

/// The text of every text part in a page of messages, in order.
pub fn texts(messages: &[opencode_session_store::MessageWithParts]) -> Vec<String> {
    messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match &p.kind {
            PartKind::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}
