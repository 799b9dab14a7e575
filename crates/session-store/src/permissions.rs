//! Permission requests (with the effective agent of the turn that issued them), saved approvals, todos.

use crate::types::EventKind;
use rusqlite::OptionalExtension;
use rusqlite::params;
use serde_json::json;

use crate::error::Result;
use crate::error::StoreError;
use crate::id;
use crate::id::IdKind;
use crate::store::Reader;
use crate::store::Tx;
use crate::types::PermissionReply;
use crate::types::PermissionRequest;
use crate::types::SavedApproval;
use crate::types::StoredPermission;
use crate::types::Todo;

impl Tx<'_> {
    /// Records a pending permission request issued during a turn of `agent`.
    pub fn ask_permission(&mut self, request: &PermissionRequest, agent: &str) -> Result<()> {
        let data = serde_json::to_string(request).map_err(StoreError::decode("permission request"))?;
        self.tx.execute(
            "INSERT INTO permission_request (id, session_id, agent, data, reply, time_created) VALUES (?1, ?2, ?3, ?4, NULL, ?5)",
            params![request.id, request.session_id, agent, data, self.now],
        )?;
        self.append_event(&request.session_id, EventKind::PermissionAsked, json!(request))?;
        Ok(())
    }

    /// Answers a pending request. `always` also saves an approval for each of the request's `always`
    /// patterns in `project_id`.
    pub fn reply_permission(&mut self, id: &str, reply: PermissionReply, project_id: &str) -> Result<StoredPermission> {
        let mut stored =
            self.reader().permission(id)?.ok_or_else(|| StoreError::not_found("permission request", id))?;
        if let Some(previous) = stored.reply {
            return Err(StoreError::Conflict(format!(
                "permission request {id} was already answered {}",
                previous.as_str()
            )));
        }
        self.tx.execute(
            "UPDATE permission_request SET reply = ?2, time_replied = ?3 WHERE id = ?1",
            params![id, reply.as_str(), self.now],
        )?;
        if reply == PermissionReply::Always {
            for pattern in &stored.request.always {
                self.save_approval(project_id, &stored.request.permission, pattern)?;
            }
        }
        let session = stored.request.session_id.clone();
        self.append_event(
            &session,
            EventKind::PermissionReplied,
            json!({ "sessionID": session, "requestID": id, "reply": reply }),
        )?;
        stored.reply = Some(reply);
        Ok(stored)
    }

    /// Saves "always allow `action` on `resource`" for a project (idempotent).
    pub fn save_approval(&mut self, project_id: &str, action: &str, resource: &str) -> Result<()> {
        self.tx
            .prepare_cached(
                "INSERT INTO permission_saved (id, project_id, action, resource, time_created) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (project_id, action, resource) DO NOTHING",
            )?
            .execute(params![id::ascending(IdKind::Permission), project_id, action, resource, self.now])?;
        Ok(())
    }

    /// Removes a saved approval.
    pub fn remove_approval(&mut self, id: &str) -> Result<()> {
        match self.tx.execute("DELETE FROM permission_saved WHERE id = ?1", [id])? {
            0 => Err(StoreError::not_found("saved approval", id)),
            _ => Ok(()),
        }
    }

    /// Replaces a session's todo list.
    pub fn set_todos(&mut self, session_id: &str, todos: &[Todo]) -> Result<()> {
        self.tx.execute("DELETE FROM todo WHERE session_id = ?1", [session_id])?;
        for (position, todo) in todos.iter().enumerate() {
            self.tx
                .prepare_cached(
                    "INSERT INTO todo (session_id, position, content, status, priority) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![
                    session_id,
                    crate::events::limit_param(position),
                    todo.content,
                    todo.status,
                    todo.priority
                ])?;
        }
        self.append_event(session_id, EventKind::TodoUpdated, json!({ "sessionID": session_id, "todos": todos }))?;
        Ok(())
    }
}

impl Reader<'_> {
    pub fn permission(&self, id: &str) -> Result<Option<StoredPermission>> {
        let row = self
            .conn
            .prepare_cached("SELECT data, agent, reply, time_created FROM permission_request WHERE id = ?1")?
            .query_row([id], permission_row)
            .optional()?;
        row.map(decode_permission).transpose()
    }

    /// Unanswered permission requests of a session, oldest first.
    pub fn pending_permissions(&self, session_id: &str) -> Result<Vec<StoredPermission>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT data, agent, reply, time_created FROM permission_request
             WHERE session_id = ?1 AND reply IS NULL ORDER BY time_created, id",
        )?;
        let rows = stmt.query_map([session_id], permission_row)?;
        rows.map(|row| decode_permission(row?)).collect()
    }

    /// A project's saved approvals, oldest first.
    pub fn saved_approvals(&self, project_id: &str) -> Result<Vec<SavedApproval>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, project_id, action, resource FROM permission_saved WHERE project_id = ?1 ORDER BY time_created, id",
        )?;
        let rows = stmt.query_map([project_id], |r| {
            Ok(SavedApproval { id: r.get(0)?, project_id: r.get(1)?, action: r.get(2)?, resource: r.get(3)? })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn todos(&self, session_id: &str) -> Result<Vec<Todo>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT content, status, priority FROM todo WHERE session_id = ?1 ORDER BY position")?;
        let rows =
            stmt.query_map([session_id], |r| Ok(Todo { content: r.get(0)?, status: r.get(1)?, priority: r.get(2)? }))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

type PermissionRow = (String, String, Option<String>, i64);

fn permission_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PermissionRow> {
    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
}

fn decode_permission((data, agent, reply, time_created): PermissionRow) -> Result<StoredPermission> {
    let request = serde_json::from_str(&data).map_err(StoreError::decode("permission request"))?;
    let reply = reply
        .map(|r| serde_json::from_value(serde_json::Value::String(r)).map_err(StoreError::decode("permission reply")))
        .transpose()?;
    Ok(StoredPermission { request, agent, reply, time_created })
}
