//! The runtime's error type: a one-line cause plus a [`RuntimeError::hint`] saying what to do.

use opencode_catalog::CatalogError;
use opencode_llm::LlmError;
use opencode_session_store::StoreError;
use opencode_system_context::SystemContextError;

/// Everything that can go wrong while admitting or running a session.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The session store failed (or refused the write: unknown session, conflicting retry).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Configuration or stored credentials could not be read.
    #[error(transparent)]
    Config(#[from] opencode_config::ConfigError),
    /// The model could not be resolved into a route.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The provider failed and retrying did not help (or was not allowed).
    #[error("the provider failed: {0}")]
    Provider(LlmError),
    /// The System Context could not be rendered (unavailable sources at initialisation, a defect).
    #[error(transparent)]
    Context(#[from] SystemContextError),
    /// No model was named by the prompt, the session, the agent or the configuration.
    #[error("no model is selected for session {session}")]
    NoModel { session: String },
    /// The agent named by the prompt or session does not exist.
    #[error("unknown agent {name:?} (known: {known})")]
    UnknownAgent { name: String, known: String },
    /// A Location's tools could not be set up.
    #[error("tools unavailable: {0}")]
    Tools(String),
    /// The prompt is not usable.
    #[error("invalid prompt: {0}")]
    InvalidPrompt(String),
    /// Compaction could not produce a summary.
    #[error("compaction failed: {0}")]
    Compaction(String),
    /// The session's Location changed while the drain ran (it was moved); the new Location resumes it.
    #[error("session {session} moved to {directory} while it was running")]
    Moved { session: String, directory: String },
    /// The session runs a turn (or another change holds it) and the change must not race it.
    #[error("session {session} is busy")]
    Busy { session: String },
    /// A plugin's command failed (its one-line message).
    #[error("{0}")]
    Plugin(String),
    /// The data directory (database, snapshots, logs) could not be created.
    #[error("{0}")]
    DataDir(String),
    /// A background task of the runtime failed (a bug or a shutting-down runtime).
    #[error("internal runtime failure: {0}")]
    Internal(String),
}

/// `Result` with [`RuntimeError`].
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

impl RuntimeError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Store(err) => err.hint(),
            Self::Config(err) => err.hint(),
            Self::Catalog(err) => err.hint(),
            Self::Provider(err) => err.hint(),
            Self::Context(err) => err.hint(),
            Self::NoModel { .. } => "pass a model as provider/model, or set `model` in opencode.json",
            Self::UnknownAgent { .. } => "use one of the listed agents, or define it under `agent` in opencode.json",
            Self::Tools(_) => "check that the project directory and the data directory exist and are writable",
            Self::InvalidPrompt(_) => "send a prompt with text or at least one file",
            Self::Compaction(_) => "start a new session, or pick a model with a larger context window",
            Self::Moved { .. } => "run the session again; it continues in its new directory",
            Self::Busy { .. } => "wait until its turn ends, or interrupt it first",
            Self::Plugin(_) => "check the plugin's log",
            Self::DataDir(_) => "check that the data directory (XDG_DATA_HOME) is writable",
            Self::Internal(_) => "retry; if it persists, report it with the log",
        }
    }

    pub(crate) fn internal(err: impl std::fmt::Display) -> Self {
        Self::Internal(err.to_string())
    }
}
