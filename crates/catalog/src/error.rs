//! Catalog errors: one-line causes naming the provider and model, with a hint.

/// Why a model cannot be found, loaded or routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error("unknown provider `{provider}`")]
    UnknownProvider { provider: String },
    #[error("unknown model `{provider}/{model}`")]
    UnknownModel { provider: String, model: String },
    #[error("`{reference}` is not a model reference (expected `provider/model`)")]
    BadReference { reference: String },
    #[error("model `{model}` has no variant `{variant}` (known: {known})")]
    UnknownVariant { model: String, variant: String, known: String },
    /// The model's package cannot be routed to any `opencode-llm` protocol.
    #[error("provider `{provider}` (model `{model}`, package {npm}) is not supported: {reason}")]
    Unsupported { provider: String, model: String, npm: String, reason: String },
    #[error("provider `{provider}` needs the environment variable {variable} for its URL")]
    MissingVariable { provider: String, variable: String },
    #[error("provider `{provider}`: {message}")]
    Route { provider: String, message: String },
    #[error("config for model `{provider}/{model}` is invalid: {message}")]
    InvalidModelConfig { provider: String, model: String, message: String },
    /// A stored sign-in expired and could not be refreshed.
    #[error("cannot refresh the `{provider}` sign-in: {reason}")]
    SignIn { provider: String, reason: String },
    /// A catalog document (snapshot, cache, download) could not be read.
    #[error("cannot load the model catalog from {origin}: {message}")]
    Load { origin: String, message: String },
}

impl CatalogError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::UnknownProvider { .. } | Self::UnknownModel { .. } => {
                "run `opencode models` to list models, or `opencode models --refresh` to update the catalog"
            }
            Self::BadReference { .. } => "write the model as provider/model, for example anthropic/claude-sonnet-4-5",
            Self::UnknownVariant { .. } => "pick one of the listed variants",
            Self::Unsupported { .. } => {
                "use another provider for this model, or configure it as OpenAI-compatible with `npm` and `api`"
            }
            Self::MissingVariable { .. } => "set the variable, or set `provider.<id>.options.baseURL` in config",
            Self::Route { .. } => "fix `provider.<id>` in config",
            Self::InvalidModelConfig { .. } => "fix `provider.<id>.models.<id>` in config",
            Self::SignIn { .. } => "sign in again with `opencode auth login <provider>` (the provider named above)",
            Self::Load { .. } => "check the network, or set OPENCODE_DISABLE_MODELS_FETCH to use the bundled snapshot",
        }
    }
}

impl From<opencode_config::RefreshError> for CatalogError {
    fn from(err: opencode_config::RefreshError) -> Self {
        Self::SignIn { provider: err.provider, reason: err.reason }
    }
}
