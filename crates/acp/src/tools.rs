//! Tool calls as ACP shows them: a kind, a title naming what is actually done (the command, the
//! path, the pattern, the URL), the files touched as locations, the input and output as they are,
//! and diffs for edits.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdateFields, ToolKind,
};
use opencode_session_store::ToolState;
use serde_json::{Value, json};

/// The kind of a tool, by name.
pub(crate) fn kind(tool: &str) -> ToolKind {
    match tool {
        "bash" => ToolKind::Execute,
        "read" => ToolKind::Read,
        "edit" | "write" | "apply_patch" => ToolKind::Edit,
        "grep" | "glob" | "list" | "lsp" => ToolKind::Search,
        "webfetch" | "websearch" => ToolKind::Fetch,
        "task" | "todowrite" | "todoread" => ToolKind::Think,
        "plan_enter" | "plan_exit" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// A string field of the input.
fn text<'a>(input: &'a Value, field: &str) -> Option<&'a str> {
    input.get(field).and_then(Value::as_str).filter(|value| !value.is_empty())
}

/// The title: what the call does, in the words of its input; the tool's own title (else its name)
/// when the input says nothing better.
pub(crate) fn title(tool: &str, input: &Value, tool_title: Option<&str>) -> String {
    let own = || tool_title.filter(|title| !title.is_empty()).unwrap_or(tool).to_owned();
    match tool {
        "bash" => text(input, "command").map_or_else(own, str::to_owned),
        "read" | "edit" | "write" => text(input, "filePath").map_or_else(own, str::to_owned),
        "grep" | "glob" => match (text(input, "pattern"), text(input, "path")) {
            (Some(pattern), Some(path)) => format!("{tool} {pattern} in {path}"),
            (Some(pattern), None) => format!("{tool} {pattern}"),
            _ => own(),
        },
        "list" => format!("list {}", text(input, "path").unwrap_or(".")),
        "webfetch" => text(input, "url").map_or_else(own, str::to_owned),
        "websearch" => text(input, "query").map_or_else(own, |query| format!("search: {query}")),
        "task" => text(input, "description").map_or_else(own, str::to_owned),
        "todowrite" => "Update plan".to_owned(),
        _ => own(),
    }
}

/// The files the call touches, absolute (relative paths are the session directory's).
pub(crate) fn locations(tool: &str, input: &Value, directory: &Path) -> Vec<ToolCallLocation> {
    let absolute = |path: &str| -> PathBuf { directory.join(path) };
    match tool {
        "read" => text(input, "filePath")
            .map(|path| {
                let line = input.get("offset").and_then(Value::as_u64).and_then(|line| u32::try_from(line).ok());
                vec![ToolCallLocation::new(absolute(path)).line(line)]
            })
            .unwrap_or_default(),
        "edit" | "write" => {
            text(input, "filePath").map(|path| vec![ToolCallLocation::new(absolute(path))]).unwrap_or_default()
        }
        "grep" | "glob" | "list" => {
            text(input, "path").map(|path| vec![ToolCallLocation::new(absolute(path))]).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Everything the state says about the call.
pub(crate) fn fields(tool: &str, state: &ToolState, directory: &Path) -> ToolCallUpdateFields {
    let (input, status, tool_title) = match state {
        ToolState::Pending { input, .. } => (input, ToolCallStatus::Pending, None),
        ToolState::Running { input, title, .. } => (input, ToolCallStatus::InProgress, title.as_deref()),
        ToolState::Completed { input, title, .. } => (input, ToolCallStatus::Completed, Some(title.as_str())),
        ToolState::Error { input, .. } => (input, ToolCallStatus::Failed, None),
    };
    let fields = ToolCallUpdateFields::new()
        .kind(kind(tool))
        .status(status)
        .title(title(tool, input, tool_title))
        .locations(locations(tool, input, directory))
        .raw_input(input.clone());
    match state {
        ToolState::Completed { output, metadata, .. } => {
            let mut content = diffs(tool, metadata, directory);
            content.push(ContentBlock::from(output.clone()).into());
            fields.content(content).raw_output(json!({ "output": output, "metadata": metadata }))
        }
        ToolState::Error { error, .. } => {
            fields.content(vec![ContentBlock::from(error.clone()).into()]).raw_output(json!({ "error": error }))
        }
        _ => fields,
    }
}

/// The whole call as it stands (first sight, or history being replayed).
pub(crate) fn call(call_id: &str, tool: &str, state: &ToolState, directory: &Path) -> ToolCall {
    let mut call = ToolCall::new(call_id.to_owned(), tool);
    call.update(fields(tool, state, directory));
    call
}

/// The diffs a finished edit reports in its metadata (`filediff`: the file before and after).
fn diffs(tool: &str, metadata: &Value, directory: &Path) -> Vec<ToolCallContent> {
    if !matches!(tool, "edit" | "write" | "apply_patch") {
        return Vec::new();
    }
    let filediff = metadata.get("filediff");
    let (Some(file), Some(after)) = (
        filediff.and_then(|diff| diff.get("file")).and_then(Value::as_str),
        filediff.and_then(|diff| diff.get("after")).and_then(Value::as_str),
    ) else {
        return Vec::new();
    };
    let before = filediff.and_then(|diff| diff.get("before")).and_then(Value::as_str);
    vec![Diff::new(directory.join(file), after).old_text(before.map(str::to_owned)).into()]
}

/// The diff an edit or write call is about to make, computed from its input and the file as it is
/// now (the call asks before it writes): what the user approves.
pub(crate) fn planned_diff(tool: &str, input: &Value, directory: &Path) -> Option<Diff> {
    let path = directory.join(text(input, "filePath")?);
    let current = std::fs::read_to_string(&path).ok();
    let after = match tool {
        "write" => input.get("content").and_then(Value::as_str)?.to_owned(),
        "edit" => {
            let old = input.get("oldString").and_then(Value::as_str)?;
            let new = input.get("newString").and_then(Value::as_str)?;
            let all = input.get("replaceAll").and_then(Value::as_bool).unwrap_or(false);
            match current.as_deref() {
                _ if old.is_empty() => new.to_owned(),
                Some(content) if content.contains(old) => {
                    if all {
                        content.replace(old, new)
                    } else {
                        content.replacen(old, new, 1)
                    }
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(Diff::new(path, after).old_text(current))
}
