//! Which credential a provider uses: config `options.apiKey`, then `auth.json`, then the provider's
//! key variables from the catalog's `env` list.
//!
//! An `oauth` entry in `auth.json` is a subscription sign-in: besides its access token it carries a
//! [`SignIn`], which selects the provider's signed-in route where `opencode-llm` has one
//! (Anthropic, OpenAI, GitHub Copilot). Refreshing it before it expires is the caller's job
//! ([`opencode_config::CredentialRefresher`]).

use opencode_config::{AuthInfo, Env};
use opencode_llm::provider::SignIn;

use crate::Provider;
use crate::route::key_variables;

/// A credential and where it came from.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub value: String,
    pub origin: CredentialOrigin,
    /// Set for an OAuth sign-in (`value` is then its access token).
    pub sign_in: Option<SignIn>,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("value", &"<redacted>")
            .field("origin", &self.origin)
            .field("sign_in", &self.sign_in)
            .finish()
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
        return Some(Credential { value: key.to_owned(), origin: CredentialOrigin::Config, sign_in: None });
    }
    if let Some(info) = auth.filter(|info| !info.api_key().is_empty()) {
        return Some(Credential {
            value: info.api_key().to_owned(),
            origin: CredentialOrigin::AuthFile,
            sign_in: sign_in(info),
        });
    }
    let vars = key_variables(provider).unwrap_or_else(|| provider.env.clone());
    vars.into_iter().find_map(|var| {
        env.get(&var).map(|value| Credential {
            value: value.to_owned(),
            origin: CredentialOrigin::Env(var.clone()),
            sign_in: None,
        })
    })
}

/// The sign-in of an `oauth` entry.
pub fn sign_in(info: &AuthInfo) -> Option<SignIn> {
    match info {
        AuthInfo::Oauth { access, account_id, enterprise_url, .. } => Some(SignIn {
            access_token: access.clone(),
            account_id: account_id.clone(),
            enterprise_url: enterprise_url.clone(),
        }),
        AuthInfo::Api { .. } | AuthInfo::Wellknown { .. } => None,
    }
}
