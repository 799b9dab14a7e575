//! The records a turn writes, built one way for every writer (the runner, subtasks, the fold of a
//! provider stream): new parts, a tool part's settled state, assistant errors, token counts.

use std::time::Duration;

use opencode_llm::FinishReason;
use opencode_llm::LlmError;
use opencode_llm::Usage;
use opencode_session_store::CacheTokens;
use opencode_session_store::MessageError;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Tokens;
use opencode_session_store::ToolEndTime;
use opencode_session_store::ToolState;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use serde_json::Value;
use serde_json::json;

use crate::tools::ToolInvocation;
use crate::tools::ToolResult;
use crate::tools::ToolStatus;

/// The settled form of a running tool part.
pub(crate) fn settled_part(mut part: Part, call: &ToolInvocation, result: ToolResult) -> Part {
    let start = match &part.kind {
        PartKind::Tool { state: ToolState::Running { time, .. }, .. } => time.start,
        _ => now_ms(),
    };
    let time = ToolEndTime { start, end: now_ms(), compacted: None };
    let mut metadata = result.metadata;
    if let Some(path) = &result.managed_path {
        metadata.insert("outputPath".into(), Value::String(path.display().to_string()));
    }
    let state = match result.status {
        ToolStatus::Completed => ToolState::Completed {
            input: call.input.clone(),
            output: result.output,
            title: result.title.unwrap_or_default(),
            metadata: Value::Object(metadata),
            time,
            attachments: None,
        },
        ToolStatus::Error | ToolStatus::Declined => ToolState::Error {
            input: call.input.clone(),
            error: result.output,
            metadata: Some(Value::Object(metadata)),
            time,
        },
        ToolStatus::Interrupted => ToolState::Error {
            input: call.input.clone(),
            error: opencode_session_store::INTERRUPTED_TOOL_ERROR.to_owned(),
            metadata: None,
            time,
        },
    };
    if let PartKind::Tool { state: slot, .. } = &mut part.kind {
        *slot = state;
    }
    part
}

/// A new part of `message_id` with a fresh ascending id.
pub(crate) fn new_part(session_id: &str, message_id: &str, kind: PartKind) -> Part {
    Part { id: id::ascending(IdKind::Part), session_id: session_id.to_owned(), message_id: message_id.to_owned(), kind }
}

/// A message's token counts from the provider's usage.
pub(crate) fn tokens(usage: &Usage) -> Tokens {
    Tokens {
        total: Some(usage.total_tokens.max(usage.input_tokens + usage.output_tokens)),
        input: usage.non_cached_input_tokens,
        output: usage.visible_output_tokens(),
        reasoning: usage.reasoning_tokens,
        cache: CacheTokens { read: usage.cache_read_input_tokens, write: usage.cache_write_input_tokens },
    }
}

/// How a finish reason is stored on an assistant message.
pub(crate) fn finish_name(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ToolCalls => "tool-calls",
        FinishReason::ContentFilter => "content-filter",
        FinishReason::Error => "error",
        FinishReason::Unknown => "unknown",
    }
}

/// The error of an assistant message cut short (interrupt, crash).
pub(crate) fn aborted(message: &str) -> MessageError {
    MessageError { name: "MessageAbortedError".into(), data: json!({"message": message}) }
}

/// The error of an assistant message whose provider failed.
pub(crate) fn api_error(error: &LlmError) -> MessageError {
    MessageError {
        name: "APIError".into(),
        data: json!({
            "message": error.message,
            "statusCode": error.status,
            "isRetryable": error.retryable,
            "kind": error.kind,
        }),
    }
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
}
