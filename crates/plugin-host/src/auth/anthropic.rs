//! Anthropic Claude Pro/Max sign-in: OAuth authorization code with PKCE (S256), the code pasted by
//! the user (reference/llm-protocols.md §11.1).
//!
//! 1. The browser opens `<authorize>?code=true&client_id&response_type=code&redirect_uri&scope&
//!    code_challenge&code_challenge_method=S256&state=<verifier>` (OpenCode sends the verifier as
//!    the state, and Anthropic's callback page displays `<code>#<state>`).
//! 2. The pasted `<code>#<state>` is exchanged: `POST <token>` JSON `{code, state, grant_type:
//!    "authorization_code", client_id, redirect_uri, code_verifier}` -> `{access_token,
//!    refresh_token, expires_in}`, stored as an `oauth` entry.
//! 3. Refresh: `POST <token>` JSON `{grant_type: "refresh_token", refresh_token, client_id}`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use serde_json::json;

use super::AuthError;
use super::AuthMethod;
use super::AuthMethodKind;
use super::AuthProvider;
use super::Authorization;
use super::pkce;
use super::pkce::Pkce;
use crate::hooks::HookName;
use crate::hooks::HookSet;
use crate::plugin::Plugin;

/// The provider id the credentials are stored under.
pub const PROVIDER_ID: &str = "anthropic";
/// Claude Code's OAuth client, which OpenCode uses.
pub const CLIENT_ID: &str = "9d1c250a-e61b-44d9-88ed-5944d1962f5e";
pub const SCOPE: &str = "org:create_api_key user:profile user:inference";

/// Where the flow talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicEndpoints {
    pub authorize: String,
    pub token: String,
    pub redirect_uri: String,
    pub client_id: String,
}

impl Default for AnthropicEndpoints {
    fn default() -> Self {
        Self {
            authorize: "https://claude.ai/oauth/authorize".to_owned(),
            token: "https://console.anthropic.com/v1/oauth/token".to_owned(),
            redirect_uri: "https://console.anthropic.com/oauth/code/callback".to_owned(),
            client_id: CLIENT_ID.to_owned(),
        }
    }
}

/// The Anthropic credential flows.
#[derive(Debug, Clone)]
pub struct AnthropicAuth {
    endpoints: Arc<AnthropicEndpoints>,
}

impl AnthropicAuth {
    pub fn new(endpoints: AnthropicEndpoints) -> Self {
        Self { endpoints: Arc::new(endpoints) }
    }

    fn start(&self) -> Result<Authorization, AuthError> {
        let pkce = Pkce::generate()?;
        let endpoints = &self.endpoints;
        let url = pkce::url_with(
            &endpoints.authorize,
            &[
                ("code", "true"),
                ("client_id", &endpoints.client_id),
                ("response_type", "code"),
                ("redirect_uri", &endpoints.redirect_uri),
                ("scope", SCOPE),
                ("code_challenge", &pkce.challenge),
                ("code_challenge_method", "S256"),
                ("state", &pkce.verifier),
            ],
        )?;
        let this = self.clone();
        let instructions = "Authorize in the browser, then paste the code it shows".to_owned();
        Ok(Authorization::with_code(url, instructions, move |pasted| {
            Box::pin(async move { this.exchange(&pasted, &pkce.verifier).await })
        }))
    }

    /// Exchanges a pasted `<code>#<state>` (or a bare code) for tokens.
    async fn exchange(&self, pasted: &str, verifier: &str) -> Result<AuthInfo, AuthError> {
        let (code, state) = pasted.split_once('#').unwrap_or((pasted, verifier));
        if state != verifier {
            return Err(AuthError::StateMismatch);
        }
        let endpoints = &self.endpoints;
        let body = json!({
            "code": code,
            "state": state,
            "grant_type": "authorization_code",
            "client_id": endpoints.client_id,
            "redirect_uri": endpoints.redirect_uri,
            "code_verifier": verifier,
        });
        let answer = pkce::post_token(super::http(), &endpoints.token, "application/json", body.to_string()).await?;
        Ok(answer.into_info(None, None))
    }

    async fn refresh(&self, refresh_token: String) -> Result<AuthInfo, AuthError> {
        let body = json!({"grant_type": "refresh_token", "refresh_token": refresh_token, "client_id": self.endpoints.client_id});
        let answer =
            pkce::post_token(super::http(), &self.endpoints.token, "application/json", body.to_string()).await?;
        Ok(answer.into_info(Some(&refresh_token), None))
    }
}

impl AuthProvider for AnthropicAuth {
    fn provider(&self) -> &str {
        PROVIDER_ID
    }

    fn display_name(&self) -> &str {
        "Anthropic"
    }

    fn methods(&self) -> Vec<AuthMethod> {
        vec![
            AuthMethod { label: "Claude Pro/Max (browser, paste the code)".to_owned(), kind: AuthMethodKind::Oauth },
            AuthMethod { label: "Manually enter API Key".to_owned(), kind: AuthMethodKind::Api },
        ]
    }

    fn authorize(&self, method: usize) -> BoxFuture<'_, Result<Authorization, AuthError>> {
        Box::pin(async move {
            match method {
                0 => self.start(),
                other => Err(AuthError::NoSuchMethod(other)),
            }
        })
    }

    fn credentials<'a>(&'a self, store: &'a AuthStore) -> BoxFuture<'a, Result<Option<AuthInfo>, AuthError>> {
        Box::pin(pkce::refreshed(store, PROVIDER_ID, |token, _| Box::pin(self.refresh(token))))
    }
}

/// The built-in Anthropic auth plugin (the `auth` hook).
#[derive(Debug, Clone)]
pub struct AnthropicPlugin {
    auth: Arc<AnthropicAuth>,
}

impl AnthropicPlugin {
    pub fn new(endpoints: AnthropicEndpoints) -> Self {
        Self { auth: Arc::new(AnthropicAuth::new(endpoints)) }
    }
}

impl Plugin for AnthropicPlugin {
    fn namespace(&self) -> &str {
        "anthropic-auth"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::Auth])
    }

    fn auth(&self) -> Option<Arc<dyn AuthProvider>> {
        Some(Arc::clone(&self.auth) as Arc<dyn AuthProvider>)
    }
}
