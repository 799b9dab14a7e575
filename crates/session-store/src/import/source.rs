//! What an importer reads from OpenCode's data, whatever its layout: rows as JSON in OpenCode 1.x's
//! shapes (with their ids filled in), or the reason a row could not be read.

use serde_json::Value;

use crate::error::Result;

/// One record of OpenCode's: its id and its JSON, or why it could not be read.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub id: String,
    pub json: std::result::Result<Value, String>,
}

impl Row {
    pub fn ok(id: impl Into<String>, json: Value) -> Self {
        Self { id: id.into(), json: Ok(json) }
    }

    pub fn unreadable(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Self { id: id.into(), json: Err(reason.into()) }
    }
}

/// A message row with its part rows, parts in OpenCode's order (by id).
#[derive(Debug, Clone)]
pub(crate) struct MessageRows {
    pub message: Row,
    pub parts: Vec<Row>,
}

/// A session row with the facts the importer orders sessions by.
#[derive(Debug, Clone)]
pub(crate) struct SessionRow {
    pub row: Row,
    pub parent_id: Option<String>,
    pub created: i64,
}

/// One of OpenCode's storage layouts, read-only.
pub(crate) trait Source {
    /// Where the data is (for messages).
    fn describe(&self) -> String;
    fn projects(&self) -> Result<Vec<Row>>;
    fn sessions(&self) -> Result<Vec<SessionRow>>;
    /// The session's messages in history order (creation time, then id), each with its parts.
    /// Parts whose message is not among them come back as unreadable rows in `orphans`.
    fn messages(&self, session_id: &str) -> Result<(Vec<MessageRows>, Vec<Row>)>;
}

/// Inserts `key: value` into a JSON object (a no-op for anything else).
pub(crate) fn with_field(mut json: Value, key: &str, value: impl Into<Value>) -> Value {
    if let Value::Object(map) = &mut json {
        map.insert(key.to_owned(), value.into());
    }
    json
}

/// Groups parts under their messages (parts in the order given); parts of unknown messages are
/// returned as orphans.
pub(crate) fn attach_parts(
    messages: Vec<Row>,
    parts: impl IntoIterator<Item = (String, Row)>,
) -> (Vec<MessageRows>, Vec<Row>) {
    let index: std::collections::HashMap<String, usize> =
        messages.iter().enumerate().map(|(i, row)| (row.id.clone(), i)).collect();
    let mut grouped: Vec<MessageRows> =
        messages.into_iter().map(|message| MessageRows { message, parts: Vec::new() }).collect();
    let mut orphans = Vec::new();
    for (message_id, part) in parts {
        match index.get(&message_id).and_then(|&i| grouped.get_mut(i)) {
            Some(slot) => slot.parts.push(part),
            None => orphans.push(Row::unreadable(part.id, format!("its message {message_id} is missing"))),
        }
    }
    (grouped, orphans)
}
