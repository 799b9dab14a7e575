//! Every permission the runtime's tools ask becomes `session/request_permission`: allow once,
//! allow always (the runtime's `always`: the patterns stay approved in that directory while the
//! agent runs), reject once, and reject always (this connection rejects the same permission and
//! patterns without asking again). An edit's request carries the diff it would make. A client that
//! cancels, errs or is gone rejects; nothing waits forever.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallContent, ToolCallUpdate, ToolCallUpdateFields,
};
use opencode_session_store::{PartKind, Session, ToolState};
use opencode_tool_registry::{PendingEvent, PendingKind, PendingRequest, PermissionAsk, Reply};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::server::{Shared, lock};

const ONCE: &str = "allow-once";
const ALWAYS: &str = "allow-always";
const REJECT: &str = "reject-once";
const REJECT_ALWAYS: &str = "reject-always";

/// Answers the runtime's asks through the client until the connection ends.
pub(crate) async fn bridge(shared: Arc<Shared>, cx: ConnectionTo<Client>) {
    let mut pending = shared.engine.permissions.subscribe();
    loop {
        match pending.recv().await {
            Ok(PendingEvent::Asked(request)) => {
                let (shared, cx) = (Arc::clone(&shared), cx.clone());
                // Each ask waits for the user on its own: several tool calls may ask at once.
                tokio::spawn(async move { settle(&shared, &cx, request).await });
            }
            Ok(PendingEvent::Replied { .. }) => {}
            Err(RecvError::Lagged(missed)) => tracing::warn!(missed, "permission requests were missed"),
            Err(RecvError::Closed) => return,
        }
    }
}

async fn settle(shared: &Shared, cx: &ConnectionTo<Client>, request: PendingRequest) {
    let reply = match &request.kind {
        PendingKind::Permission(ask) => permission(shared, cx, &request, ask).await,
        PendingKind::Question { .. } => Reply::Reject {
            message: Some("questions cannot be answered in this editor; decide, or ask in your answer".to_owned()),
        },
    };
    // Not found: the call ended meanwhile (an interrupted turn); nothing is waiting.
    if let Err(err) = shared.engine.permissions.reply(&request.id, reply) {
        tracing::debug!(%err, "permission reply not applied");
    }
}

async fn permission(
    shared: &Shared,
    cx: &ConnectionTo<Client>,
    request: &PendingRequest,
    ask: &PermissionAsk,
) -> Reply {
    let Some(session) = root_session(shared, &request.session_id).await else {
        return Reply::Reject { message: None };
    };
    let keys = keys(&session.id, ask);
    if !keys.is_empty() && keys.iter().all(|key| lock(&shared.rejected).contains(key)) {
        return Reply::Reject { message: None };
    }
    let tool_call = tool_call(shared, request, ask, &session).await;
    let options = vec![
        PermissionOption::new(ONCE, "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(ALWAYS, "Always allow", PermissionOptionKind::AllowAlways),
        PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(REJECT_ALWAYS, "Always reject", PermissionOptionKind::RejectAlways),
    ];
    let asked = RequestPermissionRequest::new(session.id.clone(), tool_call, options);
    let outcome = match cx.send_request(asked).block_task().await {
        Ok(response) => response.outcome,
        Err(err) => {
            tracing::info!(%err, "the client did not answer a permission request; rejected");
            RequestPermissionOutcome::Cancelled
        }
    };
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match selected.option_id.0.as_ref() {
            ONCE => Reply::Once,
            ALWAYS => Reply::Always,
            REJECT_ALWAYS => {
                lock(&shared.rejected).extend(keys);
                Reply::Reject { message: None }
            }
            _ => Reply::Reject { message: None },
        },
        _ => Reply::Reject { message: None },
    }
}

/// What a `reject_always` answer remembers.
fn keys(session: &str, ask: &PermissionAsk) -> Vec<(String, String, String)> {
    ask.patterns.iter().map(|pattern| (session.to_owned(), ask.permission.clone(), pattern.clone())).collect()
}

/// The session the client knows: a subagent's ask is shown in its root session.
async fn root_session(shared: &Shared, id: &str) -> Option<Session> {
    let mut session = shared.engine.runtime.session(id).await.ok()?;
    while let Some(parent) = session.parent_id.clone() {
        session = shared.engine.runtime.session(&parent).await.ok()?;
    }
    Some(session)
}

/// The tool call being asked about, as the client has seen it, with what approving it would do.
async fn tool_call(
    shared: &Shared,
    request: &PendingRequest,
    ask: &PermissionAsk,
    session: &Session,
) -> ToolCallUpdate {
    let directory = PathBuf::from(&session.directory);
    let call = tool_state(shared, request).await;
    let call_id = request.tool.as_ref().map_or(request.id.as_str(), |tool| tool.call_id.as_str());
    let mut fields = match &call {
        Some((tool, state)) => crate::tools::fields(tool, state, &directory),
        None => ToolCallUpdateFields::new().title(format!("{}: {}", ask.permission, ask.patterns.join(", "))),
    };
    // The status stays as the call's own updates report it.
    fields.status = None;
    let planned = call.as_ref().and_then(|(tool, state)| crate::tools::planned_diff(tool, input(state), &directory));
    let content: Option<Vec<ToolCallContent>> = match (planned, ask.metadata.get("diff").and_then(Value::as_str)) {
        (Some(diff), _) => Some(vec![diff.into()]),
        (None, Some(diff)) => Some(vec![ContentBlock::from(format!("```diff\n{diff}\n```")).into()]),
        (None, None) => None,
    };
    ToolCallUpdate::new(call_id.to_owned(), fields.content(content))
}

fn input(state: &ToolState) -> &Value {
    match state {
        ToolState::Pending { input, .. }
        | ToolState::Running { input, .. }
        | ToolState::Completed { input, .. }
        | ToolState::Error { input, .. } => input,
    }
}

/// The asking call's tool and state, from its message.
async fn tool_state(shared: &Shared, request: &PendingRequest) -> Option<(String, ToolState)> {
    let tool = request.tool.clone()?;
    let store = Arc::clone(shared.engine.runtime.store());
    let message =
        tokio::task::spawn_blocking(move || store.read(|r| r.message(&tool.message_id))).await.ok()?.ok()??;
    let call_id = request.tool.as_ref()?.call_id.as_str();
    message.parts.into_iter().find_map(|part| match part.kind {
        PartKind::Tool { call_id: id, tool, state, .. } if id == call_id => Some((tool, state)),
        _ => None,
    })
}
