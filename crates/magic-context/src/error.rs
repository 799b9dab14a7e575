//! Magic Context's errors: each says what failed and on what, in one line.

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("magic_context config: {0}")]
    Config(String),
    /// The state database could not be opened or used; Magic Context stays off (fails closed) and
    /// the built-in compaction keeps protecting the window.
    #[error("magic context state at {path}: {source}")]
    Open { path: String, source: rusqlite::Error },
    #[error("magic context state: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("magic context state: stored value unreadable: {0}")]
    Corrupt(String),
    #[error("magic context background work did not finish: {0}")]
    Background(String),
    /// A tool call the agent can correct.
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
