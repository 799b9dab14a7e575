//! The session store behind the tool registry's service seams: [`StorePending`] keeps permission
//! requests durably (a `permission_request` row and a `permission.asked` event per request, the reply
//! and `permission.replied` when it settles), and [`StoreTodos`] keeps `todowrite` lists (with
//! `todo.updated`), and loads a project's saved `always` approvals for
//! [`Permissions::scoped`](opencode_tool_registry::Permissions::scoped). Both write through the store,
//! so their events reach the runtime's bus (and the HTTP API's `/event`) like every other committed event.
//! Every front end over one store uses these: the HTTP server, and the ACP agent.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;

use opencode_config::PermissionAction;
use opencode_session_store::PermissionReply;
use opencode_session_store::PermissionRequest;
use opencode_session_store::PermissionTool;
use opencode_session_store::Store;
use opencode_tool_registry::PendingKind;
use opencode_tool_registry::PendingRequest;
use opencode_tool_registry::PendingStore;
use opencode_tool_registry::Reply;
use opencode_tool_registry::Rule;
use opencode_tool_registry::tools::todo::Todo;
use opencode_tool_registry::tools::todo::TodoStore;
use serde_json::Value;

/// Pending requests of the tools, durable in the session store.
///
/// Permission requests become store rows (front ends find and answer them there, e.g. the HTTP reply routes); questions
/// have no store table and are kept in memory only. The requests asked by this process are also indexed
/// in memory, which is what [`PendingStore::pending`] lists.
pub struct StorePending {
    store: Arc<Store>,
    /// Requests asked by this process and not settled yet, by id (ids ascend, so oldest first).
    open: Mutex<BTreeMap<String, PendingRequest>>,
}

impl StorePending {
    pub fn new(store: Arc<Store>) -> Self {
        Self { store, open: Mutex::default() }
    }

    fn open(&self) -> MutexGuard<'_, BTreeMap<String, PendingRequest>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl std::fmt::Debug for StorePending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorePending").field("open", &self.open().len()).finish_non_exhaustive()
    }
}

impl PendingStore for StorePending {
    fn insert(&self, request: &PendingRequest) -> Result<(), String> {
        if let PendingKind::Permission(ask) = &request.kind {
            let row = PermissionRequest {
                id: request.id.clone(),
                session_id: request.session_id.clone(),
                permission: ask.permission.clone(),
                patterns: ask.patterns.clone(),
                metadata: Value::Object(ask.metadata.clone()),
                always: ask.always.clone(),
                tool: request
                    .tool
                    .as_ref()
                    .map(|tool| PermissionTool { message_id: tool.message_id.clone(), call_id: tool.call_id.clone() }),
            };
            self.store.write(|tx| tx.ask_permission(&row, &request.agent)).map_err(|err| err.to_string())?;
        }
        self.open().insert(request.id.clone(), request.clone());
        Ok(())
    }

    fn resolve(&self, id: &str, reply: &Reply) -> Result<(), String> {
        let removed = self.open().remove(id);
        if matches!(removed, Some(PendingRequest { kind: PendingKind::Question { .. }, .. })) {
            return Ok(());
        }
        let reply = match reply {
            Reply::Once | Reply::Answer { .. } => PermissionReply::Once,
            Reply::Always => PermissionReply::Always,
            Reply::Reject { .. } => PermissionReply::Reject,
        };
        self.store
            .write(|tx| {
                let reader = tx.reader();
                // The HTTP routes record the user's reply before the waiting call is told: nothing to add.
                let Some(stored) = reader.permission(id)? else { return Ok(()) };
                if stored.reply.is_some() {
                    return Ok(());
                }
                let project = reader.session(&stored.request.session_id)?.map(|s| s.project_id).unwrap_or_default();
                tx.reply_permission(id, reply, &project).map(drop)
            })
            .map_err(|err| err.to_string())
    }

    fn pending(&self, session_id: Option<&str>) -> Vec<PendingRequest> {
        self.open().values().filter(|r| session_id.is_none_or(|id| r.session_id == id)).cloned().collect()
    }

    /// The project's saved approvals (`permission_saved` rows, written when an `always` reply is
    /// stored) as allow rules.
    fn approvals(&self, project: &str) -> Vec<Rule> {
        let saved = self.store.read(|r| r.saved_approvals(project)).unwrap_or_else(|err| {
            tracing::warn!(%err, project, "cannot read the saved approvals; they are asked again");
            Vec::new()
        });
        saved
            .into_iter()
            .map(|approval| Rule::new(approval.action, approval.resource, PermissionAction::Allow))
            .collect()
    }
}

/// `todowrite` lists in the session store.
#[derive(Clone)]
pub struct StoreTodos {
    store: Arc<Store>,
}

impl StoreTodos {
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }
}

impl std::fmt::Debug for StoreTodos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreTodos").finish_non_exhaustive()
    }
}

impl TodoStore for StoreTodos {
    fn get(&self, session_id: &str) -> Vec<Todo> {
        let stored = self.store.read(|r| r.todos(session_id)).unwrap_or_else(|err| {
            tracing::warn!(%err, session.id = %session_id, "cannot read the todo list");
            Vec::new()
        });
        // Both sides spell status and priority the same way; a row written by something else that does
        // not fit the tool's vocabulary is left out rather than failing the call.
        stored
            .iter()
            .filter_map(|todo| serde_json::to_value(todo).ok().and_then(|v| serde_json::from_value(v).ok()))
            .collect()
    }

    fn set(&self, session_id: &str, todos: Vec<Todo>) -> Result<(), String> {
        let rows: Vec<opencode_session_store::Todo> = todos
            .iter()
            .map(|todo| serde_json::to_value(todo).and_then(serde_json::from_value))
            .collect::<Result<_, _>>()
            .map_err(|err| format!("todo does not fit the store: {err}"))?;
        self.store.write(|tx| tx.set_todos(session_id, &rows)).map_err(|err| err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use opencode_session_store::NewSession;
    use opencode_tool_registry::PermissionAsk;
    use opencode_tool_registry::tools::todo::TodoPriority;
    use opencode_tool_registry::tools::todo::TodoStatus;

    use super::*;

    fn store_with_session() -> (tempfile::TempDir, Arc<Store>, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path().join("db.sqlite")).unwrap());
        let session = store
            .write(|tx| {
                tx.upsert_project(&opencode_session_store::Project {
                    id: "global".into(),
                    worktree: "/".into(),
                    vcs: None,
                    name: None,
                    icon: None,
                    commands: None,
                    time: opencode_session_store::ProjectTime { created: 0, updated: 0, initialized: None },
                    sandboxes: Vec::new(),
                })?;
                tx.create_session(NewSession {
                    project_id: "global".into(),
                    directory: "/tmp".into(),
                    ..Default::default()
                })
            })
            .unwrap();
        (dir, store, session.id)
    }

    #[test]
    fn a_permission_request_is_a_store_row_until_it_settles() {
        let (_dir, store, session) = store_with_session();
        let pending = StorePending::new(Arc::clone(&store));
        let ask = PermissionAsk { permission: "bash".into(), patterns: vec!["ls".into()], ..Default::default() };
        let request = PendingRequest {
            id: "per_1".into(),
            session_id: session.clone(),
            agent: "build".into(),
            kind: PendingKind::Permission(ask),
            tool: None,
        };
        assert_eq!(pending.insert(&request), Ok(()));
        assert_eq!(pending.pending(Some(&session)), vec![request]);
        let stored = store.read(|r| r.pending_permissions(&session)).unwrap();
        assert_eq!(
            stored.iter().map(|p| (p.request.id.as_str(), p.agent.as_str())).collect::<Vec<_>>(),
            [("per_1", "build")]
        );
        assert_eq!(pending.resolve("per_1", &Reply::Reject { message: None }), Ok(()));
        assert!(pending.pending(None).is_empty());
        let answered = store.read(|r| r.permission("per_1")).unwrap().and_then(|p| p.reply);
        assert_eq!(answered, Some(PermissionReply::Reject));
        // Settling again (the HTTP route answered first) adds nothing and does not fail.
        assert_eq!(pending.resolve("per_1", &Reply::Once), Ok(()));
    }

    #[test]
    fn todos_round_trip_through_the_store() {
        let (_dir, store, session) = store_with_session();
        let todos = StoreTodos::new(store);
        let list =
            vec![Todo { content: "write tests".into(), status: TodoStatus::InProgress, priority: TodoPriority::High }];
        assert_eq!(todos.set(&session, list.clone()), Ok(()));
        assert_eq!(todos.get(&session), list);
    }
}
