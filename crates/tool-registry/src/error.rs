//! Tool failures: the ones the model can correct from, and the ones that end the call for good.

use std::path::PathBuf;

/// A tool call that did not succeed.
///
/// [`ToolError::Model`] failures (bad arguments, file not found, no match, a denied permission) are
/// settled as an error result the model reads and can correct from. [`ToolError::Fatal`] failures are
/// faults of the host (an I/O error in our own storage, a broken invariant) and end the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model can act on this message.
    #[error("{0}")]
    Model(String),
    /// A permission was denied by a rule or rejected by the user; the model sees the message.
    #[error("{message}")]
    Permission { message: String, kind: PermissionFailure },
    /// The call was interrupted before it succeeded.
    #[error("the tool call was interrupted")]
    Interrupted,
    /// A host fault: the call cannot be settled as the model's mistake.
    #[error("{0}")]
    Fatal(String),
}

/// Why a permission check failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionFailure {
    /// A configured rule denies it.
    Denied,
    /// The user declined the request (a permission ask or a question) without a word: the turn
    /// halts, as in OpenCode.
    Rejected,
    /// The user declined with feedback: the model continues with it.
    Corrected,
}

impl ToolError {
    /// A model-correctable failure.
    pub fn model(message: impl Into<String>) -> Self {
        Self::Model(message.into())
    }

    /// A host fault.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::Fatal(message.into())
    }

    /// Whether the user's refusal ends the turn (the call fails and no further provider turn runs).
    pub fn halts_turn(&self) -> bool {
        matches!(self, Self::Permission { kind: PermissionFailure::Rejected, .. })
    }

    /// Whether the model sees this failure as a tool result (everything but host faults).
    pub fn is_model_visible(&self) -> bool {
        !matches!(self, Self::Fatal(_))
    }

    /// What the user (or the model) can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Model(_) => "the model can retry with corrected arguments",
            Self::Permission { kind: PermissionFailure::Denied, .. } => {
                "change the `permission` configuration to allow this call"
            }
            Self::Permission { kind: PermissionFailure::Rejected, .. } => "the user declined; the turn stops here",
            Self::Permission { kind: PermissionFailure::Corrected, .. } => "the user declined; continue as they said",
            Self::Interrupted => "the call was stopped; run it again if still needed",
            Self::Fatal(_) => "this is a host failure; check the logs and the data directory",
        }
    }
}

/// A problem with a tool registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("invalid tool name `{0}`: names match ^[A-Za-z][A-Za-z0-9_-]{{0,63}}$")]
    InvalidName(String),
    #[error("cannot prepare the tool output directory {}: {reason}", path.display())]
    OutputDir { path: PathBuf, reason: String },
    #[error("cannot build the HTTP client: {0}")]
    HttpClient(String),
}

impl RegistryError {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::InvalidName(_) => "rename the tool: a letter, then up to 63 letters, digits, `_` or `-`",
            Self::OutputDir { .. } => "check that the data directory exists and is writable",
            Self::HttpClient(_) => "check the TLS setup of this build (rustls with the ring provider)",
        }
    }
}

pub(crate) fn io_model_error(what: &str, path: &std::path::Path, err: &std::io::Error) -> ToolError {
    match err.kind() {
        std::io::ErrorKind::NotFound => ToolError::model(format!("File not found: {}", path.display())),
        std::io::ErrorKind::PermissionDenied => {
            ToolError::model(format!("Cannot {what} {}: permission denied by the operating system", path.display()))
        }
        _ => ToolError::model(format!("Cannot {what} {}: {err}", path.display())),
    }
}
