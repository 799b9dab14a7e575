//! The [`Store`] handle: connections, transactions, staged part writes and durability.
//!
//! One writer connection behind a mutex serialises this process's writes; every write runs in a
//! `BEGIN IMMEDIATE` transaction, so SQLite takes the write lock up front and waits for other processes
//! (busy timeout plus a bounded retry) instead of failing halfway with "database is locked". Reads use a
//! small pool of read-only connections; in WAL mode they never block writers or each other.
//!
//! Durability: the journal is WAL with `synchronous = NORMAL`, so a commit survives a process crash
//! (SIGKILL) without an fsync; [`Store::flush`] commits with `synchronous = FULL`, which fsyncs the WAL
//! and so makes every earlier commit survive power loss too. The runtime flushes before it reports a
//! step finished.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::RwLock;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;
use std::time::Instant;

use rusqlite::Connection;
use rusqlite::OpenFlags;
use rusqlite::TransactionBehavior;

use crate::error::Result;
use crate::error::StoreError;
use crate::id::now_ms;
use crate::part::Part;
use crate::schema;
use crate::types::Event;

/// Called after a commit with the events it made durable, in order (the runtime broadcasts them).
pub type EventHook = Arc<dyn Fn(&[Event]) + Send + Sync>;

/// Tuning knobs; [`StoreOptions::default`] suits interactive use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreOptions {
    /// Staged part updates are committed at least this often.
    pub flush_interval: Duration,
    /// Staged part updates are committed once this many distinct parts are waiting.
    pub max_staged: usize,
    /// How long a write waits for another process's write lock before failing with [`StoreError::Busy`].
    pub busy_wait: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { flush_interval: Duration::from_millis(100), max_staged: 256, busy_wait: Duration::from_secs(30) }
    }
}

/// A durable session store on one SQLite file. `Send + Sync`; blocking (call it from `spawn_blocking`).
pub struct Store {
    path: PathBuf,
    options: StoreOptions,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    staged: Mutex<Staged>,
    /// Commits made with `synchronous = NORMAL` since the last fsync.
    unsynced: AtomicBool,
    hooks: RwLock<Vec<EventHook>>,
    /// Staged parts refused since the last flush, reported by it.
    rejected: Mutex<Vec<StoreError>>,
}

/// A write transaction. Every method of the store that changes state is on `Tx`; whatever one closure
/// passed to [`Store::write`] does commits together or not at all, with its events.
pub struct Tx<'c> {
    pub(crate) tx: rusqlite::Transaction<'c>,
    pub(crate) events: Vec<Event>,
    pub(crate) now: i64,
}

/// Read access: inside [`Store::read`], or [`Tx::reader`] to read within a write transaction.
pub struct Reader<'c> {
    pub(crate) conn: &'c Connection,
}

const READER_POOL: usize = 4;

impl Store {
    /// Opens (creating if needed) the database at `path` and migrates it to the latest schema.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::open_with(path, StoreOptions::default())
    }

    /// [`Store::open`] with explicit options.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut writer = open_connection(&path, false)?;
        schema::migrate(&mut writer, &path, schema::LATEST).map_err(|e| e.at(&path))?;
        Ok(Self {
            path,
            options,
            writer: Mutex::new(writer),
            readers: Mutex::new(Vec::new()),
            staged: Mutex::new(Staged::default()),
            unsynced: AtomicBool::new(false),
            hooks: RwLock::new(Vec::new()),
            rejected: Mutex::new(Vec::new()),
        })
    }

    /// Creates or migrates a database only up to `version` (for migration tests and tooling).
    pub fn create_at_version(path: impl AsRef<Path>, version: i64) -> Result<()> {
        let path = path.as_ref();
        if !(1..=schema::LATEST).contains(&version) {
            return Err(StoreError::Invalid(format!("schema version {version} is not in 1..={}", schema::LATEST)));
        }
        let mut conn = open_connection(path, false)?;
        schema::migrate(&mut conn, path, version).map_err(|e| e.at(path))?;
        Ok(())
    }

    /// The schema version this program writes.
    pub fn latest_schema_version() -> i64 {
        schema::LATEST
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version recorded in the database.
    pub fn schema_version(&self) -> Result<i64> {
        self.read(|r| Ok(schema::current_version(r.conn)?))
    }

    /// Adds a hook called after every commit that wrote events, after the hooks added before it
    /// (any number may subscribe). Hooks run while the writer is held, so commits are published in
    /// their order: they must be quick and must neither write to the store nor add hooks.
    pub fn add_event_hook(&self, hook: EventHook) {
        self.hooks.write().unwrap_or_else(PoisonError::into_inner).push(hook);
    }

    /// Runs `f` in one write transaction and commits. Staged part updates are committed first, in the same
    /// transaction, so writes keep their order. On error nothing of `f` is written.
    pub fn write<T>(&self, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        self.write_inner(false, f)
    }

    /// Releases what SQLite holds in memory for caching: the page caches of the writer and of the
    /// pooled read connections (`PRAGMA shrink_memory`). They refill from the file (and the
    /// system's file cache) as pages are read again; prepared statements are kept. For a process
    /// that has gone quiet: a busy one would only read the same pages back.
    pub fn release_memory(&self) {
        // Connections in use are left alone; a reader taken meanwhile is released next time.
        for conn in self.readers.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            conn.execute_batch("PRAGMA shrink_memory").ok();
        }
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        // A failure only leaves the cache as it was.
        writer.execute_batch("PRAGMA shrink_memory").ok();
    }

    /// Runs `f` against a read connection (a consistent snapshot). Staged part updates that have not
    /// been committed yet are not visible.
    pub fn read<T>(&self, f: impl FnOnce(&Reader<'_>) -> Result<T>) -> Result<T> {
        let conn = self.take_reader()?;
        let result = conn.execute_batch("BEGIN").map_err(StoreError::from).and_then(|()| {
            let out = f(&Reader { conn: &conn });
            conn.execute_batch("COMMIT")?;
            out
        });
        if result.is_err() && !conn.is_autocommit() {
            // A failed read only needs its snapshot released; the rollback error adds nothing.
            conn.execute_batch("ROLLBACK").ok();
        }
        self.return_reader(conn);
        result.map_err(|e| e.at(&self.path))
    }

    /// Stages the latest state of a part (typically a streaming text, reasoning or tool part). Updates
    /// to the same part coalesce; staged parts are committed every `flush_interval`, when `max_staged`
    /// parts wait, on the next [`Store::write`], or on [`Store::flush`]. Returns whether this call
    /// committed the batch.
    pub fn stage_part(&self, part: Part) -> Result<bool> {
        let due = {
            let mut staged = self.staged.lock().unwrap_or_else(PoisonError::into_inner);
            staged.put(part);
            staged.len() >= self.options.max_staged
                || staged.since.is_some_and(|since| since.elapsed() >= self.options.flush_interval)
        };
        if due {
            self.write(|_| Ok(()))?;
        }
        Ok(due)
    }

    /// Commits staged parts and makes every commit so far durable (fsync), before the step that produced
    /// them is reported finished. Fails with the first error of any staged part the store refused since
    /// the last flush (those parts were dropped; the others are written).
    pub fn flush(&self) -> Result<()> {
        if self.has_staged() || self.unsynced.load(Ordering::Acquire) {
            self.write_durable()?;
        }
        let mut rejected = self.rejected.lock().unwrap_or_else(PoisonError::into_inner);
        match rejected.drain(..).next() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    fn write_durable(&self) -> Result<()> {
        self.write_inner(true, |tx| {
            // A tiny write forces a WAL frame, whose FULL-synchronous commit fsyncs all earlier frames.
            tx.tx.execute(
                "INSERT INTO store_meta (key, value) VALUES ('flushes', 1)
                 ON CONFLICT (key) DO UPDATE SET value = value + 1",
                [],
            )?;
            Ok(())
        })
    }

    /// `PRAGMA integrity_check`: `"ok"` or SQLite's list of problems.
    pub fn integrity_check(&self) -> Result<String> {
        self.read(|r| {
            let lines: Vec<String> = r
                .conn
                .prepare("PRAGMA integrity_check")?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(lines.join("\n"))
        })
    }

    fn write_inner<T>(&self, durable: bool, f: impl FnOnce(&mut Tx<'_>) -> Result<T>) -> Result<T> {
        let conn = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let staged = self.staged.lock().unwrap_or_else(PoisonError::into_inner).take();
        if durable {
            conn.pragma_update(None, "synchronous", "FULL").map_err(|e| StoreError::sqlite(&self.path, e))?;
        }
        let result = self.run_transaction(&conn, &staged, f);
        if durable {
            // Back to NORMAL for ordinary commits; failing to switch back only costs speed.
            conn.pragma_update(None, "synchronous", "NORMAL").ok();
        }
        if let Ok((_, events)) = &result {
            // Published before the writer is released, so subscribers see commits in their order
            // (a second writer, such as a tool's progress, cannot publish its later commit first).
            self.publish(events);
        }
        drop(conn);
        match result {
            Ok((value, _)) => {
                self.unsynced.store(!durable, Ordering::Release);
                Ok(value)
            }
            Err(err) => {
                self.staged.lock().unwrap_or_else(PoisonError::into_inner).restore(staged);
                Err(err.at(&self.path))
            }
        }
    }

    fn run_transaction<T>(
        &self,
        conn: &Connection,
        staged: &[Part],
        f: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<(T, Vec<Event>)> {
        let tx = self.begin_immediate(conn)?;
        let mut tx = Tx { tx, events: Vec::new(), now: now_ms() };
        for part in staged {
            self.apply_staged(&mut tx, part)?;
        }
        let value = f(&mut tx)?;
        let Tx { tx, events, .. } = tx;
        tx.commit()?;
        Ok((value, events))
    }

    /// Writes one staged part in a savepoint. A part the store refuses (unknown message, illegal tool
    /// transition) is dropped and its error kept for [`Store::flush`], so that one bad update cannot block
    /// every later write; any other failure aborts the transaction and the batch is staged again.
    fn apply_staged(&self, tx: &mut Tx<'_>, part: &Part) -> Result<()> {
        let events = tx.events.len();
        tx.tx.execute_batch("SAVEPOINT staged_part")?;
        match tx.upsert_part(part) {
            Ok(()) => Ok(tx.tx.execute_batch("RELEASE staged_part")?),
            Err(err @ (StoreError::NotFound { .. } | StoreError::Conflict(_) | StoreError::Decode { .. })) => {
                tx.tx.execute_batch("ROLLBACK TO staged_part; RELEASE staged_part")?;
                tx.events.truncate(events);
                self.rejected.lock().unwrap_or_else(PoisonError::into_inner).push(err);
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// `BEGIN IMMEDIATE`, waiting out other processes' writes (SQLite's busy handler, then bounded retries
    /// for the cases the handler does not cover, such as WAL recovery).
    fn begin_immediate<'c>(&self, conn: &'c Connection) -> Result<rusqlite::Transaction<'c>> {
        let started = Instant::now();
        loop {
            let err = match rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate) {
                Ok(tx) => return Ok(tx),
                Err(err) => StoreError::from(err),
            };
            if !err.is_busy() {
                return Err(err);
            }
            if started.elapsed() >= self.options.busy_wait {
                let waited_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                return Err(StoreError::Busy { path: self.path.clone(), waited_ms });
            }
            std::thread::sleep(Duration::from_millis(fastrand::u64(1..10)));
        }
    }

    fn publish(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let hooks = self.hooks.read().unwrap_or_else(PoisonError::into_inner);
        for hook in hooks.iter() {
            hook(events);
        }
    }

    fn has_staged(&self) -> bool {
        self.staged.lock().unwrap_or_else(PoisonError::into_inner).len() > 0
    }

    fn take_reader(&self) -> Result<Connection> {
        let pooled = self.readers.lock().unwrap_or_else(PoisonError::into_inner).pop();
        match pooled {
            Some(conn) => Ok(conn),
            None => open_connection(&self.path, true),
        }
    }

    fn return_reader(&self, conn: Connection) {
        let mut pool = self.readers.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < READER_POOL {
            pool.push(conn);
        }
    }
}

impl<'c> Tx<'c> {
    /// Reads within this transaction (sees its own writes).
    pub fn reader(&self) -> Reader<'_> {
        Reader { conn: &self.tx }
    }

    /// The time (Unix ms) this transaction stamps on what it writes.
    pub fn now(&self) -> i64 {
        self.now
    }
}

/// Opens one connection with the store's pragmas. Corruption and newer schemas are detected by reading
/// before anything is written, so a damaged file is never modified.
fn open_connection(path: &Path, read_only: bool) -> Result<Connection> {
    if !read_only && path.exists() {
        // Checked through a read-only connection first: a read-write one would change a file that is
        // not ours on close (a WAL checkpoint), and another program's database must stay untouched.
        drop(open_connection(path, true)?);
    }
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| StoreError::Open {
                path: path.to_path_buf(),
                source: rusqlite::Error::InvalidPath(format!("{}: {e}", parent.display()).into()),
            })?;
        }
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|source| StoreError::Open { path: path.to_path_buf(), source })?;
    let sqlite = |e| StoreError::sqlite(path, e);
    conn.busy_timeout(Duration::from_secs(5)).map_err(sqlite)?;
    let version = schema::current_version(&conn).map_err(sqlite)?;
    schema::check_not_newer(path, version)?;
    schema::check_ours(&conn, path, version)?;
    if !read_only {
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(sqlite)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Invalid(format!(
                "{} cannot use write-ahead logging (journal mode {mode}); put it on a local disk",
                path.display()
            )));
        }
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sqlite)?;
    }
    conn.pragma_update(None, "foreign_keys", "ON").map_err(sqlite)?;
    conn.pragma_update(None, "cache_size", -16000).map_err(sqlite)?;
    Ok(conn)
}

/// Part updates waiting to be committed: the latest state per part, in first-staged order.
#[derive(Default)]
struct Staged {
    parts: Vec<Part>,
    since: Option<Instant>,
}

impl Staged {
    fn put(&mut self, part: Part) {
        match self.parts.iter_mut().find(|p| p.id == part.id) {
            Some(slot) => *slot = part,
            None => self.parts.push(part),
        }
        self.since.get_or_insert_with(Instant::now);
    }

    fn len(&self) -> usize {
        self.parts.len()
    }

    fn take(&mut self) -> Vec<Part> {
        self.since = None;
        std::mem::take(&mut self.parts)
    }

    /// Puts back parts whose commit failed, unless a newer state was staged meanwhile.
    fn restore(&mut self, parts: Vec<Part>) {
        for part in parts.into_iter().rev() {
            if !self.parts.iter().any(|p| p.id == part.id) {
                self.parts.insert(0, part);
            }
        }
        if !self.parts.is_empty() {
            self.since.get_or_insert_with(Instant::now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<Store>();
        assert_eq!(StoreOptions::default().max_staged, 256);
    }
}
