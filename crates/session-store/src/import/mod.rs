//! Import of OpenCode's own history: projects, sessions (parents before children), messages and parts
//! (all 12 kinds, tool states, usage, titles, times, ids kept) from OpenCode's data directory.
//!
//! - **Read-only on the source.** OpenCode's database is opened `SQLITE_OPEN_READ_ONLY` (its write-ahead
//!   log is read, never written or checkpointed); its older JSON files are only read.
//! - **Idempotent.** Rows whose id is already stored are left as they are; a second import of the same
//!   data adds and changes nothing, and one after more OpenCode use adds only what is new.
//! - **Resumable.** Whole sessions are committed together, several to a transaction; after a kill the
//!   next import skips what was committed and carries on.
//! - **Never fatal for a row.** A row that does not map onto this store's types is reported by kind and
//!   id with the reason, and skipped (with its parts, for a message).
//!
//! Both layouts are read when both exist (OpenCode 1.2+ leaves the JSON files behind after moving
//! them into its database): the database first, then whatever only the files hold.

mod database;
mod source;
mod storage;
mod write;

use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::json;

use self::database::Database;
use self::source::MessageRows;
use self::source::Row;
use self::source::SessionRow;
use self::source::Source;
use self::storage::Storage;
use crate::error::Result;
use crate::error::StoreError;
use crate::part::Part;
use crate::sessions::GLOBAL_PROJECT;
use crate::store::Store;
use crate::store::Tx;
use crate::types::MessageInfo;
use crate::types::Project;
use crate::types::ProjectTime;
use crate::types::Session;

/// OpenCode's database file name in its data directory.
pub const OPENCODE_DATABASE: &str = "opencode.db";

/// The `store_meta` key set (to the time, Unix ms) when an import from OpenCode finished.
pub const IMPORTED_META: &str = "opencode_import_finished";

/// Sessions are committed together until a transaction holds at least this many messages.
const BATCH_MESSAGES: usize = 2_000;

/// OpenCode's data found in a data directory: its database, its older JSON storage, or both.
pub struct OpenCodeData {
    sources: Vec<Box<dyn Source>>,
}

/// How many rows of one kind were added, and how many were stored already.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportCounts {
    pub added: usize,
    pub present: usize,
}

/// A row that could not be imported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    /// `project`, `session`, `message` or `part`.
    pub kind: &'static str,
    pub id: String,
    pub reason: String,
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    pub projects: ImportCounts,
    pub sessions: ImportCounts,
    pub messages: ImportCounts,
    pub parts: ImportCounts,
    pub skipped: Vec<SkippedRow>,
    /// Rows imported with a change, said in one line each (a child whose parent is missing becomes a
    /// root session; a session whose project is missing gets one for its directory).
    pub notes: Vec<String>,
}

/// Progress so far, reported after every session read and every commit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportProgress {
    pub sessions_done: usize,
    pub sessions_total: usize,
    pub messages_done: usize,
}

impl OpenCodeData {
    /// OpenCode's data in `data_dir` (`~/.local/share/opencode`). Fails when there is none, or when
    /// `opencode.db` there is not OpenCode's database.
    pub fn open(data_dir: &Path) -> Result<Self> {
        let mut sources: Vec<Box<dyn Source>> = Vec::new();
        let database = data_dir.join(OPENCODE_DATABASE);
        if database.is_file() {
            sources.push(Box::new(Database::open(&database)?));
        }
        if let Some(storage) = Storage::find(&data_dir.join("storage")) {
            sources.push(Box::new(storage));
        }
        if sources.is_empty() {
            return Err(StoreError::ImportSource {
                path: data_dir.to_path_buf(),
                detail: format!("no OpenCode data here (neither {OPENCODE_DATABASE} nor storage/session/)"),
            });
        }
        Ok(Self { sources })
    }

    /// Whether `data_dir` has OpenCode's database (cheap; the file is not opened).
    pub fn exists_in(data_dir: &Path) -> bool {
        data_dir.join(OPENCODE_DATABASE).is_file()
    }

    /// Where the data is read from.
    pub fn locations(&self) -> Vec<String> {
        self.sources.iter().map(|s| s.describe()).collect()
    }

    /// Copies everything not yet stored into `store`, calling `progress` as it goes. Only failures to
    /// read the source or write the store end it early (and what was committed stays; the next import
    /// continues from there); rows that do not map are in the report.
    pub fn import_into(&self, store: &Store, progress: &mut dyn FnMut(ImportProgress)) -> Result<ImportReport> {
        let mut report = ImportReport::default();
        let mut sessions = Vec::new();
        for source in &self.sources {
            import_projects(store, source.as_ref(), &mut report)?;
            sessions.push(source.sessions()?);
        }
        let total = sessions.iter().map(Vec::len).sum();
        let mut done = ImportProgress { sessions_total: total, ..ImportProgress::default() };
        progress(done);
        for (source, rows) in self.sources.iter().zip(sessions) {
            import_sessions(store, source.as_ref(), rows, &mut report, &mut done, progress)?;
        }
        store.write(|tx| {
            let now = tx.now();
            tx.set_meta(IMPORTED_META, now)
        })?;
        Ok(report)
    }
}

fn import_projects(store: &Store, source: &dyn Source, report: &mut ImportReport) -> Result<()> {
    let projects: Vec<Project> =
        source.projects()?.into_iter().filter_map(|row| decode("project", row, |_| {}, &mut report.skipped)).collect();
    let added = store.write(|tx| {
        let mut added = 0;
        for project in &projects {
            added += usize::from(tx.import_project(project)?);
        }
        Ok(added)
    })?;
    report.projects.added += added;
    report.projects.present += projects.len() - added;
    Ok(())
}

/// One session read and decoded, waiting for its transaction.
struct Pending {
    session: Session,
    messages: Vec<(MessageInfo, Vec<Part>)>,
}

fn import_sessions(
    store: &Store,
    source: &dyn Source,
    rows: Vec<SessionRow>,
    report: &mut ImportReport,
    done: &mut ImportProgress,
    progress: &mut dyn FnMut(ImportProgress),
) -> Result<()> {
    let mut batch: Vec<Pending> = Vec::new();
    let mut batch_messages = 0;
    for row in parents_first(rows) {
        done.sessions_done += 1;
        let Some(session) = decode::<Session>("session", row.row, normalize_session, &mut report.skipped) else {
            continue;
        };
        let (messages, orphans) = source.messages(&session.id)?;
        skip_all("part", orphans, &mut report.skipped);
        let messages = decode_messages(messages, &mut report.skipped);
        batch_messages += messages.len();
        batch.push(Pending { session, messages });
        if batch_messages >= BATCH_MESSAGES {
            done.messages_done += batch_messages;
            commit(store, std::mem::take(&mut batch), report)?;
            batch_messages = 0;
        }
        progress(*done);
    }
    done.messages_done += batch_messages;
    commit(store, batch, report)?;
    progress(*done);
    Ok(())
}

/// Writes whole sessions in one transaction.
fn commit(store: &Store, batch: Vec<Pending>, report: &mut ImportReport) -> Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let outcome = store.write(|tx| {
        let mut outcome = ImportReport::default();
        for pending in &batch {
            write_session(tx, pending, &mut outcome)?;
        }
        Ok(outcome)
    })?;
    merge(report, outcome);
    Ok(())
}

fn write_session(tx: &mut Tx<'_>, pending: &Pending, out: &mut ImportReport) -> Result<()> {
    let mut session = pending.session.clone();
    ensure_project(tx, &session, out)?;
    if let Some(parent) = session.parent_id.clone()
        && tx.reader().session(&parent)?.is_none()
    {
        out.notes.push(format!(
            "session {}: its parent session {parent} is missing; imported as a root session",
            session.id
        ));
        session.parent_id = None;
    }
    let (added, mut cursor) = tx.import_session(&session)?;
    count(&mut out.sessions, added);
    for (info, parts) in &pending.messages {
        match tx.import_message(&mut cursor, info) {
            Ok(added) => count(&mut out.messages, added),
            Err(StoreError::Conflict(reason)) => {
                let because = format!("its message {} was skipped", info.id());
                out.skipped.push(SkippedRow { kind: "message", id: info.id().to_owned(), reason });
                out.skipped.extend(parts.iter().map(|p| SkippedRow {
                    kind: "part",
                    id: p.id.clone(),
                    reason: because.clone(),
                }));
                continue;
            }
            Err(err) => return Err(err),
        }
        for part in parts {
            match tx.import_part(part) {
                Ok(added) => count(&mut out.parts, added),
                Err(StoreError::Conflict(reason)) => {
                    out.skipped.push(SkippedRow { kind: "part", id: part.id.clone(), reason });
                }
                Err(err) => return Err(err),
            }
        }
    }
    Ok(())
}

/// The session's project, made when the source did not have it: `global`, or one for its directory.
fn ensure_project(tx: &mut Tx<'_>, session: &Session, out: &mut ImportReport) -> Result<()> {
    if tx.reader().project(&session.project_id)?.is_some() {
        return Ok(());
    }
    if session.project_id == GLOBAL_PROJECT {
        return tx.ensure_global_project();
    }
    let time = ProjectTime { created: session.time.created, updated: session.time.updated, initialized: None };
    tx.import_project(&Project {
        id: session.project_id.clone(),
        worktree: session.directory.clone(),
        vcs: None,
        name: None,
        icon: None,
        commands: None,
        time,
        sandboxes: Vec::new(),
    })?;
    out.notes.push(format!(
        "session {}: its project {} is missing; one was made for {}",
        session.id, session.project_id, session.directory
    ));
    Ok(())
}

/// Orders sessions so every parent comes before its children (then by creation), whatever the
/// source's order.
fn parents_first(rows: Vec<SessionRow>) -> Vec<SessionRow> {
    let parents: HashMap<String, Option<String>> =
        rows.iter().map(|r| (r.row.id.clone(), r.parent_id.clone())).collect();
    let depth = |id: &str| {
        let mut seen = HashSet::new();
        let mut current = id.to_owned();
        while let Some(Some(parent)) = parents.get(&current) {
            if !seen.insert(current.clone()) {
                break;
            }
            current = parent.clone();
        }
        seen.len()
    };
    let mut keyed: Vec<(usize, SessionRow)> = rows.into_iter().map(|r| (depth(&r.row.id), r)).collect();
    keyed.sort_by(|(da, a), (db, b)| (da, a.created, &a.row.id).cmp(&(db, b.created, &b.row.id)));
    keyed.into_iter().map(|(_, r)| r).collect()
}

fn decode_messages(rows: Vec<MessageRows>, skipped: &mut Vec<SkippedRow>) -> Vec<(MessageInfo, Vec<Part>)> {
    let mut messages = Vec::with_capacity(rows.len());
    for MessageRows { message, parts } in rows {
        let id = message.id.clone();
        match decode::<MessageInfo>("message", message, normalize_message, skipped) {
            Some(info) => {
                let parts = parts.into_iter().filter_map(|row| decode::<Part>("part", row, |_| {}, skipped)).collect();
                messages.push((info, parts));
            }
            None => {
                let reason = format!("its message {id} was skipped");
                skipped.extend(parts.into_iter().map(|p| SkippedRow {
                    kind: "part",
                    id: p.id,
                    reason: reason.clone(),
                }));
            }
        }
    }
    messages
}

/// A row as one of this store's types, or a skipped row saying why not.
fn decode<T: DeserializeOwned>(
    kind: &'static str,
    row: Row,
    normalize: impl FnOnce(&mut Value),
    skipped: &mut Vec<SkippedRow>,
) -> Option<T> {
    let Row { id, json } = row;
    let result = json.and_then(|mut json| {
        normalize(&mut json);
        serde_json::from_value(json).map_err(|err| format!("does not map: {err}"))
    });
    match result {
        Ok(value) => Some(value),
        Err(reason) => {
            skipped.push(SkippedRow { kind, id, reason });
            None
        }
    }
}

fn skip_all(kind: &'static str, rows: Vec<Row>, skipped: &mut Vec<SkippedRow>) {
    for Row { id, json } in rows {
        let reason = json.err().unwrap_or_else(|| "not imported".to_owned());
        skipped.push(SkippedRow { kind, id, reason });
    }
}

/// Fills what older OpenCode versions left out of a session and this store requires.
fn normalize_session(json: &mut Value) {
    let id = json["id"].as_str().unwrap_or_default().to_owned();
    let object = json.as_object_mut();
    let Some(object) = object else { return };
    object.entry("slug").or_insert_with(|| json!(id.trim_start_matches("ses_")));
    object.entry("version").or_insert_with(|| json!("unknown"));
    if let Some(time) = object.get_mut("time").and_then(Value::as_object_mut)
        && !time.contains_key("updated")
        && let Some(created) = time.get("created").cloned()
    {
        time.insert("updated".to_owned(), created);
    }
}

/// An assistant message from before `agent` existed names its agent in `mode`.
fn normalize_message(json: &mut Value) {
    if json["role"] == "assistant"
        && json.get("agent").is_none()
        && let Some(mode) = json.get("mode").cloned()
        && let Some(object) = json.as_object_mut()
    {
        object.insert("agent".to_owned(), mode);
    }
}

fn count(counts: &mut ImportCounts, added: bool) {
    if added {
        counts.added += 1;
    } else {
        counts.present += 1;
    }
}

fn merge(report: &mut ImportReport, outcome: ImportReport) {
    for (total, part) in [
        (&mut report.projects, outcome.projects),
        (&mut report.sessions, outcome.sessions),
        (&mut report.messages, outcome.messages),
        (&mut report.parts, outcome.parts),
    ] {
        total.added += part.added;
        total.present += part.present;
    }
    report.skipped.extend(outcome.skipped);
    report.notes.extend(outcome.notes);
}
