//! The CLI's top error: a one-line cause and a hint.

use opencode_catalog::CatalogError;
use opencode_config::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("{message}")]
    Usage { message: String, hint: &'static str },
    #[error("{0}")]
    Io(String),
}

impl CliError {
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Config(err) => err.hint(),
            Self::Catalog(err) => err.hint(),
            Self::Usage { hint, .. } => hint,
            Self::Io(_) => "check that the terminal or file is readable and writable",
        }
    }

    pub fn usage(message: impl Into<String>, hint: &'static str) -> Self {
        Self::Usage { message: message.into(), hint }
    }
}
