//! The event stream (`/event` of one directory, or `/global/event`): typed events, and a connection
//! that comes back by itself after the server goes away.

use std::time::Duration;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::client::Client;
use crate::sse::SseReader;
use crate::types::FileDiff;
use crate::types::Message;
use crate::types::MessageInfo;
use crate::types::Part;
use crate::types::PermissionRequest;
use crate::types::Session;
use crate::types::SessionStatus;

/// An event a front end acts on. Kinds this client does not type, or whose properties do not
/// decode, arrive as [`Event::Other`] with their JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Connected,
    SessionCreated(Session),
    SessionUpdated(Session),
    SessionDeleted(Session),
    SessionStatus {
        session_id: String,
        status: SessionStatus,
    },
    SessionIdle {
        session_id: String,
    },
    SessionError {
        session_id: Option<String>,
        error: Value,
    },
    MessageUpdated(MessageInfo),
    MessageRemoved {
        session_id: String,
        message_id: String,
    },
    PartUpdated(Part),
    /// Text appended to a part's `field` (`text`) while it streams.
    PartDelta {
        session_id: String,
        message_id: String,
        part_id: String,
        field: String,
        delta: String,
    },
    PartRemoved {
        session_id: String,
        message_id: String,
        part_id: String,
    },
    PermissionAsked(PermissionRequest),
    PermissionReplied {
        session_id: String,
        request_id: String,
        reply: String,
    },
    TodoUpdated {
        session_id: String,
        todos: Vec<Value>,
    },
    /// The files the session changed (after a step that changed files, and after an undo: the
    /// undone changes).
    SessionDiff {
        session_id: String,
        diff: Vec<FileDiff>,
    },
    Other {
        kind: String,
        properties: Value,
    },
}

impl Event {
    /// Decodes `{type, properties}`.
    pub fn from_json(value: Value) -> Self {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        let properties = value.get("properties").cloned().unwrap_or(Value::Null);
        Self::typed(&kind, &properties).unwrap_or(Self::Other { kind, properties })
    }

    fn typed(kind: &str, p: &Value) -> Option<Self> {
        let text = |key: &str| p.get(key).and_then(Value::as_str).map(str::to_owned);
        let decode = |key: &str| p.get(key).cloned();
        Some(match kind {
            "server.connected" => Self::Connected,
            "session.created" => Self::SessionCreated(serde_json::from_value(decode("info")?).ok()?),
            "session.updated" => Self::SessionUpdated(serde_json::from_value(decode("info")?).ok()?),
            "session.deleted" => Self::SessionDeleted(serde_json::from_value(decode("info")?).ok()?),
            "session.status" => Self::SessionStatus {
                session_id: text("sessionID")?,
                status: serde_json::from_value(decode("status")?).ok()?,
            },
            "session.idle" => Self::SessionIdle { session_id: text("sessionID")? },
            "session.error" => {
                Self::SessionError { session_id: text("sessionID"), error: decode("error").unwrap_or(Value::Null) }
            }
            "message.updated" => Self::MessageUpdated(serde_json::from_value(decode("info")?).ok()?),
            "message.removed" => {
                Self::MessageRemoved { session_id: text("sessionID")?, message_id: text("messageID")? }
            }
            "message.part.updated" => Self::PartUpdated(serde_json::from_value(decode("part")?).ok()?),
            "message.part.delta" => Self::PartDelta {
                session_id: text("sessionID")?,
                message_id: text("messageID")?,
                part_id: text("partID")?,
                field: text("field")?,
                delta: text("delta")?,
            },
            "message.part.removed" => Self::PartRemoved {
                session_id: text("sessionID")?,
                message_id: text("messageID")?,
                part_id: text("partID")?,
            },
            "permission.asked" => Self::PermissionAsked(serde_json::from_value(p.clone()).ok()?),
            "permission.replied" => Self::PermissionReplied {
                session_id: text("sessionID")?,
                request_id: text("requestID").or_else(|| text("permissionID"))?,
                reply: text("reply").or_else(|| text("response"))?,
            },
            "session.diff" => Self::SessionDiff {
                session_id: text("sessionID")?,
                diff: serde_json::from_value(decode("diff")?).ok()?,
            },
            "todo.updated" => Self::TodoUpdated {
                session_id: text("sessionID")?,
                todos: serde_json::from_value(decode("todos")?).ok()?,
            },
            _ => return None,
        })
    }

    /// The session the event is about, if any.
    pub fn session_id(&self) -> Option<&str> {
        match self {
            Self::SessionCreated(s) | Self::SessionUpdated(s) | Self::SessionDeleted(s) => Some(&s.id),
            Self::SessionStatus { session_id, .. }
            | Self::SessionIdle { session_id }
            | Self::MessageRemoved { session_id, .. }
            | Self::PartDelta { session_id, .. }
            | Self::PartRemoved { session_id, .. }
            | Self::PermissionReplied { session_id, .. }
            | Self::TodoUpdated { session_id, .. }
            | Self::SessionDiff { session_id, .. } => Some(session_id),
            Self::SessionError { session_id, .. } => session_id.as_deref(),
            Self::MessageUpdated(info) => Some(&info.session_id),
            Self::PartUpdated(part) => Some(&part.session_id),
            Self::PermissionAsked(request) => Some(&request.session_id),
            Self::Connected | Self::Other { .. } => None,
        }
    }

    /// Whether session `id` went idle (`session.idle`, or `session.status` idle).
    pub fn is_idle(&self, id: &str) -> bool {
        match self {
            Self::SessionIdle { session_id } => session_id == id,
            Self::SessionStatus { session_id, status } => session_id == id && *status == SessionStatus::Idle,
            _ => false,
        }
    }
}

/// What an [`EventStream`] yields.
// Events are nearly every item: boxing them would cost an allocation each to shrink the rare notices.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// An event; `directory` is set on `/global/event` (the instance it happened in).
    Event { directory: Option<String>, event: Event },
    /// The connection dropped (the reason); the stream is reconnecting with back-off.
    Disconnected(String),
    /// Connected again after a drop: events in between were missed, so refetch the state shown
    /// (sessions, the open session's messages, pending permissions).
    Reconnected,
}

/// A live event stream. It reconnects by itself (back-off from 250 ms to 5 s) until dropped.
#[derive(Debug)]
pub struct EventStream {
    items: mpsc::Receiver<StreamItem>,
    task: tokio::task::JoinHandle<()>,
}

impl EventStream {
    pub(crate) fn open(client: Client, path: &'static str) -> Self {
        // Bounded: a consumer that falls behind slows the reader, never grows memory.
        let (sender, items) = mpsc::channel(1024);
        let task = tokio::spawn(follow(client, path, sender));
        Self { items, task }
    }

    /// The next item; `None` only if the stream's task ended.
    pub async fn next(&mut self) -> Option<StreamItem> {
        self.items.recv().await
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

async fn follow(client: Client, path: &'static str, items: mpsc::Sender<StreamItem>) {
    let mut backoff = FIRST_BACKOFF;
    let mut dropped = false;
    loop {
        let reason = match client.stream(path).await {
            Ok(response) => {
                if dropped && items.send(StreamItem::Reconnected).await.is_err() {
                    return;
                }
                backoff = FIRST_BACKOFF;
                match read(response, &items).await {
                    Some(reason) => reason,
                    None => return,
                }
            }
            Err(err) => err.to_string(),
        };
        dropped = true;
        if items.send(StreamItem::Disconnected(reason)).await.is_err() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// Forwards the events of one connection. Returns why it ended, or `None` when nobody listens.
async fn read(response: reqwest::Response, items: &mpsc::Sender<StreamItem>) -> Option<String> {
    let mut body = response.bytes_stream();
    let mut reader = SseReader::default();
    while let Some(chunk) = body.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(err) => return Some(format!("the event stream broke: {err}")),
        };
        for data in reader.feed(&chunk) {
            let Some(item) = item(&data) else { continue };
            items.send(item).await.ok()?;
        }
    }
    Some("the server closed the event stream".to_owned())
}

/// One SSE `data` payload: `{type, properties}`, or `/global/event`'s `{directory, payload}`.
fn item(data: &str) -> Option<StreamItem> {
    let value: Value = match serde_json::from_str(data) {
        Ok(value) => value,
        Err(err) => {
            tracing::debug!(%err, "skipped an event that is not JSON");
            return None;
        }
    };
    #[derive(Deserialize)]
    struct Envelope {
        directory: Option<String>,
        payload: Value,
    }
    let (directory, event) = match serde_json::from_value::<Envelope>(value.clone()) {
        Ok(envelope) => (envelope.directory, envelope.payload),
        Err(_) => (None, value),
    };
    Some(StreamItem::Event { directory, event: Event::from_json(event) })
}

/// Applies an event to a session's transcript, so a front end keeps one list of messages in step
/// with the stream. Returns whether anything changed.
pub fn apply(messages: &mut Vec<Message>, event: &Event) -> bool {
    match event {
        Event::MessageUpdated(info) => match messages.iter_mut().find(|m| m.info.id == info.id) {
            Some(message) => {
                message.info = info.clone();
                true
            }
            None => {
                let at = messages.partition_point(|m| m.info.id < info.id);
                messages.insert(at, Message { info: info.clone(), parts: Vec::new() });
                true
            }
        },
        Event::MessageRemoved { message_id, .. } => {
            let before = messages.len();
            messages.retain(|m| &m.info.id != message_id);
            messages.len() != before
        }
        Event::PartUpdated(part) => {
            let Some(message) = messages.iter_mut().find(|m| m.info.id == part.message_id) else { return false };
            match message.parts.iter_mut().find(|p| p.id == part.id) {
                Some(existing) => *existing = part.clone(),
                None => {
                    let at = message.parts.partition_point(|p| p.id < part.id);
                    message.parts.insert(at, part.clone());
                }
            }
            true
        }
        Event::PartDelta { message_id, part_id, field, delta, .. } => {
            let part = messages
                .iter_mut()
                .find(|m| &m.info.id == message_id)
                .and_then(|m| m.parts.iter_mut().find(|p| &p.id == part_id));
            match part.map(|p| &mut p.kind) {
                Some(crate::PartKind::Text { text, .. } | crate::PartKind::Reasoning { text }) if field == "text" => {
                    text.push_str(delta);
                    true
                }
                _ => false,
            }
        }
        Event::PartRemoved { message_id, part_id, .. } => {
            messages.iter_mut().find(|m| &m.info.id == message_id).is_some_and(|m| {
                let before = m.parts.len();
                m.parts.retain(|p| &p.id != part_id);
                m.parts.len() != before
            })
        }
        _ => false,
    }
}
