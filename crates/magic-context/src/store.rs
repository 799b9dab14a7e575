//! `context.db`: Magic Context's own SQLite database. Every decision a later pass must replay
//! (tags, drops, the rendered m[0]/m[1] bytes and their watermarks) is written here before the
//! pass answers, so a restarted process replays the same bytes.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::OptionalExtension;
use rusqlite::Transaction;
use rusqlite::params;

use crate::error::Error;
use crate::error::Result;
use crate::historian;
use crate::state::Meta;
use crate::state::SessionState;
use crate::state::Tag;
use crate::state::TagKind;

/// Schema versions, applied in order; the newest is what this build understands.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "initial schema", SCHEMA_V1),
    (2, "compartment importance", "ALTER TABLE compartments ADD COLUMN importance INTEGER NOT NULL DEFAULT 50;"),
    (3, "compartment versions, merge depth, side-model calls", SCHEMA_V3),
];

/// Rows written before version 3 keep `p2`..`p4` NULL: their versions are derived from `content`.
const SCHEMA_V3: &str = "
ALTER TABLE compartments ADD COLUMN p2 TEXT;
ALTER TABLE compartments ADD COLUMN p3 TEXT;
ALTER TABLE compartments ADD COLUMN p4 TEXT;
ALTER TABLE compartments ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
CREATE TABLE side_calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    purpose TEXT NOT NULL,
    model TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cost REAL NOT NULL,
    outcome TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
CREATE INDEX side_calls_session ON side_calls (session_id);
";

const SCHEMA_V1: &str = "
CREATE TABLE session_meta (
    session_id TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    model_key TEXT NOT NULL DEFAULT '',
    last_request_ms INTEGER,
    boundary INTEGER NOT NULL DEFAULT 0,
    m0 TEXT NOT NULL DEFAULT '',
    m1 TEXT NOT NULL DEFAULT '',
    m0_seq INTEGER NOT NULL DEFAULT 0,
    m1_seq INTEGER NOT NULL DEFAULT 0,
    m0_memory_id INTEGER NOT NULL DEFAULT 0,
    m1_memory_id INTEGER NOT NULL DEFAULT 0,
    memory_epoch INTEGER NOT NULL DEFAULT 0,
    flush_pending INTEGER NOT NULL DEFAULT 0,
    passes INTEGER NOT NULL DEFAULT 0,
    last_usage_tokens INTEGER NOT NULL DEFAULT 0,
    window_tokens INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE raw_messages (
    session_id TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    role TEXT NOT NULL,
    fingerprint INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    first_tag INTEGER NOT NULL,
    tag_count INTEGER NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (session_id, ordinal)
);
CREATE TABLE tags (
    session_id TEXT NOT NULL,
    tag_number INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    part INTEGER NOT NULL,
    type TEXT NOT NULL,
    tool_name TEXT NOT NULL DEFAULT '',
    dedup_key INTEGER,
    token_count INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    PRIMARY KEY (session_id, tag_number)
);
CREATE TABLE pending_ops (
    session_id TEXT NOT NULL,
    tag_number INTEGER NOT NULL,
    operation TEXT NOT NULL DEFAULT 'drop',
    queued_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, tag_number)
);
CREATE TABLE compartments (
    session_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    start_ordinal INTEGER NOT NULL,
    end_ordinal INTEGER NOT NULL,
    title TEXT NOT NULL,
    content TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, sequence)
);
CREATE TABLE memories (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    project_path TEXT NOT NULL,
    category TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    created_at INTEGER NOT NULL,
    UNIQUE (project_path, category, content)
);
CREATE TABLE project_state (
    project_path TEXT PRIMARY KEY,
    memory_epoch INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE notes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    content TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    created_at INTEGER NOT NULL
);
CREATE VIRTUAL TABLE message_history_fts USING fts5(
    content, session_id UNINDEXED, ordinal UNINDEXED, tokenize = 'porter unicode61'
);
CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, category UNINDEXED, memory_id UNINDEXED, project_path UNINDEXED, tokenize = 'porter unicode61'
);
CREATE TABLE transform_decisions (
    session_id TEXT NOT NULL,
    pass INTEGER NOT NULL,
    decision TEXT NOT NULL,
    materialized TEXT NOT NULL,
    reason TEXT NOT NULL,
    usage_tokens INTEGER NOT NULL,
    dropped_count INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, pass)
);
";

/// One raw message's durable row (its mark plus the text the historian and search read).
pub struct RawRow<'a> {
    pub ordinal: usize,
    pub role: &'a str,
    pub content: String,
}

/// A pass's record for bust attribution.
pub struct DecisionRow<'a> {
    pub pass: u64,
    pub decision: &'a str,
    pub materialized: &'a str,
    pub reason: &'a str,
    pub usage_tokens: u64,
    pub dropped_count: usize,
    pub at_ms: u64,
}

/// A compartment: a contiguous range of raw messages summarised into one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compartment {
    pub sequence: u32,
    /// First raw ordinal covered.
    pub start: usize,
    /// One past the last raw ordinal covered.
    pub end: usize,
    pub title: String,
    pub versions: Versions,
    /// 1-100, how slowly it fades (50 when nobody judged it: the digest).
    pub importance: u8,
    /// How many compressor merges made it (0: as the historian wrote it).
    pub depth: u8,
}

/// A compartment's text at the four levels of detail the decay curve picks from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Versions {
    /// p1: everything worth keeping, the user's words verbatim.
    pub full: String,
    /// p2: condensed.
    pub condensed: String,
    /// p3: the requests and their outcome, a few lines.
    pub outcome: String,
    /// p4: anchors only (the files and names it touched); may be empty.
    pub anchor: String,
}

/// A session's side-model calls, summed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SideTotals {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost: f64,
}

/// One request a plugin made on the small model for a session.
#[derive(Debug, Clone, PartialEq)]
pub struct SideCall {
    pub purpose: String,
    /// `provider/model`.
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost: f64,
    /// `used`, or why the answer was not (then the digest stood in).
    pub outcome: String,
}

/// A project memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    pub id: i64,
    pub category: String,
    pub content: String,
}

/// One `ctx_search` hit.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub source: &'static str,
    /// The raw ordinal (messages) or memory id.
    pub reference: i64,
    pub text: String,
}

/// The open database.
pub struct Store {
    conn: Connection,
}

impl Store {
    /// Opens (creating and migrating) `context.db` at `path`.
    pub fn open(path: &Path) -> Result<Self> {
        let shown = path.display().to_string();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|err| Error::Open {
                path: shown.clone(),
                source: rusqlite::Error::InvalidPath(format!("{}: {err}", parent.display()).into()),
            })?;
        }
        let conn = Connection::open(path).map_err(|source| Error::Open { path: shown.clone(), source })?;
        Self::init(conn).map_err(|err| match err {
            Error::Sql(source) => Error::Open { path: shown, source },
            other => other,
        })
    }

    /// An in-memory database (tests, benchmarks).
    pub fn in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Self> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // With WAL, NORMAL survives a process crash (what restarts need) without an fsync per pass.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "busy_timeout", 5000)?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)",
        )?;
        let mut store = Self { conn };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<()> {
        let current: i64 =
            self.conn.query_row("SELECT COALESCE(MAX(version), 0) FROM schema_migrations", [], |row| row.get(0))?;
        let newest = MIGRATIONS.last().map_or(0, |(version, _, _)| *version);
        if current > newest {
            return Err(Error::Corrupt(format!(
                "schema version {current} is newer than this build understands ({newest}); upgrade opencode"
            )));
        }
        for (version, description, sql) in MIGRATIONS.iter().filter(|(version, _, _)| *version > current) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?1, ?2, strftime('%s','now'))",
                params![version, description],
            )?;
            tx.commit()?;
        }
        Ok(())
    }

    /// The session's durable state, when it has any.
    pub fn load_session(&self, session_id: &str) -> Result<Option<SessionState>> {
        let Some((project, meta)) = self.load_meta(session_id)? else { return Ok(None) };
        let mut state = SessionState::new(session_id, &project);
        state.meta = meta;
        let mut marks = self.conn.prepare(
            "SELECT fingerprint, tokens, first_tag, tag_count, role FROM raw_messages WHERE session_id = ?1 ORDER BY ordinal",
        )?;
        let rows = marks.query_map([session_id], |row| {
            Ok(crate::state::MessageMark {
                fingerprint: row.get::<_, i64>(0)? as u64,
                tokens: row.get::<_, i64>(1)? as u64,
                first_tag: row.get(2)?,
                tag_count: row.get(3)?,
                user_turn: row.get::<_, String>(4)? == "user",
            })
        })?;
        for mark in rows {
            state.marks.push(mark?);
        }
        state.tags = self.load_tags(session_id)?;
        let mut pending = self.conn.prepare("SELECT tag_number FROM pending_ops WHERE session_id = ?1")?;
        for tag in pending.query_map([session_id], |row| row.get::<_, u32>(0))? {
            state.pending.insert(tag?);
        }
        Ok(Some(state))
    }

    fn load_meta(&self, session_id: &str) -> Result<Option<(String, Meta)>> {
        let sql = "SELECT project, model_key, last_request_ms, boundary, m0, m1, m0_seq, m1_seq, m0_memory_id,
                   m1_memory_id, memory_epoch, flush_pending, passes, last_usage_tokens, window_tokens
                   FROM session_meta WHERE session_id = ?1";
        let found = self
            .conn
            .query_row(sql, [session_id], |row| {
                let meta = Meta {
                    model_key: row.get(1)?,
                    last_request_ms: row.get::<_, Option<i64>>(2)?.map(|ms| ms as u64),
                    boundary: row.get::<_, i64>(3)? as usize,
                    m0: row.get(4)?,
                    m1: row.get(5)?,
                    m0_seq: row.get(6)?,
                    m1_seq: row.get(7)?,
                    m0_memory_id: row.get(8)?,
                    m1_memory_id: row.get(9)?,
                    memory_epoch: row.get(10)?,
                    flush_pending: row.get(11)?,
                    passes: row.get::<_, i64>(12)? as u64,
                    last_usage_tokens: row.get::<_, i64>(13)? as u64,
                    window: row.get::<_, i64>(14)? as u64,
                };
                Ok((row.get::<_, String>(0)?, meta))
            })
            .optional()?;
        Ok(found)
    }

    fn load_tags(&self, session_id: &str) -> Result<Vec<Tag>> {
        let mut statement = self.conn.prepare(
            "SELECT tag_number, ordinal, part, type, tool_name, dedup_key, token_count, status
             FROM tags WHERE session_id = ?1 ORDER BY tag_number",
        )?;
        let rows = statement.query_map([session_id], |row| {
            Ok((
                row.get::<_, u32>(0)?,
                Tag {
                    ordinal: row.get::<_, i64>(1)? as usize,
                    part: row.get::<_, i64>(2)? as usize,
                    kind: if row.get::<_, String>(3)? == "tool" { TagKind::Tool } else { TagKind::Message },
                    tool: row.get(4)?,
                    dedup: row.get::<_, Option<i64>>(5)?.map(|key| key as u64),
                    tokens: row.get::<_, i64>(6)? as u64,
                    dropped: row.get::<_, String>(7)? == "dropped",
                },
            ))
        })?;
        let mut tags = Vec::new();
        for row in rows {
            let (number, tag) = row?;
            if number as usize != tags.len() + 1 {
                return Err(Error::Corrupt(format!("session {session_id}: tag {number} out of sequence")));
            }
            tags.push(tag);
        }
        Ok(tags)
    }

    /// Writes one pass in one transaction: the raw messages and tags forgotten from
    /// `truncated = (ordinal, tags kept)` on, the new raw messages and tags, tags whose drop was
    /// committed, the pending queue, the meta row and the pass's decision.
    pub fn save_pass(
        &mut self,
        state: &SessionState,
        raw: &[RawRow<'_>],
        truncated: Option<(usize, usize)>,
        new_tags_from: usize,
        newly_dropped: &[u32],
        decision: &DecisionRow<'_>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        if state.marks.is_empty() || raw.first().is_some_and(|row| row.ordinal == 0) {
            clear_history(&tx, &state.session_id)?;
        } else if let Some((ordinal, tags)) = truncated {
            truncate_history(&tx, &state.session_id, ordinal, tags)?;
        }
        insert_raw(&tx, state, raw)?;
        insert_tags(&tx, state, new_tags_from)?;
        for tag in newly_dropped {
            tx.execute(
                "UPDATE tags SET status = 'dropped' WHERE session_id = ?1 AND tag_number = ?2",
                params![state.session_id, tag],
            )?;
        }
        tx.execute("DELETE FROM pending_ops WHERE session_id = ?1", [&state.session_id])?;
        for tag in &state.pending {
            tx.execute(
                "INSERT INTO pending_ops (session_id, tag_number, queued_at) VALUES (?1, ?2, ?3)",
                params![state.session_id, tag, decision.at_ms as i64],
            )?;
        }
        write_meta(&tx, state)?;
        tx.execute(
            "INSERT OR REPLACE INTO transform_decisions VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                state.session_id,
                decision.pass as i64,
                decision.decision,
                decision.materialized,
                decision.reason,
                decision.usage_tokens as i64,
                decision.dropped_count as i64,
                decision.at_ms as i64
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Queues drops for the next executing pass (`ctx_reduce`).
    pub fn queue_drops(&mut self, session_id: &str, tags: &[u32], at_ms: u64) -> Result<()> {
        let tx = self.conn.transaction()?;
        for tag in tags {
            tx.execute(
                "INSERT OR IGNORE INTO pending_ops (session_id, tag_number, queued_at) VALUES (?1, ?2, ?3)",
                params![session_id, tag, at_ms as i64],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Marks the session for a refresh on its next pass (`/ctx-flush`).
    pub fn request_flush(&self, session_id: &str) -> Result<bool> {
        let changed =
            self.conn.execute("UPDATE session_meta SET flush_pending = 1 WHERE session_id = ?1", [session_id])?;
        Ok(changed > 0)
    }

    /// The session's compartments, oldest first.
    pub fn compartments(&self, session_id: &str) -> Result<Vec<Compartment>> {
        let mut statement = self.conn.prepare(
            "SELECT sequence, start_ordinal, end_ordinal, title, content, importance, p2, p3, p4, depth
             FROM compartments WHERE session_id = ?1 ORDER BY sequence",
        )?;
        let rows = statement.query_map([session_id], |row| {
            let full: String = row.get(4)?;
            let tiers: (Option<String>, Option<String>, Option<String>) = (row.get(6)?, row.get(7)?, row.get(8)?);
            let versions = match tiers {
                (Some(condensed), Some(outcome), Some(anchor)) => Versions { full, condensed, outcome, anchor },
                _ => historian::versions(&full),
            };
            Ok(Compartment {
                sequence: row.get(0)?,
                start: row.get::<_, i64>(1)? as usize,
                end: row.get::<_, i64>(2)? as usize,
                title: row.get(3)?,
                versions,
                importance: row.get::<_, i64>(5)?.clamp(1, 100) as u8,
                depth: row.get::<_, i64>(9)?.clamp(0, 255) as u8,
            })
        })?;
        rows.collect::<Result<_, _>>().map_err(Error::from)
    }

    /// One past the last raw ordinal the compartments cover (0 without compartments).
    pub fn compartments_end(&self, session_id: &str) -> Result<usize> {
        let end: i64 = self.conn.query_row(
            "SELECT COALESCE(MAX(end_ordinal), 0) FROM compartments WHERE session_id = ?1",
            [session_id],
            |row| row.get(0),
        )?;
        Ok(end as usize)
    }

    /// The sequence number the session's next compartment takes.
    pub fn next_sequence(&self, session_id: &str) -> Result<u32> {
        let last: i64 = self.conn.query_row(
            "SELECT COALESCE(MAX(sequence), 0) FROM compartments WHERE session_id = ?1",
            [session_id],
            |row| row.get(0),
        )?;
        Ok(u32::try_from(last).unwrap_or(u32::MAX).saturating_add(1))
    }

    /// The session's latest executing pass: (pass, which slot it re-rendered, its reason).
    pub fn last_execute(&self, session_id: &str) -> Result<Option<(u64, String, String)>> {
        let row = self
            .conn
            .query_row(
                "SELECT pass, materialized, reason FROM transform_decisions
                 WHERE session_id = ?1 AND decision = 'execute' ORDER BY pass DESC LIMIT 1",
                [session_id],
                |row| Ok((u64::try_from(row.get::<_, i64>(0)?).unwrap_or_default(), row.get(1)?, row.get(2)?)),
            )
            .optional()?;
        Ok(row)
    }

    /// Publishes compartments produced by the historian (contiguous after the last one) and the
    /// facts it found as project memories, in one transaction.
    pub fn publish_compartments(
        &mut self,
        session_id: &str,
        compartments: &[Compartment],
        facts: &[(String, String)],
        project: &str,
        at_ms: u64,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        for compartment in compartments {
            insert_compartment(&tx, session_id, compartment, at_ms)?;
        }
        for (category, content) in facts {
            insert_memory(&tx, project, category, content, at_ms)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Replaces the compartments `merged` spans (oldest first, contiguous) by `merged` itself:
    /// the compressor's one change, atomic.
    pub fn merge_compartments(&mut self, session_id: &str, merged: &Compartment, at_ms: u64) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM compartments WHERE session_id = ?1 AND start_ordinal >= ?2 AND end_ordinal <= ?3",
            params![session_id, merged.start as i64, merged.end as i64],
        )?;
        insert_compartment(&tx, session_id, merged, at_ms)?;
        tx.commit()?;
        Ok(())
    }

    /// Records a side-model call made for a session.
    pub fn record_side_call(&mut self, session_id: &str, call: &SideCall, at_ms: u64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO side_calls (session_id, purpose, model, input_tokens, output_tokens, cost, outcome, at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                session_id,
                call.purpose,
                call.model,
                call.input_tokens as i64,
                call.output_tokens as i64,
                call.cost,
                call.outcome,
                at_ms as i64
            ],
        )?;
        Ok(())
    }

    /// What a session's side-model calls add up to.
    pub fn side_totals(&self, session_id: &str) -> Result<SideTotals> {
        let totals = self.conn.query_row(
            "SELECT COUNT(*), COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), COALESCE(SUM(cost), 0.0)
             FROM side_calls WHERE session_id = ?1",
            [session_id],
            |row| {
                let count = |index: usize| row.get::<_, i64>(index).map(|value| u64::try_from(value).unwrap_or(0));
                Ok(SideTotals {
                    calls: count(0)?,
                    input_tokens: count(1)?,
                    output_tokens: count(2)?,
                    cost: row.get(3)?,
                })
            },
        )?;
        Ok(totals)
    }

    /// Raw messages `[start, end)` as (ordinal, role, text), for the historian and `ctx_expand`.
    pub fn raw_range(&self, session_id: &str, start: usize, end: usize) -> Result<Vec<(usize, String, String)>> {
        let mut statement = self.conn.prepare(
            "SELECT ordinal, role, content FROM raw_messages
             WHERE session_id = ?1 AND ordinal >= ?2 AND ordinal < ?3 ORDER BY ordinal",
        )?;
        let rows = statement.query_map(params![session_id, start as i64, end as i64], |row| {
            Ok((row.get::<_, i64>(0)? as usize, row.get(1)?, row.get(2)?))
        })?;
        rows.collect::<Result<_, _>>().map_err(Error::from)
    }

    /// Adds a project memory; `false` when the same memory already exists.
    pub fn write_memory(&mut self, project: &str, category: &str, content: &str, at_ms: u64) -> Result<(i64, bool)> {
        let tx = self.conn.transaction()?;
        let written = insert_memory(&tx, project, category, content, at_ms)?;
        tx.commit()?;
        Ok(written)
    }

    /// Archives a memory (a non-additive change: it bumps the project's memory epoch, so the next
    /// pass folds m[0] instead of leaving a stale memory cached in it).
    pub fn archive_memory(&mut self, project: &str, id: i64) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let changed = tx.execute(
            "UPDATE memories SET status = 'archived' WHERE id = ?1 AND project_path = ?2 AND status = 'active'",
            params![id, project],
        )?;
        if changed > 0 {
            tx.execute("DELETE FROM memories_fts WHERE memory_id = ?1", [id])?;
            tx.execute(
                "INSERT INTO project_state (project_path, memory_epoch) VALUES (?1, 1)
                 ON CONFLICT(project_path) DO UPDATE SET memory_epoch = memory_epoch + 1",
                [project],
            )?;
        }
        tx.commit()?;
        Ok(changed > 0)
    }

    /// Active memories of a project, oldest first.
    pub fn memories(&self, project: &str) -> Result<Vec<Memory>> {
        let mut statement = self.conn.prepare(
            "SELECT id, category, content FROM memories WHERE project_path = ?1 AND status = 'active' ORDER BY id",
        )?;
        let rows = statement
            .query_map([project], |row| Ok(Memory { id: row.get(0)?, category: row.get(1)?, content: row.get(2)? }))?;
        rows.collect::<Result<_, _>>().map_err(Error::from)
    }

    pub fn memory_epoch(&self, project: &str) -> Result<i64> {
        let epoch = self
            .conn
            .query_row("SELECT memory_epoch FROM project_state WHERE project_path = ?1", [project], |row| row.get(0))
            .optional()?;
        Ok(epoch.unwrap_or(0))
    }

    pub fn add_note(&mut self, session_id: &str, content: &str, at_ms: u64) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO notes (session_id, content, created_at) VALUES (?1, ?2, ?3)",
            params![session_id, content, at_ms as i64],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Active notes of a session, oldest first, as (id, content).
    pub fn notes(&self, session_id: &str) -> Result<Vec<(i64, String)>> {
        let mut statement = self
            .conn
            .prepare("SELECT id, content FROM notes WHERE session_id = ?1 AND status = 'active' ORDER BY id")?;
        let rows = statement.query_map([session_id], |row| Ok((row.get(0)?, row.get(1)?)))?;
        rows.collect::<Result<_, _>>().map_err(Error::from)
    }

    pub fn dismiss_note(&mut self, session_id: &str, id: i64) -> Result<bool> {
        let changed = self.conn.execute(
            "UPDATE notes SET status = 'dismissed' WHERE id = ?1 AND session_id = ?2 AND status = 'active'",
            params![id, session_id],
        )?;
        Ok(changed > 0)
    }

    /// Full-text search over the project's memories then the session's raw history (newest
    /// messages first among equally good matches).
    pub fn search(&self, session_id: &str, project: &str, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        let Some(expression) = fts_expression(query) else { return Ok(Vec::new()) };
        let mut hits = Vec::new();
        let mut memories = self.conn.prepare(
            "SELECT memory_id, content FROM memories_fts WHERE memories_fts MATCH ?1 AND project_path = ?2
             ORDER BY rank LIMIT ?3",
        )?;
        for row in memories.query_map(params![expression, project, limit as i64], |row| {
            Ok(SearchHit { source: "memory", reference: row.get(0)?, text: row.get(1)? })
        })? {
            hits.push(row?);
        }
        let mut messages = self.conn.prepare(
            "SELECT ordinal, snippet(message_history_fts, 0, '', '', ' … ', 48) FROM message_history_fts
             WHERE message_history_fts MATCH ?1 AND session_id = ?2 ORDER BY rank, ordinal DESC LIMIT ?3",
        )?;
        let left = limit.saturating_sub(hits.len()) as i64;
        for row in messages.query_map(params![expression, session_id, left], |row| {
            Ok(SearchHit { source: "message", reference: row.get(0)?, text: row.get(1)? })
        })? {
            hits.push(row?);
        }
        Ok(hits)
    }
}

/// Words of the query OR-ed as FTS5 string literals (so punctuation never breaks the syntax).
fn fts_expression(query: &str) -> Option<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|word| word.len() > 1)
        .map(|word| format!("\"{word}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// Writes a memory unless the project already has it (same category, same text once whitespace
/// is collapsed): (its id, whether it is new).
fn insert_memory(
    tx: &Transaction<'_>,
    project: &str,
    category: &str,
    content: &str,
    at_ms: u64,
) -> Result<(i64, bool)> {
    let content = content.split_whitespace().collect::<Vec<_>>().join(" ");
    let inserted = tx.execute(
        "INSERT OR IGNORE INTO memories (project_path, category, content, created_at) VALUES (?1, ?2, ?3, ?4)",
        params![project, category, content, at_ms as i64],
    )?;
    let id: i64 = tx.query_row(
        "SELECT id FROM memories WHERE project_path = ?1 AND category = ?2 AND content = ?3",
        params![project, category, content],
        |row| row.get(0),
    )?;
    if inserted > 0 {
        tx.execute(
            "INSERT INTO memories_fts (content, category, memory_id, project_path) VALUES (?1, ?2, ?3, ?4)",
            params![content, category, id, project],
        )?;
    }
    Ok((id, inserted > 0))
}

fn insert_compartment(tx: &Transaction<'_>, session_id: &str, compartment: &Compartment, at_ms: u64) -> Result<()> {
    let versions = &compartment.versions;
    tx.execute(
        "INSERT INTO compartments
         (session_id, sequence, start_ordinal, end_ordinal, title, content, created_at, importance, p2, p3, p4, depth)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            session_id,
            compartment.sequence,
            compartment.start as i64,
            compartment.end as i64,
            compartment.title,
            versions.full,
            at_ms as i64,
            i64::from(compartment.importance),
            versions.condensed,
            versions.outcome,
            versions.anchor,
            i64::from(compartment.depth)
        ],
    )?;
    Ok(())
}

fn clear_history(tx: &Transaction<'_>, session_id: &str) -> Result<()> {
    for table in ["raw_messages", "tags", "pending_ops", "compartments"] {
        tx.execute(&format!("DELETE FROM {table} WHERE session_id = ?1"), [session_id])?;
    }
    tx.execute("DELETE FROM message_history_fts WHERE session_id = ?1", [session_id])?;
    Ok(())
}

fn truncate_history(tx: &Transaction<'_>, session_id: &str, ordinal: usize, tags: usize) -> Result<()> {
    let ordinal = ordinal as i64;
    tx.execute("DELETE FROM raw_messages WHERE session_id = ?1 AND ordinal >= ?2", params![session_id, ordinal])?;
    tx.execute(
        "DELETE FROM message_history_fts WHERE session_id = ?1 AND ordinal >= ?2",
        params![session_id, ordinal],
    )?;
    tx.execute("DELETE FROM tags WHERE session_id = ?1 AND tag_number > ?2", params![session_id, tags as i64])?;
    Ok(())
}

fn insert_raw(tx: &Transaction<'_>, state: &SessionState, raw: &[RawRow<'_>]) -> Result<()> {
    let mut marks = tx.prepare_cached("INSERT OR REPLACE INTO raw_messages VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
    let mut fts =
        tx.prepare_cached("INSERT INTO message_history_fts (content, session_id, ordinal) VALUES (?1, ?2, ?3)")?;
    for row in raw {
        let mark = &state.marks[row.ordinal];
        marks.execute(params![
            state.session_id,
            row.ordinal as i64,
            row.role,
            mark.fingerprint as i64,
            mark.tokens as i64,
            mark.first_tag,
            mark.tag_count,
            row.content
        ])?;
        fts.execute(params![row.content, state.session_id, row.ordinal as i64])?;
    }
    Ok(())
}

fn insert_tags(tx: &Transaction<'_>, state: &SessionState, from: usize) -> Result<()> {
    let mut statement = tx.prepare_cached("INSERT OR REPLACE INTO tags VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?;
    for (index, tag) in state.tags.iter().enumerate().skip(from) {
        statement.execute(params![
            state.session_id,
            (index + 1) as i64,
            tag.ordinal as i64,
            tag.part as i64,
            if tag.kind == TagKind::Tool { "tool" } else { "message" },
            tag.tool,
            tag.dedup.map(|key| key as i64),
            tag.tokens as i64,
            if tag.dropped { "dropped" } else { "active" }
        ])?;
    }
    Ok(())
}

fn write_meta(tx: &Transaction<'_>, state: &SessionState) -> Result<()> {
    let meta = &state.meta;
    tx.execute(
        "INSERT OR REPLACE INTO session_meta VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            state.session_id,
            state.project,
            meta.model_key,
            meta.last_request_ms.map(|ms| ms as i64),
            meta.boundary as i64,
            meta.m0,
            meta.m1,
            meta.m0_seq,
            meta.m1_seq,
            meta.m0_memory_id,
            meta.m1_memory_id,
            meta.memory_epoch,
            meta.flush_pending,
            meta.passes as i64,
            meta.last_usage_tokens as i64,
            meta.window as i64
        ],
    )?;
    Ok(())
}
