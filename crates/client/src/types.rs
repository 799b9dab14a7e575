//! The API's JSON (OpenCode 1.x field names). Every type accepts fields it does not know and keeps
//! those a front end may still want in `extra`, so a newer server, or OpenCode's own, decodes.

use serde::Deserialize;
use serde::Deserializer;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

/// `GET /global/health`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub healthy: bool,
    #[serde(default)]
    pub version: String,
}

/// A session (`GET /session/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    #[serde(rename = "projectID", default)]
    pub project_id: String,
    #[serde(default)]
    pub directory: String,
    #[serde(rename = "parentID", default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub time: SessionTime,
    /// Set while messages are staged for removal (`/undo`); they are hidden from the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert: Option<Revert>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Session {
    /// The link of the session's shared transcript, when it is shared (`share.url`).
    pub fn share_url(&self) -> Option<String> {
        self.extra.get("share")?.get("url")?.as_str().map(str::to_owned)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionTime {
    #[serde(default, deserialize_with = "millis")]
    pub created: u64,
    #[serde(default, deserialize_with = "millis")]
    pub updated: u64,
}

/// `session.revert`: messages from `messageID` on are staged for removal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revert {
    #[serde(rename = "messageID")]
    pub message_id: String,
    #[serde(rename = "partID", default, skip_serializing_if = "Option::is_none")]
    pub part_id: Option<String>,
}

/// A message with its parts (`GET /session/{id}/message`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub info: MessageInfo,
    #[serde(default)]
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
    /// A role this client does not know (e.g. a system update).
    #[serde(other)]
    Other,
}

/// A user or assistant message's info; the assistant fields are absent on user messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageInfo {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub role: Role,
    #[serde(default)]
    pub time: MessageTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    #[serde(rename = "modelID", default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    /// Why the turn failed (`{name, data: {message}}`), on assistant messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<MessageError>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageTime {
    #[serde(default, deserialize_with = "millis")]
    pub created: u64,
    #[serde(default, deserialize_with = "optional_millis", skip_serializing_if = "Option::is_none")]
    pub completed: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub reasoning: u64,
    #[serde(default)]
    pub cache: CacheTokens,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheTokens {
    #[serde(default)]
    pub read: u64,
    #[serde(default)]
    pub write: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageError {
    pub name: String,
    #[serde(default)]
    pub data: Value,
}

impl MessageError {
    /// `data.message`, else the error's name.
    pub fn message(&self) -> &str {
        self.data.get("message").and_then(Value::as_str).unwrap_or(&self.name)
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    #[serde(rename = "messageID")]
    pub message_id: String,
    #[serde(flatten)]
    pub kind: PartKind,
}

/// The twelve part kinds, and `Unknown` for a kind this client does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum PartKind {
    Text {
        #[serde(default)]
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        synthetic: Option<bool>,
    },
    Reasoning {
        #[serde(default)]
        text: String,
    },
    Tool {
        #[serde(rename = "callID", default)]
        call_id: String,
        tool: String,
        state: ToolState,
    },
    StepStart {},
    StepFinish {
        #[serde(default)]
        reason: String,
        #[serde(default)]
        cost: f64,
        #[serde(default)]
        tokens: Tokens,
    },
    File {
        #[serde(default)]
        mime: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
        #[serde(default)]
        url: String,
    },
    Patch {
        #[serde(default)]
        hash: String,
        #[serde(default)]
        files: Vec<String>,
    },
    Agent {
        name: String,
    },
    Subtask {
        #[serde(default)]
        prompt: String,
        #[serde(default)]
        description: String,
        #[serde(default)]
        agent: String,
    },
    Snapshot {
        #[serde(default)]
        snapshot: String,
    },
    Compaction {
        #[serde(default)]
        auto: bool,
    },
    Retry {
        #[serde(default)]
        attempt: u32,
        #[serde(default)]
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

/// A tool call's state: `pending` (input still streaming), `running`, `completed` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolState {
    pub status: ToolStatus,
    #[serde(default)]
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolStatus {
    Pending,
    Running,
    Completed,
    Error,
}

/// `session.status`: idle, busy, or waiting to retry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SessionStatus {
    Idle,
    Busy,
    Retry {
        #[serde(default)]
        attempt: u32,
        #[serde(default)]
        message: String,
        #[serde(default, deserialize_with = "millis")]
        next: u64,
    },
}

/// A pending permission request (`permission.asked`, `GET /permission`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub id: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    pub permission: String,
    #[serde(default)]
    pub patterns: Vec<String>,
    /// The patterns "allow always" saves.
    #[serde(default)]
    pub always: Vec<String>,
    #[serde(default)]
    pub metadata: Value,
}

/// The answer to a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionReply {
    Once,
    Always,
    Reject,
}

/// An agent (`GET /agent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `primary`, `subagent` or `all`.
    #[serde(default)]
    pub mode: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default)]
    pub hidden: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /config/providers`: the providers that can answer, and each one's default model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Providers {
    #[serde(default)]
    pub providers: Vec<Provider>,
    #[serde(default)]
    pub default: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provider {
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Model id -> model (with `limit.context`, `cost`, `variants`, ...).
    #[serde(default)]
    pub models: Map<String, Value>,
}

/// A command (`GET /command`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A prompt: its parts and, optionally, the agent and model that answer it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptBody {
    pub parts: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    /// One of the model's variants (`high`, `max`, ...), as `/config/providers` lists them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl PromptBody {
    /// One text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self { parts: vec![serde_json::json!({"type": "text", "text": text.into()})], ..Self::default() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    #[serde(rename = "providerID")]
    pub provider_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
}

/// Milliseconds, written by some servers as floats.
fn millis<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Ok(optional_millis(deserializer)?.unwrap_or(0))
}

fn optional_millis<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    let number = Option::<serde_json::Number>::deserialize(deserializer)?;
    // Float-to-integer `as` saturates and maps NaN to 0: fine for a timestamp.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(number.map(|n| n.as_u64().unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as u64)))
}

/// One file's change in a session (`SnapshotFileDiff`): a turn's (`summary.diffs` of a user
/// message) or the session's (`session.diff`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    #[serde(default)]
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(default)]
    pub additions: u64,
    #[serde(default)]
    pub deletions: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A provider as `/connect` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderEntry {
    pub id: String,
    pub name: String,
    /// It has credentials (or needs none) on the server.
    pub connected: bool,
}

/// `GET /provider`, only what `/connect` needs of it.
#[derive(Debug, Deserialize)]
pub(crate) struct ProviderList {
    pub all: Vec<ProviderName>,
    #[serde(default)]
    pub connected: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ProviderName {
    pub id: String,
    #[serde(default)]
    pub name: String,
}
