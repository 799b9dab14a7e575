//! Projects and sessions: create (adopting a reused id), get, keyset-paginated listing, children,
//! atomic update, touch, archive, revert markers, cascading remove, and fork.

use crate::types::EventKind;
use rusqlite::OptionalExtension;
use rusqlite::params;
use rusqlite::params_from_iter;
use rusqlite::types::Value as SqlValue;
use serde_json::json;

use crate::error::Result;
use crate::error::StoreError;
use crate::events::limit_param;
use crate::id;
use crate::id::IdKind;
use crate::part::Part;
use crate::store::Reader;
use crate::store::Tx;
use crate::types::CacheTokens;
use crate::types::MessageInfo;
use crate::types::PermissionRuleEntry;
use crate::types::Project;
use crate::types::ProjectTime;
use crate::types::Revert;
use crate::types::Session;
use crate::types::SessionModel;
use crate::types::SessionTime;
use crate::types::Tokens;

/// What a new session is made of; everything else gets OpenCode's defaults.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewSession {
    /// Reusing the id of an existing session adopts it instead of creating one.
    pub id: Option<String>,
    pub project_id: String,
    pub directory: String,
    pub parent_id: Option<String>,
    /// Defaults to `New session - <ISO time>` (`Child session - …` for a child).
    pub title: Option<String>,
    pub slug: Option<String>,
    /// The program version that created it; defaults to this crate's version.
    pub version: Option<String>,
    pub agent: Option<String>,
    pub model: Option<SessionModel>,
    pub permission: Option<Vec<PermissionRuleEntry>>,
}

impl NewSession {
    pub fn new(project_id: impl Into<String>, directory: impl Into<String>) -> Self {
        Self { project_id: project_id.into(), directory: directory.into(), ..Self::default() }
    }
}

/// A session directory relative to its project's worktree (`""` at the root, `sub/dir` below it), as
/// OpenCode's clients show it; `None` when the directory is outside the worktree.
fn path_in_worktree(worktree: &str, directory: &str) -> Option<String> {
    let relative = std::path::Path::new(directory).strip_prefix(worktree).ok()?;
    Some(relative.to_string_lossy().into_owned())
}

/// Which sessions to list. Newest activity (`time.updated`) first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionQuery {
    pub project_id: Option<String>,
    pub directory: Option<String>,
    /// Case-insensitive substring of the title.
    pub search: Option<String>,
    /// Only sessions without a parent.
    pub roots_only: bool,
    pub include_archived: bool,
    pub limit: usize,
    /// The `next` cursor of the previous page.
    pub cursor: Option<String>,
}

impl Default for SessionQuery {
    fn default() -> Self {
        Self {
            project_id: None,
            directory: None,
            search: None,
            roots_only: false,
            include_archived: false,
            limit: 50,
            cursor: None,
        }
    }
}

/// One page of sessions; `next` is set when more follow.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    pub sessions: Vec<Session>,
    pub next: Option<String>,
}

/// The project sessions outside any repository are filed under (OpenCode's `global`).
pub const GLOBAL_PROJECT: &str = "global";

/// The project `directory`'s sessions belong to: the root commit of its git worktree, else the
/// [`GLOBAL_PROJECT`].
pub fn project_of(directory: &std::path::Path) -> String {
    opencode_config::project_id(directory).unwrap_or_else(|| GLOBAL_PROJECT.to_owned())
}

impl Tx<'_> {
    /// Creates the [`GLOBAL_PROJECT`] (worktree `/`) unless it exists.
    pub fn ensure_global_project(&mut self) -> Result<()> {
        if self.reader().project(GLOBAL_PROJECT)?.is_some() {
            return Ok(());
        }
        let time = ProjectTime { created: self.now(), updated: self.now(), initialized: None };
        self.upsert_project(&Project {
            id: GLOBAL_PROJECT.to_owned(),
            worktree: "/".to_owned(),
            vcs: None,
            name: None,
            icon: None,
            commands: None,
            time,
            sandboxes: Vec::new(),
        })
    }

    /// Inserts or replaces a project.
    pub fn upsert_project(&mut self, project: &Project) -> Result<()> {
        let data = serde_json::to_string(project).map_err(StoreError::decode("project"))?;
        self.tx
            .prepare_cached(
                "INSERT INTO project (id, worktree, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET worktree = ?2, time_updated = ?4, data = ?5",
            )?
            .execute(params![project.id, project.worktree, project.time.created, project.time.updated, data])?;
        Ok(())
    }

    /// Creates a session, or returns the existing one when `new.id` names a session that exists.
    pub fn create_session(&mut self, new: NewSession) -> Result<Session> {
        if let Some(existing) = new.id.as_deref().map(|id| self.reader().session(id)).transpose()?.flatten() {
            return Ok(existing);
        }
        if self.reader().project(&new.project_id)?.is_none() {
            return Err(StoreError::not_found("project", new.project_id));
        }
        if let Some(parent) = &new.parent_id
            && self.reader().session(parent)?.is_none()
        {
            return Err(StoreError::not_found("parent session", parent.clone()));
        }
        let id = match new.id {
            Some(id) if id::has_kind(&id, IdKind::Session) => id,
            Some(id) => return Err(StoreError::Invalid(format!("session id {id:?} must look like ses_<12 hex>…"))),
            None => id::descending(IdKind::Session),
        };
        let prefix = if new.parent_id.is_some() { "Child session - " } else { "New session - " };
        let worktree = self.reader().project(&new.project_id)?.map(|project| project.worktree);
        let path = worktree.as_deref().and_then(|worktree| path_in_worktree(worktree, &new.directory));
        let session = Session {
            id,
            slug: new.slug.unwrap_or_else(random_slug),
            project_id: new.project_id,
            workspace_id: None,
            directory: new.directory,
            path,
            parent_id: new.parent_id,
            summary: None,
            cost: 0.0,
            tokens: Tokens::default(),
            share: None,
            title: new.title.unwrap_or_else(|| format!("{prefix}{}", iso8601(self.now))),
            agent: new.agent,
            model: new.model,
            version: new.version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
            metadata: None,
            time: SessionTime { created: self.now, updated: self.now, compacting: None, archived: None },
            permission: new.permission,
            revert: None,
        };
        let data = serde_json::to_string(&session).map_err(StoreError::decode("session"))?;
        self.tx
            .prepare_cached(
                "INSERT INTO session (id, project_id, parent_id, directory, title, time_created, time_updated,
                 time_archived, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, ?8)",
            )?
            .execute(params![
                session.id,
                session.project_id,
                session.parent_id,
                session.directory,
                session.title,
                session.time.created,
                session.time.updated,
                data
            ])?;
        self.append_event(&session.id, EventKind::SessionCreated, json!({ "info": session }))?;
        Ok(session)
    }

    /// Atomic read-modify-write of a session; bumps `time.updated`. The id, project, creation time and the
    /// usage totals (which the store keeps) cannot be changed this way.
    pub fn update_session(&mut self, id: &str, edit: impl FnOnce(&mut Session)) -> Result<Session> {
        let before = self.reader().session(id)?.ok_or_else(|| StoreError::not_found("session", id))?;
        let mut session = before.clone();
        edit(&mut session);
        session.id = before.id;
        session.project_id = before.project_id;
        session.time.created = before.time.created;
        session.cost = before.cost;
        session.tokens = before.tokens;
        session.time.updated = self.now.max(before.time.updated);
        self.put_session(&session)?;
        self.append_event(&session.id, EventKind::SessionUpdated, json!({ "info": session }))?;
        Ok(session)
    }

    /// Marks activity on a session (`time.updated = now`).
    pub fn touch_session(&mut self, id: &str) -> Result<()> {
        self.update_session(id, |_| {}).map(drop)
    }

    /// Archives (`time.archived = now`) or unarchives a session.
    pub fn set_archived(&mut self, id: &str, archived: bool) -> Result<Session> {
        let now = self.now;
        self.update_session(id, |s| s.time.archived = archived.then_some(now))
    }

    /// Stages a revert: history from `revert.messageID` on is hidden from projected history.
    pub fn set_revert(&mut self, id: &str, revert: Revert) -> Result<Session> {
        if self.reader().message_seq(&revert.message_id)?.is_none() {
            return Err(StoreError::not_found("message", revert.message_id));
        }
        self.update_session(id, |s| s.revert = Some(revert))
    }

    /// Undoes a staged revert.
    pub fn clear_revert(&mut self, id: &str) -> Result<Session> {
        self.update_session(id, |s| s.revert = None)
    }

    /// Makes a staged revert permanent: removes the reverted messages (and, when the revert names a part,
    /// that part and the ones after it) and clears the marker.
    pub fn commit_revert(&mut self, id: &str) -> Result<Session> {
        let session = self.reader().session(id)?.ok_or_else(|| StoreError::not_found("session", id))?;
        let Some(revert) = session.revert else { return Ok(session) };
        let seq = self.reader().message_seq(&revert.message_id)?.unwrap_or(i64::MAX);
        let first_removed = match &revert.part_id {
            Some(part_id) => {
                let position = self.reader().part_position(part_id)?;
                if let Some(position) = position {
                    let parts: Vec<String> = self
                        .tx
                        .prepare("SELECT id FROM part WHERE message_id = ?1 AND position >= ?2")?
                        .query_map(params![revert.message_id, position], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()?;
                    for part in parts {
                        self.remove_part(&part)?;
                    }
                }
                seq.saturating_add(1)
            }
            None => seq,
        };
        let messages: Vec<String> = self
            .tx
            .prepare("SELECT id FROM message WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq")?
            .query_map(params![id, first_removed], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for message in messages {
            self.remove_message(&message)?;
        }
        self.update_session(id, |s| s.revert = None)
    }

    /// Removes a session with its children (recursively), messages, parts, inputs, epochs, permission
    /// requests, todos and events. Returns the ids removed, the session itself first.
    pub fn remove_session(&mut self, id: &str) -> Result<Vec<String>> {
        let removed: Vec<String> = self
            .tx
            .prepare(
                "WITH RECURSIVE tree (id, depth) AS (
                     SELECT id, 0 FROM session WHERE id = ?1
                     UNION ALL SELECT s.id, tree.depth + 1 FROM session s JOIN tree ON s.parent_id = tree.id)
                 SELECT id FROM tree ORDER BY depth",
            )?
            .query_map([id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        if removed.is_empty() {
            return Err(StoreError::not_found("session", id));
        }
        self.tx.execute("DELETE FROM session WHERE id = ?1", [id])?;
        Ok(removed)
    }

    /// Forks `source` into a new session holding copies (with new ids) of its messages before
    /// `before_message` (all of them when `None`); assistant `parentID` links are remapped.
    pub fn fork_session(&mut self, source: &str, before_message: Option<&str>) -> Result<Session> {
        let original = self.reader().session(source)?.ok_or_else(|| StoreError::not_found("session", source))?;
        let cutoff = match before_message {
            Some(message) => self
                .reader()
                .message_seq(message)?
                .filter(|_| self.reader().message_session(message).ok().flatten().as_deref() == Some(source))
                .ok_or_else(|| StoreError::not_found("message", message))?,
            None => i64::MAX,
        };
        let fork = self.create_session(NewSession {
            project_id: original.project_id.clone(),
            directory: original.directory.clone(),
            title: Some(forked_title(&original.title)),
            agent: original.agent.clone(),
            model: original.model.clone(),
            permission: original.permission.clone(),
            ..NewSession::default()
        })?;
        let messages = self.reader().messages_between(source, 0, cutoff.saturating_sub(1))?;
        let mut remap = std::collections::HashMap::new();
        for message in messages {
            let new_id = id::ascending(IdKind::Message);
            remap.insert(message.info.id().to_owned(), new_id.clone());
            let mut info = message.info;
            info.set_ids(new_id.clone(), fork.id.clone());
            if let MessageInfo::Assistant(assistant) = &mut info
                && let Some(parent) = remap.get(&assistant.parent_id)
            {
                assistant.parent_id = parent.clone();
            }
            self.append_message(&info)?;
            for part in message.parts {
                let copy = Part {
                    id: id::ascending(IdKind::Part),
                    session_id: fork.id.clone(),
                    message_id: new_id.clone(),
                    ..part
                };
                self.upsert_part(&copy)?;
            }
        }
        self.reader().session(&fork.id)?.ok_or_else(|| StoreError::not_found("session", fork.id))
    }

    /// Writes a session's row from its info (not the usage totals, which only accumulate).
    fn put_session(&mut self, session: &Session) -> Result<()> {
        let data = serde_json::to_string(session).map_err(StoreError::decode("session"))?;
        self.tx
            .prepare_cached(
                "UPDATE session SET parent_id = ?2, directory = ?3, title = ?4, time_updated = ?5, time_archived = ?6,
                 data = ?7 WHERE id = ?1",
            )?
            .execute(params![
                session.id,
                session.parent_id,
                session.directory,
                session.title,
                session.time.updated,
                session.time.archived,
                data
            ])?;
        Ok(())
    }

    /// Adds the usage of a request made for a session outside its messages (a plugin's call on the
    /// small model) to the session's totals, so its cost is the whole bill; announces the new totals.
    pub fn add_side_usage(&mut self, session_id: &str, cost: f64, tokens: &Tokens) -> Result<Session> {
        self.add_session_usage(session_id, cost, &TokenDelta::between(&Tokens::default(), tokens))?;
        let session = self.reader().session(session_id)?.ok_or_else(|| StoreError::not_found("session", session_id))?;
        self.append_event(&session.id, EventKind::SessionUpdated, json!({ "info": session }))?;
        Ok(session)
    }

    /// Adds usage to a session's totals and bumps its activity time.
    pub(crate) fn add_session_usage(&mut self, session_id: &str, cost: f64, tokens: &TokenDelta) -> Result<()> {
        self.tx
            .prepare_cached(
                "UPDATE session SET cost = cost + ?2, tokens_input = tokens_input + ?3,
                 tokens_output = tokens_output + ?4, tokens_reasoning = tokens_reasoning + ?5,
                 tokens_cache_read = tokens_cache_read + ?6, tokens_cache_write = tokens_cache_write + ?7,
                 time_updated = MAX(time_updated, ?8) WHERE id = ?1",
            )?
            .execute(params![
                session_id,
                cost,
                tokens.input,
                tokens.output,
                tokens.reasoning,
                tokens.cache_read,
                tokens.cache_write,
                self.now
            ])?;
        Ok(())
    }
}

/// A signed change of token counts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TokenDelta {
    pub input: i64,
    pub output: i64,
    pub reasoning: i64,
    pub cache_read: i64,
    pub cache_write: i64,
}

impl TokenDelta {
    pub(crate) fn between(old: &Tokens, new: &Tokens) -> Self {
        let d = |a: u64, b: u64| i64::try_from(b).unwrap_or(i64::MAX).saturating_sub(i64::try_from(a).unwrap_or(0));
        Self {
            input: d(old.input, new.input),
            output: d(old.output, new.output),
            reasoning: d(old.reasoning, new.reasoning),
            cache_read: d(old.cache.read, new.cache.read),
            cache_write: d(old.cache.write, new.cache.write),
        }
    }
}

const SESSION_COLUMNS: &str = "data, cost, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, \
                               tokens_cache_write, time_updated, id";

impl Reader<'_> {
    pub fn project(&self, id: &str) -> Result<Option<Project>> {
        let data: Option<String> = self
            .conn
            .prepare_cached("SELECT data FROM project WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        data.map(|d| serde_json::from_str(&d).map_err(StoreError::decode("project"))).transpose()
    }

    /// Every project, most recently updated first.
    pub fn projects(&self) -> Result<Vec<Project>> {
        let mut stmt = self.conn.prepare_cached("SELECT data FROM project ORDER BY time_updated DESC, id")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        rows.map(|d| serde_json::from_str(&d?).map_err(StoreError::decode("project"))).collect()
    }

    pub fn session(&self, id: &str) -> Result<Option<Session>> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM session WHERE id = ?1");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let row = stmt.query_row([id], session_row).optional()?;
        row.map(SessionRow::into_session).transpose()
    }

    /// One page of sessions, newest activity first, with a cursor for the next page.
    pub fn list_sessions(&self, query: &SessionQuery) -> Result<SessionPage> {
        let mut sql = format!("SELECT {SESSION_COLUMNS} FROM session WHERE 1 = 1");
        let mut args: Vec<SqlValue> = Vec::new();
        let mut bind = |sql: &mut String, clause: &str, value: SqlValue| {
            args.push(value);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        if let Some(project) = &query.project_id {
            bind(&mut sql, " AND project_id = ?", SqlValue::Text(project.clone()));
        }
        if let Some(directory) = &query.directory {
            bind(&mut sql, " AND directory = ?", SqlValue::Text(directory.clone()));
        }
        if let Some(search) = query.search.as_deref().filter(|s| !s.is_empty()) {
            bind(&mut sql, " AND title LIKE ? ESCAPE '\\'", SqlValue::Text(format!("%{}%", escape_like(search))));
        }
        if query.roots_only {
            sql.push_str(" AND parent_id IS NULL");
        }
        if !query.include_archived {
            sql.push_str(" AND time_archived IS NULL");
        }
        if let Some(cursor) = &query.cursor {
            let (updated, id) = parse_cursor(cursor)?;
            bind(&mut sql, " AND (time_updated < ?", SqlValue::Integer(updated));
            bind(&mut sql, " OR (time_updated = ?", SqlValue::Integer(updated));
            bind(&mut sql, " AND id > ?))", SqlValue::Text(id));
        }
        let limit = query.limit.max(1);
        bind(&mut sql, " ORDER BY time_updated DESC, id LIMIT ?", SqlValue::Integer(limit_param(limit + 1)));
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let mut rows: Vec<SessionRow> =
            stmt.query_map(params_from_iter(args), session_row)?.collect::<rusqlite::Result<_>>()?;
        let next = (rows.len() > limit).then(|| {
            rows.truncate(limit);
            rows.last().map(|last| format!("{}:{}", last.updated, last.id))
        });
        let sessions = rows.into_iter().map(SessionRow::into_session).collect::<Result<_>>()?;
        Ok(SessionPage { sessions, next: next.flatten() })
    }

    /// The direct children of a session, oldest first.
    pub fn children(&self, parent_id: &str) -> Result<Vec<Session>> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM session WHERE parent_id = ?1 ORDER BY time_created, id DESC");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map([parent_id], session_row)?;
        rows.map(|row| row?.into_session()).collect()
    }
}

struct SessionRow {
    data: String,
    cost: f64,
    tokens: [i64; 5],
    updated: i64,
    id: String,
}

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        data: r.get(0)?,
        cost: r.get(1)?,
        tokens: [r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?],
        updated: r.get(7)?,
        id: r.get(8)?,
    })
}

impl SessionRow {
    fn into_session(self) -> Result<Session> {
        let mut session: Session = serde_json::from_str(&self.data).map_err(StoreError::decode("session"))?;
        let n = |v: i64| u64::try_from(v).unwrap_or(0);
        let [input, output, reasoning, read, write] = self.tokens;
        session.cost = self.cost;
        session.tokens = Tokens {
            total: None,
            input: n(input),
            output: n(output),
            reasoning: n(reasoning),
            cache: CacheTokens { read: n(read), write: n(write) },
        };
        session.time.updated = self.updated;
        Ok(session)
    }
}

fn parse_cursor(cursor: &str) -> Result<(i64, String)> {
    cursor
        .split_once(':')
        .and_then(|(updated, id)| Some((updated.parse().ok()?, id.to_owned())))
        .ok_or_else(|| StoreError::Invalid(format!("session cursor {cursor:?} is not one this store returned")))
}

fn escape_like(text: &str) -> String {
    text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
}

/// `Title (fork #n)`, counting up from an existing fork suffix.
fn forked_title(title: &str) -> String {
    if let Some(base) = title.strip_suffix(')')
        && let Some((base, n)) = base.rsplit_once(" (fork #")
        && let Ok(n) = n.parse::<u32>()
    {
        return format!("{base} (fork #{})", n + 1);
    }
    format!("{title} (fork #1)")
}

fn random_slug() -> String {
    const ADJECTIVES: &[&str] =
        &["brave", "calm", "eager", "gentle", "happy", "keen", "lucky", "quiet", "swift", "witty"];
    const NOUNS: &[&str] =
        &["badger", "comet", "falcon", "harbor", "meadow", "otter", "pine", "river", "tiger", "wolf"];
    let pick = |list: &[&'static str]| list[fastrand::usize(..list.len())];
    format!("{}-{}", pick(ADJECTIVES), pick(NOUNS))
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for Unix milliseconds (JavaScript's `toISOString`).
pub(crate) fn iso8601(ms: i64) -> String {
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_matches_javascript() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_700_000_123_456), "2023-11-14T22:15:23.456Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn fork_titles_count_up() {
        assert_eq!(forked_title("Fix the build"), "Fix the build (fork #1)");
        assert_eq!(forked_title("Fix the build (fork #1)"), "Fix the build (fork #2)");
    }

    #[test]
    fn like_wildcards_are_escaped() {
        assert_eq!(escape_like("50%_a\\b"), "50\\%\\_a\\\\b");
    }
}
