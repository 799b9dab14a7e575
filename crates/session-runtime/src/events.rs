//! The in-process event bus: every durable store event (after its commit) plus live-only fragments
//! (streamed deltas, session status). Durable events can also be replayed from the store with
//! `Reader::events_after`; live-only ones cannot, and a completed part always follows them durably.

use std::sync::Arc;

use opencode_session_store::Event;
use serde::Serialize;
use tokio::sync::broadcast;

/// One event on the bus.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum RuntimeEvent {
    /// A committed, replayable event of a session's log.
    Durable(Event),
    /// Streamed text, reasoning or tool-input fragment of a part (live only).
    Delta {
        #[serde(rename = "sessionID")]
        session_id: String,
        #[serde(rename = "messageID")]
        message_id: String,
        #[serde(rename = "partID")]
        part_id: String,
        kind: DeltaKind,
        delta: String,
    },
    /// The session's run status changed (live only).
    Status {
        #[serde(rename = "sessionID")]
        session_id: String,
        status: SessionStatus,
    },
}

impl RuntimeEvent {
    /// The session the event belongs to.
    pub fn session_id(&self) -> &str {
        match self {
            Self::Durable(event) => &event.session_id,
            Self::Delta { session_id, .. } | Self::Status { session_id, .. } => session_id,
        }
    }
}

/// What a [`RuntimeEvent::Delta`] extends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeltaKind {
    Text,
    Reasoning,
    ToolInput,
    /// The summary being written by a compaction.
    Compaction,
}

/// OpenCode's session status (`idle | busy | retry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SessionStatus {
    Idle,
    Busy,
    Retry {
        attempt: u32,
        message: String,
        /// Unix ms of the next attempt.
        next: i64,
    },
}

/// A broadcast channel of [`RuntimeEvent`]s; slow subscribers lag (and are told so) rather than
/// slowing the runner. Events are shared, not copied, per subscriber (and the channel's ring, which
/// tokio allocates in full up front, holds pointers: 4096 slots cost ~160 KB, not ~700 KB).
#[derive(Debug, Clone)]
pub(crate) struct EventBus {
    sender: broadcast::Sender<Arc<RuntimeEvent>>,
}

impl EventBus {
    pub(crate) fn new(capacity: usize) -> Self {
        Self { sender: broadcast::channel(capacity.max(16)).0 }
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<RuntimeEvent>> {
        self.sender.subscribe()
    }

    /// Sends to whoever listens; no subscriber is not an error.
    pub(crate) fn send(&self, event: RuntimeEvent) {
        if self.sender.receiver_count() > 0 {
            // Only fails without receivers, which was just checked (a race only drops an unseen event).
            self.sender.send(Arc::new(event)).ok();
        }
    }
}
