//! Why composing, observing or rendering a System Context failed.

use std::fmt;

use crate::key::SourceKey;

/// Which renderer produced a bad rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendering {
    Baseline,
    Update,
    Removal,
}

impl fmt::Display for Rendering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Baseline => "baseline",
            Self::Update => "update",
            Self::Removal => "removal",
        })
    }
}

/// A System Context failure. Display is a one-line cause; [`SystemContextError::hint`] says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SystemContextError {
    #[error("invalid context source key `{key}`: {reason}")]
    InvalidKey { key: String, reason: &'static str },
    #[error("duplicate context source key `{key}`")]
    DuplicateKey { key: SourceKey },
    #[error("a system context contribution with key `{key}` is already registered")]
    DuplicateContribution { key: SourceKey },
    #[error("system context initialization blocked by unavailable sources: {}", join(keys))]
    InitializationBlocked { keys: Vec<SourceKey> },
    #[error("context source `{key}` rendered an empty {rendering}")]
    EmptyRendering { key: SourceKey, rendering: Rendering },
    #[error("context source `{key}` cannot encode its value as JSON: {reason}")]
    Encode { key: SourceKey, reason: String },
    #[error("the stored context snapshot cannot be read: {reason}")]
    Snapshot { reason: String },
}

impl SystemContextError {
    /// What the caller (or the user) can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::InvalidKey { .. } => "use a lowercase namespaced key such as `core/date` or `plugin.name/source`",
            Self::DuplicateKey { .. } => {
                "give every context source its own key; two contributions provide the same one"
            }
            Self::DuplicateContribution { .. } => {
                "revoke the existing contribution first, or register under another key"
            }
            Self::InitializationBlocked { .. } => {
                "the input stays pending; it is retried at the next boundary once the sources can be observed"
            }
            Self::EmptyRendering { .. } | Self::Encode { .. } => {
                "this is a bug in the context source; report it with the source key"
            }
            Self::Snapshot { .. } => "start a new context epoch (compact or switch model) to render a fresh baseline",
        }
    }

    /// Whether this is the expected "some source is unavailable right now" outcome rather than a defect.
    pub fn is_blocked(&self) -> bool {
        matches!(self, Self::InitializationBlocked { .. })
    }
}

fn join(keys: &[SourceKey]) -> String {
    keys.iter().map(SourceKey::as_str).collect::<Vec<_>>().join(", ")
}
