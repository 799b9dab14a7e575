//! What the store keeps, as serde types with OpenCode 1.x JSON field names (camelCase, as the HTTP API
//! serves them): projects, sessions, messages, todos, permission requests and the runtime records
//! (admitted inputs, context epochs, events). Parts are in [`crate::part`].

use std::collections::BTreeMap;

use opencode_config::PermissionAction;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

/// A Location's identity: the git root commit, or the directory for non-git folders.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: String,
    pub worktree: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vcs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Value>,
    pub time: ProjectTime,
    #[serde(default)]
    pub sandboxes: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectTime {
    pub created: i64,
    pub updated: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialized: Option<i64>,
}

/// A session (`Session` in the OpenAPI document). `cost` and `tokens` are the sums over its assistant
/// messages, maintained by the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub slug: String,
    #[serde(rename = "projectID")]
    pub project_id: String,
    #[serde(rename = "workspaceID", default, skip_serializing_if = "Option::is_none")]
    pub workspace_id: Option<String>,
    pub directory: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(rename = "parentID", default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SessionSummary>,
    #[serde(default)]
    pub cost: f64,
    #[serde(default)]
    pub tokens: Tokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<Share>,
    pub title: String,
    /// The effective agent for the next provider turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The effective model for the next provider turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<SessionModel>,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    pub time: SessionTime,
    /// Permission overrides for this session, evaluated after the agent's rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Vec<PermissionRuleEntry>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert: Option<Revert>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    pub additions: u64,
    pub deletions: u64,
    pub files: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diffs: Option<Vec<FileDiff>>,
}

/// One file's change (`SnapshotFileDiff`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    pub additions: u64,
    pub deletions: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Share {
    pub url: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionModel {
    pub id: String,
    #[serde(rename = "providerID")]
    pub provider_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionTime {
    pub created: i64,
    pub updated: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacting: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<i64>,
}

/// One `(permission, pattern, action)` rule of a session's overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionRuleEntry {
    pub permission: String,
    pub pattern: String,
    pub action: PermissionAction,
}

/// A pending revert: history from `messageID` (and `partID` within it) is hidden until committed or undone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revert {
    #[serde(rename = "messageID")]
    pub message_id: String,
    #[serde(rename = "partID", default, skip_serializing_if = "Option::is_none")]
    pub part_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Token counts (`tokens` of assistant messages, step-finish parts and sessions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    pub input: u64,
    pub output: u64,
    pub reasoning: u64,
    pub cache: CacheTokens,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CacheTokens {
    pub read: u64,
    pub write: u64,
}

/// A message's info, tagged by `role`. `system` is a Mid-Conversation System Message (the exact combined
/// text sent to the model); user-facing transcripts may hide it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum MessageInfo {
    User(UserMessage),
    Assistant(AssistantMessage),
    System(SystemMessage),
}

impl MessageInfo {
    pub fn id(&self) -> &str {
        match self {
            Self::User(m) => &m.id,
            Self::Assistant(m) => &m.id,
            Self::System(m) => &m.id,
        }
    }

    pub fn session_id(&self) -> &str {
        match self {
            Self::User(m) => &m.session_id,
            Self::Assistant(m) => &m.session_id,
            Self::System(m) => &m.session_id,
        }
    }

    pub fn role(&self) -> &'static str {
        match self {
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::System(_) => "system",
        }
    }

    pub fn created(&self) -> i64 {
        match self {
            Self::User(m) => m.time.created,
            Self::Assistant(m) => m.time.created,
            Self::System(m) => m.time.created,
        }
    }

    pub(crate) fn set_ids(&mut self, id: String, session_id: String) {
        match self {
            Self::User(m) => (m.id, m.session_id) = (id, session_id),
            Self::Assistant(m) => (m.id, m.session_id) = (id, session_id),
            Self::System(m) => (m.id, m.session_id) = (id, session_id),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub time: CreatedTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<UserSummary>,
    pub agent: String,
    pub model: ModelRef,
    /// A custom system prompt for this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<BTreeMap<String, bool>>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UserSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default)]
    pub diffs: Vec<FileDiff>,
}

/// `{providerID, modelID, variant?}` as user messages and subtasks name a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    #[serde(rename = "providerID")]
    pub provider_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedTime {
    pub created: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub time: AssistantTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MessageError>,
    /// The user message this answers.
    #[serde(rename = "parentID")]
    pub parent_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
    #[serde(rename = "providerID")]
    pub provider_id: String,
    pub mode: String,
    pub agent: String,
    pub path: MessagePath,
    /// Whether this message is a compaction summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<bool>,
    pub cost: f64,
    pub tokens: Tokens,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<String>,
}

impl AssistantMessage {
    /// A new assistant message (fresh id) answering `parent_id` as `agent` on `model`, working in
    /// `directory`: started at `created`, not finished, nothing spent yet.
    pub fn new(
        session_id: &str,
        parent_id: &str,
        agent: &str,
        model: &ModelRef,
        directory: &str,
        created: i64,
    ) -> Self {
        Self {
            id: crate::id::ascending(crate::id::IdKind::Message),
            session_id: session_id.to_owned(),
            time: AssistantTime { created, completed: None },
            error: None,
            parent_id: parent_id.to_owned(),
            model_id: model.model_id.clone(),
            provider_id: model.provider_id.clone(),
            mode: agent.to_owned(),
            agent: agent.to_owned(),
            path: MessagePath { cwd: directory.to_owned(), root: directory.to_owned() },
            summary: None,
            cost: 0.0,
            tokens: Tokens::default(),
            structured: None,
            variant: model.variant.clone(),
            finish: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssistantTime {
    pub created: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagePath {
    pub cwd: String,
    pub root: String,
}

/// `{name, data}` as OpenCode serialises named errors (`APIError`, `MessageAbortedError`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageError {
    pub name: String,
    pub data: Value,
}

/// A Mid-Conversation System Message: the exact combined text sent to the model at one boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemMessage {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub text: String,
    pub time: CreatedTime,
}

/// One entry of a session's todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    /// `pending`, `in_progress`, `completed` or `cancelled`.
    pub status: String,
    /// `high`, `medium` or `low`.
    pub priority: String,
}

/// A permission request (`PermissionRequest`), issued by a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub permission: String,
    pub patterns: Vec<String>,
    #[serde(default)]
    pub metadata: Value,
    #[serde(default)]
    pub always: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<PermissionTool>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionTool {
    #[serde(rename = "messageID")]
    pub message_id: String,
    #[serde(rename = "callID")]
    pub call_id: String,
}

/// How a permission request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionReply {
    Once,
    Always,
    Reject,
}

impl PermissionReply {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Always => "always",
            Self::Reject => "reject",
        }
    }
}

/// A stored permission request with what the runtime needs beyond the wire shape.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPermission {
    pub request: PermissionRequest,
    /// The effective agent of the provider turn that issued the call; its policy decides.
    pub agent: String,
    pub reply: Option<PermissionReply>,
    pub time_created: i64,
}

/// A saved approval (`PermissionSavedInfo`): "always allow `action` on `resource`" in a project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedApproval {
    pub id: String,
    #[serde(rename = "projectID")]
    pub project_id: String,
    pub action: String,
    pub resource: String,
}

/// How an admitted prompt joins the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Promoted at the next Safe Provider-Turn Boundary, even mid tool loop.
    Steer,
    /// Promoted one at a time when the session would otherwise go idle.
    Queue,
}

impl Delivery {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Steer => "steer",
            Self::Queue => "queue",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "steer" => Some(Self::Steer),
            "queue" => Some(Self::Queue),
            _ => None,
        }
    }
}

/// A durable admitted prompt (`SessionInputAdmitted`). `promotedSeq` is set once it became history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInput {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The prompt as the client sent it (`{text, files?, agents?}`).
    pub prompt: Value,
    pub delivery: Delivery,
    /// The session event sequence of the admission.
    pub admitted_seq: i64,
    /// The session event sequence of the promotion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_seq: Option<i64>,
    pub time_created: i64,
}

/// The result of admitting a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    pub input: SessionInput,
    /// True when this was an exact retry of an already admitted prompt (nothing new was written).
    pub retried: bool,
}

/// The active Context Epoch of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextEpoch {
    pub session_id: String,
    /// Counts the session's epochs from 1.
    pub epoch: i64,
    /// The Baseline System Context: the exact joined text sent as the provider-cache prefix.
    pub baseline: String,
    /// The keyed parts the baseline was joined from, in order.
    pub baseline_parts: Vec<(String, String)>,
    /// The Context Snapshot (per source key).
    pub snapshot: Value,
    /// The effective agent that owns the baseline.
    pub agent: String,
    /// History position (message sequence) where the epoch begins; earlier system messages leave history.
    pub begins_at: i64,
    /// History position where projected conversation history starts (the compaction boundary).
    pub history_from: i64,
    pub time_created: i64,
}

/// What a new epoch is made of.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEpoch {
    pub baseline: String,
    pub baseline_parts: Vec<(String, String)>,
    pub snapshot: Value,
    pub agent: String,
    /// Start projected history here (a completed compaction's message); `None` keeps the previous epoch's
    /// boundary, or the beginning for the first epoch.
    pub history_from_message: Option<String>,
}

/// One durable event of a session's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// Monotonic per session, from 1, with no gaps.
    pub seq: i64,
    #[serde(rename = "type")]
    pub kind: EventKind,
    pub data: Value,
    pub time: i64,
}

/// Declares [`EventKind`] with each kind's name in the log (OpenCode's event `type`).
macro_rules! event_kinds {
    ($($(#[$doc:meta])* $kind:ident = $name:literal,)*) => {
        /// What a durable event records. Every writer names one of these, and readers that must know
        /// what each kind changes (the runtime's history projection) match them exhaustively, so a new
        /// kind cannot be added without deciding that.
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum EventKind {
            $($(#[$doc])* $kind,)*
            /// A kind this version does not know (written by a newer one); readers treat it as
            /// changing anything.
            Unknown(String),
        }

        impl EventKind {
            /// The kind's name in the log and on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$kind => $name,)*
                    Self::Unknown(name) => name,
                }
            }

            /// The kind named `name` ([`EventKind::Unknown`] when this version has none by that name).
            pub fn parse(name: &str) -> Self {
                match name {
                    $($name => Self::$kind,)*
                    other => Self::Unknown(other.to_owned()),
                }
            }
        }
    };
}

event_kinds! {
    /// A session was created (`info`).
    SessionCreated = "session.created",
    /// A session's row changed (`info`).
    SessionUpdated = "session.updated",
    /// The files a session changed (`diff`).
    SessionDiff = "session.diff",
    /// A turn failed (`error`).
    SessionError = "session.error",
    /// A prompt was admitted (the input row).
    PromptAdmitted = "session.next.prompt.admitted",
    /// An admitted prompt became a user message.
    Prompted = "session.next.prompted",
    /// A mid-conversation System Context update was recorded.
    ContextUpdated = "session.next.context.updated",
    /// A compaction began.
    CompactionStarted = "session.next.compaction.started",
    /// A compaction ended (a new epoch, or a failure).
    CompactionEnded = "session.next.compaction.ended",
    /// A provider turn is retried after a failure.
    Retried = "session.next.retried",
    /// A message's row changed (`info`).
    MessageUpdated = "message.updated",
    /// A message was removed with its parts.
    MessageRemoved = "message.removed",
    /// A part was written (`part`).
    PartUpdated = "message.part.updated",
    /// A part was removed.
    PartRemoved = "message.part.removed",
    /// A tool asked for permission.
    PermissionAsked = "permission.asked",
    /// A permission request was answered.
    PermissionReplied = "permission.replied",
    /// A session's todo list was replaced.
    TodoUpdated = "todo.updated",
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for EventKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(Self::parse(&name))
    }
}

#[cfg(test)]
mod event_kind_tests {
    use super::EventKind;

    #[test]
    fn kinds_keep_their_names_in_the_log_and_unknown_ones_survive_a_round_trip() {
        for name in ["session.created", "session.next.compaction.ended", "message.part.updated", "todo.updated"] {
            let kind = EventKind::parse(name);
            assert!(!matches!(kind, EventKind::Unknown(_)), "{name}");
            assert_eq!(kind.as_str(), name);
            assert_eq!(serde_json::to_value(&kind).unwrap(), name);
        }
        let newer: EventKind = serde_json::from_str("\"session.from.the.future\"").unwrap();
        assert_eq!(newer, EventKind::Unknown("session.from.the.future".to_owned()));
        assert_eq!(serde_json::to_string(&newer).unwrap(), "\"session.from.the.future\"");
    }
}
