//! An engine over a `context.db` in a temporary directory, and a driver that replays a synthetic
//! session request by request the way the runtime calls the transform.

use std::path::PathBuf;

use opencode_llm::ContentPart;
use opencode_llm::Message;
use opencode_magic_context::Engine;
use opencode_magic_context::MagicContextConfig;
use opencode_magic_context::PassInput;
use opencode_magic_context::PassReport;
use opencode_magic_context::Store;

use super::sessions::Session;
use super::sessions::step_messages;

pub const SESSION: &str = "ses_test";
pub const PROJECT: &str = "/work/project";
pub const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// A config whose window the synthetic sessions fill within a few dozen turns.
pub fn config(window: u64) -> MagicContextConfig {
    MagicContextConfig { context_limit: window, overhead_tokens: 2_000, ..MagicContextConfig::default() }
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub engine: Engine,
    pub config: MagicContextConfig,
}

impl Harness {
    pub fn new(config: MagicContextConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::new(config.clone(), Store::open(&dir.path().join("context.db")).unwrap());
        Self { dir, engine, config }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("context.db")
    }

    /// A new engine over the same database, as after a process restart.
    pub fn restart(&mut self) {
        self.engine = Engine::new(self.config.clone(), Store::open(&self.path()).unwrap());
    }

    pub fn pass(&mut self, history: &[Message], now_ms: u64, model: &str) -> (Vec<Message>, PassReport) {
        let mut messages = history.to_vec();
        let input = PassInput {
            session_id: SESSION.into(),
            project: PROJECT.into(),
            model_key: model.into(),
            now_ms,
            window: None,
        };
        let report = self.engine.transform(&input, &mut messages).unwrap();
        (messages, report)
    }
}

/// One request of a replayed session: the host's history at that moment, when, and on which model.
pub struct Request {
    pub history: Vec<Message>,
    pub now_ms: u64,
    pub model: String,
}

/// Every request of `session`, with time advancing by `step_ms` per request plus the turns' idle
/// gaps when `idle` is set, and model switches when `switch` is set.
pub fn requests(session: &Session, step_ms: u64, idle: bool, switch: bool) -> Vec<Request> {
    let mut history = Vec::new();
    let mut now = 1_000_000;
    let mut out = Vec::new();
    for turn in &session.turns {
        if idle {
            now += turn.idle_seconds * 1000;
        }
        let model = if switch { format!("anthropic/{}", turn.model) } else { MODEL.to_owned() };
        history.push(Message::user(turn.user.clone()));
        for (index, step) in turn.steps.iter().enumerate() {
            now += step_ms;
            out.push(Request { history: history.clone(), now_ms: now, model: model.clone() });
            history.extend(step_messages(step, index));
        }
        now += step_ms;
        out.push(Request { history: history.clone(), now_ms: now, model: model.clone() });
        history.push(Message::assistant(vec![ContentPart::text(turn.answer.clone())]));
    }
    out
}

/// Each message as its JSON bytes (what byte-identity is judged on).
pub fn bytes(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|message| serde_json::to_string(message).unwrap()).collect()
}

/// The text of a message's first text part.
pub fn text(message: &Message) -> String {
    message.text()
}
