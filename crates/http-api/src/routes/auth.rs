//! `PUT|DELETE /auth/{providerID}`: a provider's stored credentials in `auth.json` (the data dir's,
//! written atomically with mode 0600 by `opencode_config::AuthStore`; entries of other providers,
//! including kinds this version does not know, are kept). `/provider` and `/config/providers` read
//! the file at every request, so they show the provider `connected` (or not) at once; the runtime
//! reads it before every provider turn. With `OPENCODE_AUTH_CONTENT` set, that content replaces the
//! file when reading (as in OpenCode), so a change here shows only after it is unset.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Op;
use crate::error::ApiError;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::put("/auth/{providerID}", "auth.set", "Store a provider's credentials", set).body::<Auth>().returns_bool(),
        Op::delete("/auth/{providerID}", "auth.remove", "Remove a provider's stored credentials", remove)
            .returns_bool(),
    ]
}

/// `Auth`: one provider's credentials, as OpenCode stores them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum Auth {
    /// An API key.
    Api {
        key: String,
        #[serde(default)]
        metadata: Option<BTreeMap<String, String>>,
    },
    /// OAuth tokens; `expires` is milliseconds since the Unix epoch.
    Oauth {
        refresh: String,
        access: String,
        expires: u64,
        #[serde(rename = "accountId", default)]
        account_id: Option<String>,
        #[serde(rename = "enterpriseUrl", default)]
        enterprise_url: Option<String>,
    },
    /// A well-known remote configuration: `token` is exported as the environment variable `key`.
    Wellknown { key: String, token: String },
}

impl From<Auth> for AuthInfo {
    fn from(auth: Auth) -> Self {
        match auth {
            Auth::Api { key, metadata } => {
                let metadata =
                    metadata.map(|m| m.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))).collect());
                AuthInfo::Api { key, metadata }
            }
            Auth::Oauth { refresh, access, expires, account_id, enterprise_url } => {
                AuthInfo::Oauth { refresh, access, expires, account_id, enterprise_url }
            }
            Auth::Wellknown { key, token } => AuthInfo::Wellknown { key, token },
        }
    }
}

async fn set(
    State(s): State<AppState>,
    P(provider): P<String>,
    JsonBody(auth): JsonBody<Auth>,
) -> Result<Json<bool>, ApiError> {
    let provider = provider_id(provider)?;
    let store = store(&s);
    blocking(move || store.set(&provider, auth.into()).map_err(write_error)).await?;
    Ok(Json(true))
}

async fn remove(State(s): State<AppState>, P(provider): P<String>) -> Result<Json<bool>, ApiError> {
    let provider = provider_id(provider)?;
    let store = store(&s);
    // OpenCode answers `true` whether or not anything was stored.
    blocking(move || store.remove(&provider).map_err(write_error)).await?;
    Ok(Json(true))
}

fn store(s: &AppState) -> AuthStore {
    AuthStore::new(s.inner.paths.auth_file(), &s.inner.env)
}

/// A provider id: not blank, no control characters.
fn provider_id(provider: String) -> Result<String, ApiError> {
    if provider.trim().is_empty() || provider.chars().any(char::is_control) {
        return Err(ApiError::bad(format!("{provider:?} is not a provider id")));
    }
    Ok(provider)
}

/// The credentials file could not be read or written: a broken file is the user's to fix.
fn write_error(err: opencode_config::ConfigError) -> ApiError {
    match err {
        opencode_config::ConfigError::Parse { .. } => {
            ApiError::Conflict(format!("{err}; fix or remove the credentials file first"))
        }
        err => ApiError::Internal(format!("{err} ({})", err.hint())),
    }
}
