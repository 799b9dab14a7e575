//! Errors the agent answers requests with: JSON-RPC errors whose message says what failed and what
//! to do, in one line.

use agent_client_protocol::{Error, ErrorCode};
use opencode_session_runtime::RuntimeError;
use opencode_session_store::StoreError;

/// A request that could not be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AgentError {
    /// The parameters name something that does not fit (`-32602`).
    Invalid(String),
    /// The session or resource does not exist (`-32002`).
    NotFound(String),
    /// The request needs `initialize` first, or conflicts with the session's state (`-32600`).
    State(String),
    /// Something failed on our side (`-32603`).
    Internal(String),
}

impl AgentError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }

    pub(crate) fn unknown_session(id: &str) -> Self {
        Self::NotFound(format!("unknown session `{id}`; create one with session/new or list them with session/list"))
    }
}

impl From<RuntimeError> for AgentError {
    fn from(err: RuntimeError) -> Self {
        let message = format!("{err} ({})", err.hint());
        match err {
            RuntimeError::Store(StoreError::NotFound { kind: "session", id }) => Self::unknown_session(&id),
            RuntimeError::Store(StoreError::NotFound { .. }) => Self::NotFound(message),
            RuntimeError::UnknownAgent { .. } | RuntimeError::InvalidPrompt(_) | RuntimeError::Catalog(_) => {
                Self::Invalid(message)
            }
            _ => Self::Internal(message),
        }
    }
}

impl From<StoreError> for AgentError {
    fn from(err: StoreError) -> Self {
        RuntimeError::from(err).into()
    }
}

impl From<AgentError> for Error {
    fn from(err: AgentError) -> Self {
        let (code, message) = match err {
            AgentError::Invalid(message) => (ErrorCode::INVALID_PARAMS, message),
            AgentError::NotFound(message) => (ErrorCode::RESOURCE_NOT_FOUND, message),
            AgentError::State(message) => (ErrorCode::INVALID_REQUEST, message),
            AgentError::Internal(message) => (ErrorCode::INTERNAL_ERROR, message),
        };
        Error::new(code, message)
    }
}
