//! Configuration and credential errors: one-line causes naming the file, with a hint.

use std::path::PathBuf;

/// Why a config source or the credentials file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The text is not valid JSONC, or a value has the wrong type.
    #[error("{origin}:{line}:{column}: {message}")]
    Parse { origin: String, line: usize, column: usize, message: String },
    #[error("{path}: {reason}")]
    Read { path: PathBuf, reason: String },
    /// A `{file:...}` reference names a file that cannot be read.
    #[error("{origin}: bad file reference {reference}: {path} cannot be read ({reason})")]
    FileReference { origin: String, reference: String, path: PathBuf, reason: String },
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

impl ConfigError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Parse { .. } => "fix the file at that position (JSONC allows comments and trailing commas)",
            Self::Read { .. } => "check that the file exists and is readable",
            Self::FileReference { .. } => "create the referenced file or fix the path (relative to the config file)",
            Self::Invalid { .. } => "see https://opencode.ai/docs/config for the expected shape",
            Self::Write { .. } => "check the directory's permissions and free disk space",
        }
    }
}

/// A non-fatal finding (an unknown key, a deprecated spelling).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigWarning {
    pub origin: String,
    pub message: String,
}

impl std::fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}
