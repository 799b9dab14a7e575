//! A session's state as the transform sees it: one mark per raw message, one tag per taggable
//! part, the drop queue, and the rendered m[0]/m[1] with their watermarks. Everything here is
//! loaded from and written to `context.db`; nothing a later pass must replay lives only in memory.

use std::collections::BTreeSet;

/// What a tag stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagKind {
    /// A text part of a user or assistant message.
    Message,
    /// A tool result.
    Tool,
}

/// One taggable part: the unit `ctx_reduce` drops and `§N§` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub ordinal: usize,
    pub part: usize,
    pub kind: TagKind,
    /// The tool's name (tool results).
    pub tool: String,
    /// Same tool with the same input (a repeated read): later outputs supersede earlier ones.
    pub dedup: Option<u64>,
    pub tokens: u64,
    /// Committed drops; replayed as `[dropped §N§]` on every later pass.
    pub dropped: bool,
}

/// One raw message as first seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageMark {
    /// Detects a rewritten history (the host compacted or reverted it).
    pub fingerprint: u64,
    pub tokens: u64,
    /// The number of the first tag of its parts (tags are numbered from 1).
    pub first_tag: u32,
    pub tag_count: u32,
    /// A user message: compartments end just before one, so tool pairs are never split.
    pub user_turn: bool,
}

/// The rendered history slots and the watermarks they were rendered at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    /// `provider/model` of the last pass; a change means the provider cache is gone.
    pub model_key: String,
    /// When the previous request was sent (simulated or wall clock, milliseconds).
    pub last_request_ms: Option<u64>,
    /// Raw messages before this ordinal are represented by m[0]/m[1] and not sent.
    pub boundary: usize,
    /// The frozen baseline slot.
    pub m0: String,
    /// The delta slot.
    pub m1: String,
    /// The newest compartment folded into m[0] / rendered in m[1].
    pub m0_seq: u32,
    pub m1_seq: u32,
    /// The newest memory folded into m[0] / rendered in m[1].
    pub m0_memory_id: i64,
    pub m1_memory_id: i64,
    /// The project's memory epoch m[0] was rendered at.
    pub memory_epoch: i64,
    /// `/ctx-flush` asked for a refresh on the next pass.
    pub flush_pending: bool,
    pub passes: u64,
    /// The estimated prompt tokens of the last pass.
    pub last_usage_tokens: u64,
    /// The usable window the host gave on the last pass (0: use the configured one).
    pub window: u64,
}

/// One session's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    pub session_id: String,
    /// The project directory (memories are per project).
    pub project: String,
    pub marks: Vec<MessageMark>,
    /// Tag `n` is `tags[n - 1]`.
    pub tags: Vec<Tag>,
    /// Tags `ctx_reduce` asked to drop, applied on the next executing pass.
    pub pending: BTreeSet<u32>,
    pub meta: Meta,
}

impl SessionState {
    pub fn new(session_id: &str, project: &str) -> Self {
        Self {
            session_id: session_id.to_owned(),
            project: project.to_owned(),
            marks: Vec::new(),
            tags: Vec::new(),
            pending: BTreeSet::new(),
            meta: Meta::default(),
        }
    }

    /// Forgets the raw history (it was rewritten under us); rendered slots stay until the next
    /// pass re-renders them.
    pub fn reset_history(&mut self) {
        self.marks.clear();
        self.tags.clear();
        self.pending.clear();
        self.meta.boundary = 0;
        self.meta.m0_seq = 0;
        self.meta.m1_seq = 0;
    }

    /// The ordinals of user messages, oldest first.
    pub fn user_turns(&self) -> impl Iterator<Item = usize> + '_ {
        self.marks.iter().enumerate().filter(|(_, mark)| mark.user_turn).map(|(ordinal, _)| ordinal)
    }
}
