//! Message parts: the 12 part types of spec/03 §3.2 and the tool state machine of §3.3, with OpenCode's
//! JSON field names.

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::types::MessageError;
use crate::types::Tokens;

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

/// The part's type and its fields, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum PartKind {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        synthetic: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ignored: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        time: Option<PartTime>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        time: PartTime,
    },
    Tool {
        #[serde(rename = "callID")]
        call_id: String,
        tool: String,
        state: ToolState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
    },
    File(FileData),
    Snapshot {
        snapshot: String,
    },
    Patch {
        hash: String,
        files: Vec<String>,
    },
    Agent {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<Value>,
    },
    Compaction {
        auto: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overflow: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tail_start_id: Option<String>,
    },
    Subtask {
        prompt: String,
        description: String,
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
    },
    Retry {
        attempt: u32,
        error: MessageError,
        time: RetryTime,
    },
    StepStart {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        snapshot: Option<String>,
    },
    StepFinish {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        snapshot: Option<String>,
        cost: f64,
        tokens: Tokens,
    },
}

impl PartKind {
    /// The `type` string of this part.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Text { .. } => "text",
            Self::Reasoning { .. } => "reasoning",
            Self::Tool { .. } => "tool",
            Self::File(_) => "file",
            Self::Snapshot { .. } => "snapshot",
            Self::Patch { .. } => "patch",
            Self::Agent { .. } => "agent",
            Self::Compaction { .. } => "compaction",
            Self::Subtask { .. } => "subtask",
            Self::Retry { .. } => "retry",
            Self::StepStart { .. } => "step-start",
            Self::StepFinish { .. } => "step-finish",
        }
    }
}

/// A file attachment (`FilePart` without its ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileData {
    pub mime: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartTime {
    pub start: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryTime {
    pub created: i64,
}

/// A tool call's state: `pending → running → completed | error` (pending may settle directly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum ToolState {
    Pending {
        input: Value,
        raw: String,
    },
    Running {
        input: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        time: ToolStartTime,
    },
    Completed {
        input: Value,
        output: String,
        title: String,
        metadata: Value,
        time: ToolEndTime,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attachments: Option<Vec<Part>>,
    },
    Error {
        input: Value,
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Value>,
        time: ToolEndTime,
    },
}

impl ToolState {
    pub fn status(&self) -> &'static str {
        match self {
            Self::Pending { .. } => "pending",
            Self::Running { .. } => "running",
            Self::Completed { .. } => "completed",
            Self::Error { .. } => "error",
        }
    }

    /// Whether the call has settled (completed or failed); a settled call never changes status again.
    pub fn is_settled(&self) -> bool {
        matches!(self, Self::Completed { .. } | Self::Error { .. })
    }

    /// Whether `next` may replace this state. Settled states only accept the same status (e.g. a
    /// completed output marked compacted); a running call never goes back to pending.
    pub fn allows(&self, next: &Self) -> bool {
        match (self, next) {
            (Self::Pending { .. }, _) => true,
            (Self::Running { .. }, next) => !matches!(next, Self::Pending { .. }),
            (Self::Completed { .. }, Self::Completed { .. }) | (Self::Error { .. }, Self::Error { .. }) => true,
            _ => false,
        }
    }

    /// The call's input, whatever the status.
    pub fn input(&self) -> &Value {
        match self {
            Self::Pending { input, .. }
            | Self::Running { input, .. }
            | Self::Completed { input, .. }
            | Self::Error { input, .. } => input,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolStartTime {
    pub start: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolEndTime {
    pub start: i64,
    pub end: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacted: Option<i64>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn parts_use_opencode_field_names() {
        let part = Part {
            id: "prt_1".into(),
            session_id: "ses_1".into(),
            message_id: "msg_1".into(),
            kind: PartKind::Tool {
                call_id: "call_1".into(),
                tool: "bash".into(),
                state: ToolState::Running {
                    input: json!({"command": "ls"}),
                    title: None,
                    metadata: None,
                    time: ToolStartTime { start: 5 },
                },
                metadata: None,
            },
        };
        let value = serde_json::to_value(&part).unwrap();
        assert_eq!(
            value,
            json!({"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1", "type": "tool", "callID": "call_1",
                   "tool": "bash", "state": {"status": "running", "input": {"command": "ls"}, "time": {"start": 5}}})
        );
        assert_eq!(serde_json::from_value::<Part>(value).unwrap(), part);
    }

    #[test]
    fn step_parts_are_kebab_case() {
        let value = json!({"id": "prt_2", "sessionID": "s", "messageID": "m", "type": "step-finish", "reason": "stop",
            "cost": 0.5, "tokens": {"input": 1, "output": 2, "reasoning": 0, "cache": {"read": 3, "write": 4}}});
        let part: Part = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(part.kind.type_name(), "step-finish");
        assert_eq!(serde_json::to_value(&part).unwrap(), value);
    }

    #[test]
    fn every_part_type_round_trips_unchanged() {
        let ids = json!({"id": "prt_1", "sessionID": "ses_1", "messageID": "msg_1"});
        let bodies = [
            json!({"type": "text", "text": "hi", "synthetic": true, "time": {"start": 1, "end": 2}}),
            json!({"type": "reasoning", "text": "hmm", "metadata": {"sig": "x"}, "time": {"start": 1}}),
            json!({"type": "tool", "callID": "c", "tool": "read", "state": {"status": "pending", "input": {}, "raw": ""}}),
            json!({"type": "file", "mime": "image/png", "filename": "a.png", "url": "data:image/png;base64,AA=="}),
            json!({"type": "snapshot", "snapshot": "abc123"}),
            json!({"type": "patch", "hash": "abc123", "files": ["src/main.rs"]}),
            json!({"type": "agent", "name": "plan", "source": {"value": "@plan", "start": 0, "end": 5}}),
            json!({"type": "compaction", "auto": true, "overflow": false, "tail_start_id": "msg_2"}),
            json!({"type": "subtask", "prompt": "p", "description": "d", "agent": "general",
                   "model": {"providerID": "openai", "modelID": "gpt"}, "command": "review"}),
            json!({"type": "retry", "attempt": 2, "error": {"name": "APIError", "data": {"message": "slow down",
                   "isRetryable": true}}, "time": {"created": 3}}),
            json!({"type": "step-start", "snapshot": "abc123"}),
            json!({"type": "step-finish", "reason": "tool-calls", "cost": 0.0, "tokens": {"input": 0, "output": 0,
                   "reasoning": 0, "cache": {"read": 0, "write": 0}}}),
        ];
        for body in bodies {
            let mut value = ids.clone();
            value.as_object_mut().unwrap().extend(body.as_object().unwrap().clone());
            let part: Part = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(serde_json::to_value(&part).unwrap(), value);
        }
    }

    #[test]
    fn settled_tool_states_never_regress() {
        let running =
            ToolState::Running { input: json!({}), title: None, metadata: None, time: ToolStartTime { start: 1 } };
        let pending = ToolState::Pending { input: json!({}), raw: String::new() };
        let failed = ToolState::Error {
            input: json!({}),
            error: "boom".into(),
            metadata: None,
            time: ToolEndTime { start: 1, end: 2, compacted: None },
        };
        assert!(pending.allows(&running));
        assert!(running.allows(&failed));
        assert!(!running.allows(&pending));
        assert!(!failed.allows(&running));
    }
}
