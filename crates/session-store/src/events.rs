//! The per-session durable event log: monotonic sequence numbers from 1, written in the same
//! transaction as the state change each event describes, read back with "events after N".

use rusqlite::params;
use serde_json::Value;

use crate::error::Result;
use crate::error::StoreError;
use crate::store::Reader;
use crate::store::Tx;
use crate::types::Event;
use crate::types::EventKind;

impl Tx<'_> {
    /// Appends an event to `session_id`'s log and returns its sequence number. The store calls this for
    /// every change it makes; the runtime may add its own durable events (step started, retried, ...).
    pub fn append_event(&mut self, session_id: &str, kind: EventKind, data: Value) -> Result<i64> {
        let seq = self.reader().latest_seq(session_id)? + 1;
        let text = serde_json::to_string(&data).map_err(StoreError::decode("event"))?;
        self.tx
            .prepare_cached("INSERT INTO event (session_id, seq, type, data, time) VALUES (?1, ?2, ?3, ?4, ?5)")?
            .execute(params![session_id, seq, kind.as_str(), text, self.now])?;
        self.events.push(Event { session_id: session_id.to_owned(), seq, kind, data, time: self.now });
        Ok(seq)
    }
}

impl Reader<'_> {
    /// The session's latest event sequence number (0 when it has none).
    pub fn latest_seq(&self, session_id: &str) -> Result<i64> {
        Ok(self
            .conn
            .prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM event WHERE session_id = ?1")?
            .query_row([session_id], |r| r.get(0))?)
    }

    /// Up to `limit` events with sequence numbers above `after`, in order. Replay with `after = 0`, then
    /// continue from the last `seq` seen.
    pub fn events_after(&self, session_id: &str, after: i64, limit: usize) -> Result<Vec<Event>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, type, data, time FROM event WHERE session_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![session_id, after, limit_param(limit)], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
        })?;
        let mut events = Vec::new();
        for row in rows {
            let (seq, kind, data, time) = row?;
            let data = serde_json::from_str(&data).map_err(StoreError::decode("event"))?;
            events.push(Event { session_id: session_id.to_owned(), seq, kind: EventKind::parse(&kind), data, time });
        }
        Ok(events)
    }
}

/// A `LIMIT` parameter (SQLite integers are i64).
pub(crate) fn limit_param(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}
