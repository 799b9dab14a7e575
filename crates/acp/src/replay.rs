//! A session's history as the `session/update` notifications that would have shown it live: the
//! user's text and files, the agent's text and thoughts, every tool call in its final state, and the
//! latest plan.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ImageContent, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, ResourceLink,
    SessionUpdate,
};
use opencode_session_store::{FileData, MessageInfo, MessageWithParts, PartKind, Todo};

/// The updates replaying `history`, then the plan of `todos` (when there is one).
pub(crate) fn updates(
    history: &[MessageWithParts],
    todos: &[opencode_session_store::Todo],
    directory: &Path,
) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for message in history {
        let user = matches!(message.info, MessageInfo::User(_));
        if matches!(&message.info, MessageInfo::System(_))
            || matches!(&message.info, MessageInfo::Assistant(assistant) if assistant.summary == Some(true))
        {
            continue;
        }
        for part in &message.parts {
            updates.extend(part_update(&part.kind, user, directory));
        }
    }
    if !todos.is_empty() {
        updates.push(plan(todos));
    }
    updates
}

fn part_update(part: &PartKind, user: bool, directory: &Path) -> Option<SessionUpdate> {
    let chunk = |block: ContentBlock| {
        let chunk = ContentChunk::new(block);
        if user { SessionUpdate::UserMessageChunk(chunk) } else { SessionUpdate::AgentMessageChunk(chunk) }
    };
    match part {
        PartKind::Text { text, synthetic, .. } if *synthetic != Some(true) && !text.is_empty() => {
            Some(chunk(ContentBlock::from(text.clone())))
        }
        PartKind::Reasoning { text, .. } if !user && !text.is_empty() => {
            Some(SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text.clone()))))
        }
        PartKind::Tool { call_id, tool, state, .. } => {
            Some(SessionUpdate::ToolCall(crate::tools::call(call_id, tool, state, directory)))
        }
        PartKind::File(file) => Some(chunk(file_block(file))),
        _ => None,
    }
}

/// A file part: images inline, anything else as a link.
fn file_block(file: &FileData) -> ContentBlock {
    if file.mime.starts_with("image/")
        && let Some(data) = file.url.strip_prefix(&format!("data:{};base64,", file.mime))
    {
        return ContentBlock::Image(ImageContent::new(data, file.mime.as_str()));
    }
    let name = file.filename.clone().unwrap_or_else(|| file.url.rsplit('/').next().unwrap_or_default().to_owned());
    ContentBlock::ResourceLink(ResourceLink::new(name, file.url.as_str()).mime_type(file.mime.clone()))
}

/// The todo list as a plan.
pub(crate) fn plan(todos: &[Todo]) -> SessionUpdate {
    let entries = todos
        .iter()
        .filter(|todo| todo.status != "cancelled")
        .map(|todo| {
            let priority = match todo.priority.as_str() {
                "high" => PlanEntryPriority::High,
                "low" => PlanEntryPriority::Low,
                _ => PlanEntryPriority::Medium,
            };
            let status = match todo.status.as_str() {
                "in_progress" => PlanEntryStatus::InProgress,
                "completed" => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            PlanEntry::new(todo.content.as_str(), priority, status)
        })
        .collect();
    SessionUpdate::Plan(Plan::new(entries))
}
