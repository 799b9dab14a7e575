//! Messages and parts: append and update (with the tool state machine enforced), removal, usage and
//! cost accumulation, the transcript in pages, and projected history for a provider turn.
//!
//! Every message has a per-session history position (`seq`, from 1) fixed when it is first written;
//! pages are keyset ranges over it, so loading the newest page costs the same whatever the history size.

use crate::types::EventKind;
use std::collections::BTreeMap;

use rusqlite::OptionalExtension;
use rusqlite::params;
use serde::Serialize;
use serde_json::json;

use crate::error::Result;
use crate::error::StoreError;
use crate::events::limit_param;
use crate::part::Part;
use crate::part::PartKind;
use crate::part::ToolEndTime;
use crate::part::ToolState;
use crate::sessions::TokenDelta;
use crate::store::Reader;
use crate::store::Tx;
use crate::types::MessageInfo;
use crate::types::Tokens;

/// A message with its parts in order (`{info, parts}` on the wire).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageWithParts {
    pub info: MessageInfo,
    pub parts: Vec<Part>,
    /// The message's history position in its session.
    #[serde(skip)]
    pub seq: i64,
}

/// A page of messages in chronological order; `older` is the `before` cursor for the previous page.
#[derive(Debug, Clone, PartialEq)]
pub struct MessagePage {
    pub messages: Vec<MessageWithParts>,
    pub older: Option<i64>,
}

/// The text tool parts left unsettled by a crash are failed with (never re-executed).
pub const INTERRUPTED_TOOL_ERROR: &str = "Tool execution interrupted";

impl Tx<'_> {
    /// Appends a new message at the end of its session's history and returns its position. Fails when the
    /// id exists.
    pub fn append_message(&mut self, info: &MessageInfo) -> Result<i64> {
        if self.reader().message_seq(info.id())?.is_some() {
            return Err(StoreError::Conflict(format!("message {} already exists", info.id())));
        }
        self.upsert_message(info)
    }

    /// Inserts a message (at the end of history) or replaces its info, keeping its position. An
    /// assistant message's cost and tokens changes are added to the session's totals.
    pub fn upsert_message(&mut self, info: &MessageInfo) -> Result<i64> {
        let data = serde_json::to_string(info).map_err(StoreError::decode("message"))?;
        let existing: Option<(i64, String, String)> = self
            .tx
            .prepare_cached("SELECT seq, session_id, data FROM message WHERE id = ?1")?
            .query_row([info.id()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let (seq, old_usage) = match existing {
            Some((seq, session, old)) => {
                if session != info.session_id() {
                    return Err(StoreError::Conflict(format!("message {} belongs to session {session}", info.id())));
                }
                let old: MessageInfo = serde_json::from_str(&old).map_err(StoreError::decode("message"))?;
                if old.role() != info.role() {
                    return Err(StoreError::Conflict(format!("message {} is a {} message", info.id(), old.role())));
                }
                self.tx
                    .prepare_cached("UPDATE message SET data = ?2 WHERE id = ?1")?
                    .execute(params![info.id(), data])?;
                (seq, usage(&old))
            }
            None => {
                let seq = self.next_message_seq(info.session_id())?;
                self.tx
                    .prepare_cached(
                        "INSERT INTO message (id, session_id, seq, role, time_created, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )?
                    .execute(params![info.id(), info.session_id(), seq, info.role(), info.created(), data])?;
                (seq, (0.0, Tokens::default()))
            }
        };
        let (cost, tokens) = usage(info);
        self.add_session_usage(info.session_id(), cost - old_usage.0, &TokenDelta::between(&old_usage.1, &tokens))?;
        self.append_event(info.session_id(), EventKind::MessageUpdated, json!({ "info": info }))?;
        Ok(seq)
    }

    /// Adds one step's usage to an assistant message, and so to its session's totals.
    pub fn add_message_usage(&mut self, message_id: &str, cost: f64, tokens: &Tokens) -> Result<MessageInfo> {
        let mut info =
            self.reader().message_info(message_id)?.ok_or_else(|| StoreError::not_found("message", message_id))?;
        let MessageInfo::Assistant(assistant) = &mut info else {
            return Err(StoreError::Invalid(format!("message {message_id} is not an assistant message")));
        };
        assistant.cost += cost;
        let t = &mut assistant.tokens;
        t.input += tokens.input;
        t.output += tokens.output;
        t.reasoning += tokens.reasoning;
        t.cache.read += tokens.cache.read;
        t.cache.write += tokens.cache.write;
        t.total = match (t.total, tokens.total) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        self.upsert_message(&info)?;
        Ok(info)
    }

    /// Inserts a part (after the message's other parts) or replaces it in place. A tool part's state may
    /// only move forward (`pending → running → completed | error`).
    pub fn upsert_part(&mut self, part: &Part) -> Result<()> {
        let data = serde_json::to_string(part).map_err(StoreError::decode("part"))?;
        let tool_status = match &part.kind {
            PartKind::Tool { state, .. } => Some(state.status()),
            _ => None,
        };
        let existing: Option<(String, Option<String>, String)> = self
            .tx
            .prepare_cached("SELECT message_id, tool_status, data FROM part WHERE id = ?1")?
            .query_row([&part.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        match existing {
            Some((message_id, old_status, old)) => {
                if message_id != part.message_id {
                    return Err(StoreError::Conflict(format!("part {} belongs to message {message_id}", part.id)));
                }
                if old_status.is_some() {
                    check_tool_transition(&old, part)?;
                }
                self.tx
                    .prepare_cached("UPDATE part SET type = ?2, tool_status = ?3, data = ?4 WHERE id = ?1")?
                    .execute(params![part.id, part.kind.type_name(), tool_status, data])?;
            }
            None => {
                let (seq, session) = self
                    .reader()
                    .message_seq_and_session(&part.message_id)?
                    .ok_or_else(|| StoreError::not_found("message", part.message_id.clone()))?;
                if session != part.session_id {
                    return Err(StoreError::Conflict(format!(
                        "message {} belongs to session {session}",
                        part.message_id
                    )));
                }
                self.tx
                    .prepare_cached(
                        "INSERT INTO part (id, message_id, session_id, message_seq, position, type, tool_status, data)
                         VALUES (?1, ?2, ?3, ?4,
                                 (SELECT COALESCE(MAX(position) + 1, 0) FROM part WHERE message_id = ?2), ?5, ?6, ?7)",
                    )?
                    .execute(params![
                        part.id,
                        part.message_id,
                        part.session_id,
                        seq,
                        part.kind.type_name(),
                        tool_status,
                        data
                    ])?;
            }
        }
        self.append_event(&part.session_id, EventKind::PartUpdated, json!({ "part": part }))?;
        Ok(())
    }

    /// Removes one part.
    pub fn remove_part(&mut self, part_id: &str) -> Result<()> {
        let row: Option<(String, String)> = self
            .tx
            .prepare_cached("SELECT session_id, message_id FROM part WHERE id = ?1")?
            .query_row([part_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let (session, message) = row.ok_or_else(|| StoreError::not_found("part", part_id))?;
        self.tx.execute("DELETE FROM part WHERE id = ?1", [part_id])?;
        self.append_event(
            &session,
            EventKind::PartRemoved,
            json!({ "sessionID": session, "messageID": message, "partID": part_id }),
        )?;
        Ok(())
    }

    /// Removes a message with its parts; its usage leaves the session's totals.
    pub fn remove_message(&mut self, message_id: &str) -> Result<()> {
        let info =
            self.reader().message_info(message_id)?.ok_or_else(|| StoreError::not_found("message", message_id))?;
        let (cost, tokens) = usage(&info);
        self.tx.execute("DELETE FROM message WHERE id = ?1", [message_id])?;
        let session = info.session_id();
        self.add_session_usage(session, -cost, &TokenDelta::between(&tokens, &Tokens::default()))?;
        self.append_event(
            session,
            EventKind::MessageRemoved,
            json!({ "sessionID": session, "messageID": message_id }),
        )?;
        Ok(())
    }

    /// Fails every tool part of the session still `pending` or `running` (left by a crashed process) with
    /// [`INTERRUPTED_TOOL_ERROR`]; their side effects are never replayed. Returns the updated parts.
    pub fn fail_interrupted_tools(&mut self, session_id: &str) -> Result<Vec<Part>> {
        let rows: Vec<String> = self
            .tx
            .prepare_cached(
                "SELECT data FROM part WHERE session_id = ?1 AND tool_status IN ('pending', 'running')
                 ORDER BY message_seq, position",
            )?
            .query_map([session_id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut failed = Vec::with_capacity(rows.len());
        for data in rows {
            let mut part: Part = serde_json::from_str(&data).map_err(StoreError::decode("part"))?;
            if let PartKind::Tool { state, .. } = &mut part.kind {
                let start = match state {
                    ToolState::Running { time, .. } => time.start,
                    _ => self.now,
                };
                *state = ToolState::Error {
                    input: state.input().clone(),
                    error: INTERRUPTED_TOOL_ERROR.to_owned(),
                    metadata: None,
                    time: ToolEndTime { start, end: self.now, compacted: None },
                };
            }
            self.upsert_part(&part)?;
            failed.push(part);
        }
        Ok(failed)
    }

    fn next_message_seq(&self, session_id: &str) -> Result<i64> {
        let exists: Option<i64> = self
            .tx
            .prepare_cached("SELECT 1 FROM session WHERE id = ?1")?
            .query_row([session_id], |r| r.get(0))
            .optional()?;
        if exists.is_none() {
            return Err(StoreError::not_found("session", session_id));
        }
        Ok(self
            .tx
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM message WHERE session_id = ?1")?
            .query_row([session_id], |r| r.get(0))?)
    }
}

impl Reader<'_> {
    /// A message with its parts.
    pub fn message(&self, message_id: &str) -> Result<Option<MessageWithParts>> {
        let Some((seq, session)) = self.message_seq_and_session(message_id)? else { return Ok(None) };
        Ok(self.messages_between(&session, seq, seq)?.into_iter().next())
    }

    /// A message's info without its parts.
    pub fn message_info(&self, message_id: &str) -> Result<Option<MessageInfo>> {
        let data: Option<String> = self
            .conn
            .prepare_cached("SELECT data FROM message WHERE id = ?1")?
            .query_row([message_id], |r| r.get(0))
            .optional()?;
        data.map(|d| serde_json::from_str(&d).map_err(StoreError::decode("message"))).transpose()
    }

    /// The newest `limit` messages before history position `before` (all when `None`), every role, in
    /// chronological order: the transcript, paged backwards.
    pub fn messages(&self, session_id: &str, before: Option<i64>, limit: usize) -> Result<MessagePage> {
        let projection = Projection { history_from: 0, system_from: 0, until: i64::MAX, cut: None };
        self.page(session_id, &projection, before, limit)
    }

    /// The session's newest assistant message (among its last 20 messages): a finished run's answer.
    pub fn last_assistant(&self, session_id: &str) -> Result<Option<MessageWithParts>> {
        let page = self.messages(session_id, None, 20)?;
        Ok(page.messages.into_iter().rev().find(|m| matches!(m.info, MessageInfo::Assistant(_))))
    }

    /// The work-tree snapshot the session's first step started from, or (with `after`) the first
    /// step after message `after` (the turn answering that user message).
    pub fn first_step_snapshot(&self, session_id: &str, after: Option<&str>) -> Result<Option<String>> {
        let from = match after {
            Some(message) => self.message_seq(message)?.unwrap_or(i64::MAX),
            None => -1,
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT data FROM part WHERE session_id = ?1 AND message_seq > ?2 AND type = 'step-start' \
             ORDER BY message_seq, position",
        )?;
        let rows = stmt.query_map(rusqlite::params![session_id, from], |r| r.get::<_, String>(0))?;
        for data in rows {
            let data: serde_json::Value = serde_json::from_str(&data?).map_err(StoreError::decode("part"))?;
            if let Some(snapshot) = data["snapshot"].as_str() {
                return Ok(Some(snapshot.to_owned()));
            }
        }
        Ok(None)
    }

    /// The `patch` parts of the session from message `from` on, oldest first: `(tree before, files)`.
    pub fn patches_from(&self, session_id: &str, from: &str) -> Result<Vec<(String, Vec<String>)>> {
        let Some(seq) = self.message_seq(from)? else { return Ok(Vec::new()) };
        let mut stmt = self.conn.prepare_cached(
            "SELECT data FROM part WHERE session_id = ?1 AND message_seq >= ?2 AND type = 'patch' \
             ORDER BY message_seq, position",
        )?;
        let rows = stmt.query_map(rusqlite::params![session_id, seq], |r| r.get::<_, String>(0))?;
        let mut patches = Vec::new();
        for data in rows {
            let data: serde_json::Value = serde_json::from_str(&data?).map_err(StoreError::decode("part"))?;
            let files = data["files"].as_array().into_iter().flatten().filter_map(|f| f.as_str().map(str::to_owned));
            patches.push((data["hash"].as_str().unwrap_or_default().to_owned(), files.collect()));
        }
        Ok(patches)
    }

    /// The projected history a provider turn sees, paged backwards like [`Reader::messages`]: messages from
    /// the active epoch's compaction boundary on, without Mid-Conversation System Messages of earlier
    /// epochs, and without messages hidden by a staged revert.
    pub fn history(&self, session_id: &str, before: Option<i64>, limit: usize) -> Result<MessagePage> {
        let projection = self.projection(session_id)?;
        self.page(session_id, &projection, before, limit)
    }

    /// The whole projected history (every page of [`Reader::history`]).
    pub fn full_history(&self, session_id: &str) -> Result<Vec<MessageWithParts>> {
        let projection = self.projection(session_id)?;
        let mut messages = Vec::new();
        let mut before = None;
        loop {
            let mut page = self.page(session_id, &projection, before, 500)?;
            page.messages.append(&mut messages);
            messages = page.messages;
            match page.older {
                Some(older) => before = Some(older),
                None => return Ok(messages),
            }
        }
    }

    pub(crate) fn message_seq(&self, message_id: &str) -> Result<Option<i64>> {
        Ok(self.message_seq_and_session(message_id)?.map(|(seq, _)| seq))
    }

    pub(crate) fn message_session(&self, message_id: &str) -> Result<Option<String>> {
        Ok(self.message_seq_and_session(message_id)?.map(|(_, session)| session))
    }

    pub(crate) fn message_seq_and_session(&self, message_id: &str) -> Result<Option<(i64, String)>> {
        Ok(self
            .conn
            .prepare_cached("SELECT seq, session_id FROM message WHERE id = ?1")?
            .query_row([message_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?)
    }

    pub(crate) fn part_position(&self, part_id: &str) -> Result<Option<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT position FROM part WHERE id = ?1")?
            .query_row([part_id], |r| r.get(0))
            .optional()?)
    }

    /// Messages with positions in `first..=last`, with parts, in order.
    pub(crate) fn messages_between(&self, session_id: &str, first: i64, last: i64) -> Result<Vec<MessageWithParts>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, data FROM message WHERE session_id = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
        )?;
        let rows: Vec<(i64, String)> = stmt
            .query_map(params![session_id, first, last], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        self.with_parts(session_id, rows, None)
    }

    fn projection(&self, session_id: &str) -> Result<Projection> {
        let (history_from, system_from) =
            self.active_epoch(session_id)?.map_or((0, 0), |epoch| (epoch.history_from, epoch.begins_at));
        let revert = self.session(session_id)?.ok_or_else(|| StoreError::not_found("session", session_id))?.revert;
        let (until, cut) = match revert {
            None => (i64::MAX, None),
            Some(revert) => {
                let seq = self.message_seq(&revert.message_id)?.unwrap_or(i64::MAX);
                match revert.part_id.map(|p| self.part_position(&p)).transpose()?.flatten() {
                    Some(position) => (seq.saturating_add(1), Some((seq, position))),
                    None => (seq, None),
                }
            }
        };
        Ok(Projection { history_from, system_from, until, cut })
    }

    fn page(&self, session_id: &str, p: &Projection, before: Option<i64>, limit: usize) -> Result<MessagePage> {
        let until = before.map_or(p.until, |b| b.min(p.until));
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, data FROM message WHERE session_id = ?1 AND seq >= ?2 AND seq < ?3
             AND (role <> 'system' OR seq >= ?4) ORDER BY seq DESC LIMIT ?5",
        )?;
        let limit = limit.max(1);
        let mut rows: Vec<(i64, String)> = stmt
            .query_map(params![session_id, p.history_from, until, p.system_from, limit_param(limit + 1)], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        rows.reverse();
        let older = if more { rows.first().map(|(seq, _)| *seq) } else { None };
        let messages = self.with_parts(session_id, rows, p.cut)?;
        Ok(MessagePage { messages, older })
    }

    /// Decodes message rows (ascending) and attaches their parts with one range query. `cut` hides the
    /// parts of message `cut.0` from position `cut.1` on.
    fn with_parts(
        &self,
        session_id: &str,
        rows: Vec<(i64, String)>,
        cut: Option<(i64, i64)>,
    ) -> Result<Vec<MessageWithParts>> {
        let (Some(first), Some(last)) = (rows.first().map(|r| r.0), rows.last().map(|r| r.0)) else {
            return Ok(Vec::new());
        };
        let mut parts: BTreeMap<i64, Vec<Part>> = BTreeMap::new();
        let mut stmt = self.conn.prepare_cached(
            "SELECT message_seq, position, data FROM part WHERE session_id = ?1 AND message_seq BETWEEN ?2 AND ?3
             ORDER BY message_seq, position",
        )?;
        let part_rows = stmt.query_map(params![session_id, first, last], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
        })?;
        for row in part_rows {
            let (seq, position, data) = row?;
            if cut.is_some_and(|(cut_seq, cut_pos)| seq == cut_seq && position >= cut_pos) {
                continue;
            }
            let part: Part = serde_json::from_str(&data).map_err(StoreError::decode("part"))?;
            parts.entry(seq).or_default().push(part);
        }
        rows.into_iter()
            .map(|(seq, data)| {
                let info = serde_json::from_str(&data).map_err(StoreError::decode("message"))?;
                Ok(MessageWithParts { info, parts: parts.remove(&seq).unwrap_or_default(), seq })
            })
            .collect()
    }
}

/// Which history positions a page may show.
struct Projection {
    /// The compaction boundary: nothing earlier.
    history_from: i64,
    /// System messages only from here (the active epoch's start).
    system_from: i64,
    /// Nothing at or after this position (a staged revert).
    until: i64,
    /// (message position, part position): hide that message's parts from this part on.
    cut: Option<(i64, i64)>,
}

fn usage(info: &MessageInfo) -> (f64, Tokens) {
    match info {
        MessageInfo::Assistant(m) => (m.cost, m.tokens),
        _ => (0.0, Tokens::default()),
    }
}

fn check_tool_transition(old: &str, new: &Part) -> Result<()> {
    let old: Part = serde_json::from_str(old).map_err(StoreError::decode("part"))?;
    let (PartKind::Tool { state: before, .. }, PartKind::Tool { state: after, .. }) = (&old.kind, &new.kind) else {
        return Err(StoreError::Conflict(format!("part {} is a tool part and stays one", new.id)));
    };
    if before.allows(after) {
        Ok(())
    } else {
        Err(StoreError::Conflict(format!(
            "tool part {} cannot go from {} to {}",
            new.id,
            before.status(),
            after.status()
        )))
    }
}
