//! The CLI's top error: a one-line cause and a hint.

use opencode_catalog::CatalogError;
use opencode_config::ConfigError;
use opencode_session_runtime::RuntimeError;
use opencode_session_store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Serve(#[from] opencode_http_api::ServeError),
    #[error("{message}")]
    Usage { message: String, hint: &'static str },
    /// A run that ended in failure; the cause and hint come from the runtime.
    #[error("{message}")]
    Failed { message: String, hint: String },
    /// A run stopped by the user (Ctrl-C); exits 130 like a shell.
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Io(String),
}

impl CliError {
    pub fn hint(&self) -> &str {
        match self {
            Self::Config(err) => err.hint(),
            Self::Catalog(err) => err.hint(),
            Self::Runtime(err) => err.hint(),
            Self::Store(err) => err.hint(),
            Self::Serve(err) => err.hint(),
            Self::Usage { hint, .. } => hint,
            Self::Failed { hint, .. } => hint,
            Self::Interrupted => "admitted prompts stay pending; `opencode run -c` continues the session",
            Self::Io(_) => "check that the terminal or file is readable and writable",
        }
    }

    pub fn usage(message: impl Into<String>, hint: &'static str) -> Self {
        Self::Usage { message: message.into(), hint }
    }

    /// The process exit code: 130 after an interrupt, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        if matches!(self, Self::Interrupted) { 130 } else { 1 }
    }
}
