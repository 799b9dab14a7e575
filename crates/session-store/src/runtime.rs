//! The session runtime's durable records: admitted input (`session_input`) with exact-retry
//! reconciliation and promotion into history, and Context Epochs with Mid-Conversation System Messages.

use crate::types::EventKind;
use rusqlite::OptionalExtension;
use rusqlite::params;
use serde_json::Value;
use serde_json::json;

use crate::error::Result;
use crate::error::StoreError;
use crate::id;
use crate::id::IdKind;
use crate::part::Part;
use crate::store::Reader;
use crate::store::Tx;
use crate::types::Admission;
use crate::types::ContextEpoch;
use crate::types::CreatedTime;
use crate::types::Delivery;
use crate::types::MessageInfo;
use crate::types::NewEpoch;
use crate::types::SessionInput;
use crate::types::SystemMessage;

impl Tx<'_> {
    /// Admits a prompt durably (before any execution is scheduled). Reusing an id is an exact retry only
    /// when session, prompt and delivery all match: the stored admission is returned and nothing is
    /// written; any difference is a [`StoreError::Conflict`].
    pub fn admit_input(
        &mut self,
        session_id: &str,
        id: Option<String>,
        prompt: Value,
        delivery: Delivery,
    ) -> Result<Admission> {
        if let Some(id) = &id
            && let Some(existing) = self.reader().input(id)?
        {
            if existing.session_id == session_id && existing.prompt == prompt && existing.delivery == delivery {
                return Ok(Admission { input: existing, retried: true });
            }
            return Err(StoreError::Conflict(format!(
                "prompt {id} was already admitted with a different session, prompt or delivery"
            )));
        }
        let id = id.unwrap_or_else(|| id::ascending(IdKind::Message));
        if self.reader().message_seq(&id)?.is_some() {
            return Err(StoreError::Conflict(format!("message {id} already exists")));
        }
        if self.reader().session(session_id)?.is_none() {
            return Err(StoreError::not_found("session", session_id));
        }
        let mut input = SessionInput {
            id,
            session_id: session_id.to_owned(),
            prompt,
            delivery,
            admitted_seq: 0,
            promoted_seq: None,
            time_created: self.now,
        };
        input.admitted_seq = self.reader().latest_seq(session_id)? + 1;
        self.append_event(session_id, EventKind::PromptAdmitted, json!(input))?;
        let prompt = serde_json::to_string(&input.prompt).map_err(StoreError::decode("prompt"))?;
        self.tx
            .prepare_cached(
                "INSERT INTO session_input (id, session_id, prompt, delivery, admitted_seq, promoted_seq, time_created)
                 VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6)",
            )?
            .execute(params![input.id, session_id, prompt, delivery.as_str(), input.admitted_seq, self.now])?;
        Ok(Admission { input, retried: false })
    }

    /// Promotes an admitted prompt into history: its user message (whose id becomes the prompt's id) and
    /// parts are appended and the input marked promoted, all in this transaction. Returns the promotion's
    /// event sequence.
    pub fn promote_input(&mut self, input_id: &str, mut message: MessageInfo, parts: Vec<Part>) -> Result<i64> {
        let input = self.reader().input(input_id)?.ok_or_else(|| StoreError::not_found("admitted prompt", input_id))?;
        if input.promoted_seq.is_some() {
            return Err(StoreError::Conflict(format!("prompt {input_id} was already promoted")));
        }
        if !matches!(message, MessageInfo::User(_)) {
            return Err(StoreError::Invalid("a promoted prompt becomes a user message".to_owned()));
        }
        message.set_ids(input.id.clone(), input.session_id.clone());
        self.append_message(&message)?;
        for part in parts {
            self.upsert_part(&Part { session_id: input.session_id.clone(), message_id: input.id.clone(), ..part })?;
        }
        let seq = self.append_event(
            &input.session_id,
            EventKind::Prompted,
            json!({ "sessionID": input.session_id, "messageID": input.id, "delivery": input.delivery }),
        )?;
        self.tx.execute("UPDATE session_input SET promoted_seq = ?2 WHERE id = ?1", params![input_id, seq])?;
        Ok(seq)
    }

    /// Starts a new Context Epoch (first turn, compaction, model/provider or agent switch); the previous
    /// one ends. The epoch begins at the next history position.
    pub fn start_epoch(&mut self, session_id: &str, new: NewEpoch) -> Result<ContextEpoch> {
        if self.reader().session(session_id)?.is_none() {
            return Err(StoreError::not_found("session", session_id));
        }
        let previous = self.reader().active_epoch(session_id)?;
        let history_from = match &new.history_from_message {
            Some(message) => {
                self.reader().message_seq(message)?.ok_or_else(|| StoreError::not_found("message", message))?
            }
            None => previous.as_ref().map_or(0, |p| p.history_from),
        };
        let number: i64 = self
            .tx
            .prepare_cached("SELECT COALESCE(MAX(epoch), 0) + 1 FROM context_epoch WHERE session_id = ?1")?
            .query_row([session_id], |r| r.get(0))?;
        let begins_at: i64 = self
            .tx
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM message WHERE session_id = ?1")?
            .query_row([session_id], |r| r.get(0))?;
        self.end_epoch(session_id)?;
        let epoch = ContextEpoch {
            session_id: session_id.to_owned(),
            epoch: number,
            baseline: new.baseline,
            baseline_parts: new.baseline_parts,
            snapshot: new.snapshot,
            agent: new.agent,
            begins_at,
            history_from,
            time_created: self.now,
        };
        let parts = serde_json::to_string(&epoch.baseline_parts).map_err(StoreError::decode("baseline parts"))?;
        let snapshot = serde_json::to_string(&epoch.snapshot).map_err(StoreError::decode("context snapshot"))?;
        self.tx.execute(
            "INSERT INTO context_epoch (session_id, epoch, baseline, baseline_parts, snapshot, agent, begins_at,
             history_from, time_created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                session_id,
                number,
                epoch.baseline,
                parts,
                snapshot,
                epoch.agent,
                begins_at,
                history_from,
                self.now
            ],
        )?;
        Ok(epoch)
    }

    /// Ends the active epoch without a successor (moving a session): the next turn must render a new baseline.
    pub fn end_epoch(&mut self, session_id: &str) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE context_epoch SET time_ended = ?2 WHERE session_id = ?1 AND time_ended IS NULL")?
            .execute(params![session_id, self.now])?;
        Ok(())
    }

    /// Admits one Mid-Conversation System Message with the exact combined `text` sent to the model and
    /// advances the active epoch's snapshot to `snapshot`, in this transaction. `epoch` fences the write:
    /// if another epoch became active meanwhile, nothing is written and a conflict is returned.
    pub fn admit_system_message(
        &mut self,
        session_id: &str,
        epoch: i64,
        text: &str,
        snapshot: &Value,
    ) -> Result<SystemMessage> {
        let active = self.reader().active_epoch(session_id)?;
        if active.as_ref().map(|a| a.epoch) != Some(epoch) {
            return Err(StoreError::Conflict(format!(
                "context epoch {epoch} of session {session_id} is no longer active"
            )));
        }
        let message = SystemMessage {
            id: id::ascending(IdKind::Message),
            session_id: session_id.to_owned(),
            text: text.to_owned(),
            time: CreatedTime { created: self.now },
        };
        self.append_message(&MessageInfo::System(message.clone()))?;
        let snapshot = serde_json::to_string(snapshot).map_err(StoreError::decode("context snapshot"))?;
        self.tx.execute(
            "UPDATE context_epoch SET snapshot = ?3 WHERE session_id = ?1 AND epoch = ?2",
            params![session_id, epoch, snapshot],
        )?;
        self.append_event(
            session_id,
            EventKind::ContextUpdated,
            json!({ "sessionID": session_id, "messageID": message.id, "text": text }),
        )?;
        Ok(message)
    }
}

impl Reader<'_> {
    /// An admitted prompt by id.
    pub fn input(&self, id: &str) -> Result<Option<SessionInput>> {
        let sql = format!("SELECT {INPUT_COLUMNS} FROM session_input WHERE id = ?1");
        let row = self.conn.prepare_cached(&sql)?.query_row([id], input_row).optional()?;
        row.map(InputRow::decode).transpose()
    }

    /// Admitted prompts not yet promoted, oldest first; `delivery` filters.
    pub fn pending_inputs(&self, session_id: &str, delivery: Option<Delivery>) -> Result<Vec<SessionInput>> {
        let sql = format!(
            "SELECT {INPUT_COLUMNS} FROM session_input WHERE session_id = ?1 AND promoted_seq IS NULL
             AND (?2 IS NULL OR delivery = ?2) ORDER BY admitted_seq"
        );
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params![session_id, delivery.map(Delivery::as_str)], input_row)?;
        rows.map(|row| row?.decode()).collect()
    }

    /// The session's active Context Epoch, if any.
    pub fn active_epoch(&self, session_id: &str) -> Result<Option<ContextEpoch>> {
        let row = self
            .conn
            .prepare_cached(
                "SELECT epoch, baseline, baseline_parts, snapshot, agent, begins_at, history_from, time_created
                 FROM context_epoch WHERE session_id = ?1 AND time_ended IS NULL ORDER BY epoch DESC LIMIT 1",
            )?
            .query_row([session_id], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                ))
            })
            .optional()?;
        let Some((epoch, baseline, parts, snapshot, agent, begins_at, history_from, time_created)) = row else {
            return Ok(None);
        };
        Ok(Some(ContextEpoch {
            session_id: session_id.to_owned(),
            epoch,
            baseline,
            baseline_parts: serde_json::from_str(&parts).map_err(StoreError::decode("baseline parts"))?,
            snapshot: serde_json::from_str(&snapshot).map_err(StoreError::decode("context snapshot"))?,
            agent,
            begins_at,
            history_from,
            time_created,
        }))
    }
}

const INPUT_COLUMNS: &str = "id, session_id, prompt, delivery, admitted_seq, promoted_seq, time_created";

struct InputRow {
    id: String,
    session_id: String,
    prompt: String,
    delivery: String,
    admitted_seq: i64,
    promoted_seq: Option<i64>,
    time_created: i64,
}

fn input_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<InputRow> {
    Ok(InputRow {
        id: r.get(0)?,
        session_id: r.get(1)?,
        prompt: r.get(2)?,
        delivery: r.get(3)?,
        admitted_seq: r.get(4)?,
        promoted_seq: r.get(5)?,
        time_created: r.get(6)?,
    })
}

impl InputRow {
    fn decode(self) -> Result<SessionInput> {
        let delivery = Delivery::parse(&self.delivery)
            .ok_or_else(|| StoreError::Invalid(format!("stored delivery {:?} is unknown", self.delivery)))?;
        Ok(SessionInput {
            id: self.id,
            session_id: self.session_id,
            prompt: serde_json::from_str(&self.prompt).map_err(StoreError::decode("prompt"))?,
            delivery,
            admitted_seq: self.admitted_seq,
            promoted_seq: self.promoted_seq,
            time_created: self.time_created,
        })
    }
}
