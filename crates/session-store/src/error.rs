//! The store's error type: a one-line cause plus a [`StoreError::hint`] saying what to do.

use std::path::Path;
use std::path::PathBuf;

use rusqlite::ErrorCode;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file cannot be opened or created (permissions, missing directory, disk full).
    #[error("cannot open session database {}: {source}", path.display())]
    Open { path: PathBuf, source: rusqlite::Error },
    /// The file is not a SQLite database, or SQLite found it damaged.
    #[error("session database {} is unreadable or corrupt: {detail}", path.display())]
    Corrupt { path: PathBuf, detail: String },
    /// The database was written by a newer version of the program.
    #[error("session database {} has schema version {found}, newer than this program knows ({known})", path.display())]
    NewerSchema { path: PathBuf, found: i64, known: i64 },
    /// The file is another program's SQLite database (tables of its own, none of ours).
    #[error("{} is not this program's session database (it holds other tables: {tables}…); it was left untouched", path.display())]
    Foreign { path: PathBuf, tables: String },
    /// OpenCode's data, to import from, is missing or unreadable.
    #[error("cannot import from {}: {detail}", path.display())]
    ImportSource { path: PathBuf, detail: String },
    /// A row the caller named does not exist.
    #[error("{kind} {id} not found")]
    NotFound { kind: &'static str, id: String },
    /// The write contradicts what is stored (an id reused for different content, an illegal transition).
    #[error("{0}")]
    Conflict(String),
    /// The caller passed something the store cannot accept.
    #[error("invalid input: {0}")]
    Invalid(String),
    /// Another process kept the database locked for longer than the store waits.
    #[error("session database {} stayed locked by another process for {waited_ms} ms", path.display())]
    Busy { path: PathBuf, waited_ms: u64 },
    /// Any other SQLite failure.
    #[error("session database {}: {source}", path.display())]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    /// A stored JSON value does not decode into the expected shape.
    #[error("stored {what} does not decode: {source}")]
    Decode { what: &'static str, source: serde_json::Error },
}

/// `Result` with [`StoreError`].
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Open { .. } => "check that the data directory exists and is writable, or set another database path",
            Self::Corrupt { .. } => {
                "move the file aside (keep it for recovery with `sqlite3 <file> .recover`) and start again; \
                 the store never overwrites it"
            }
            Self::NewerSchema { .. } => "upgrade opencode, or point it at another database file",
            Self::Foreign { .. } => {
                "this program keeps its sessions in its own file, opencode-rs.db; point it at that file, or \
                 move the other one away if it was put there by mistake"
            }
            Self::ImportSource { .. } => {
                "OpenCode keeps its data in ~/.local/share/opencode (opencode.db, or storage/ before 1.2); \
                 check that the path is right and readable; nothing was changed there"
            }
            Self::NotFound { .. } => "list what exists and use one of those ids",
            Self::Conflict(_) => "use a new id, or repeat the original request exactly",
            Self::Invalid(_) => "fix the request",
            Self::Busy { .. } => "another opencode process holds a long write; retry, or stop the other process",
            Self::Sqlite { .. } => "retry; if it persists, check free disk space and file permissions",
            Self::Decode { .. } => "the row was written by an incompatible program; report it with the row id",
        }
    }

    pub(crate) fn not_found(kind: &'static str, id: impl Into<String>) -> Self {
        Self::NotFound { kind, id: id.into() }
    }

    /// Maps a SQLite failure on `path`, recognising corruption.
    pub(crate) fn sqlite(path: &Path, source: rusqlite::Error) -> Self {
        match source.sqlite_error_code() {
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                Self::Corrupt { path: path.to_path_buf(), detail: source.to_string() }
            }
            _ => Self::Sqlite { path: path.to_path_buf(), source },
        }
    }

    /// Names the database file in an error raised by code that did not know it.
    pub(crate) fn at(self, path: &Path) -> Self {
        match self {
            Self::Sqlite { path: unnamed, source } if unnamed.as_os_str().is_empty() => Self::sqlite(path, source),
            other => other,
        }
    }

    /// Whether this is SQLite's "busy"/"locked" condition (worth waiting for).
    pub(crate) fn is_busy(&self) -> bool {
        matches!(self, Self::Sqlite { source, .. }
            if matches!(source.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)))
    }

    pub(crate) fn decode(what: &'static str) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| Self::Decode { what, source }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(source: rusqlite::Error) -> Self {
        Self::Sqlite { path: PathBuf::new(), source }
    }
}
