//! Which credential a provider uses: config `options.apiKey`, then `auth.json`, then the provider's
//! key variables from the catalog's `env` list.

use opencode_config::{AuthInfo, Env};

use crate::Provider;
use crate::route::key_variables;

/// A credential and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub value: String,
    pub origin: CredentialOrigin,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential").field("value", &"<redacted>").field("origin", &self.origin).finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialOrigin {
    /// `provider.<id>.options.apiKey`.
    Config,
    /// `auth.json` (or `OPENCODE_AUTH_CONTENT`).
    AuthFile,
    /// This environment variable.
    Env(String),
}

impl std::fmt::Display for CredentialOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Config => f.write_str("config"),
            Self::AuthFile => f.write_str("auth.json"),
            Self::Env(var) => write!(f, "${var}"),
        }
    }
}

/// The provider's credential, first found in order: config, `auth.json`, environment.
pub fn resolve(provider: &Provider, auth: Option<&AuthInfo>, env: &Env) -> Option<Credential> {
    if let Some(key) = provider.options.api_key.as_deref().filter(|key| !key.is_empty()) {
        return Some(Credential { value: key.to_owned(), origin: CredentialOrigin::Config });
    }
    if let Some(info) = auth.filter(|info| !info.api_key().is_empty()) {
        return Some(Credential { value: info.api_key().to_owned(), origin: CredentialOrigin::AuthFile });
    }
    let vars = key_variables(provider).unwrap_or_else(|| provider.env.clone());
    vars.into_iter().find_map(|var| {
        env.get(&var).map(|value| Credential { value: value.to_owned(), origin: CredentialOrigin::Env(var.clone()) })
    })
}
