//! GitHub Copilot sign-in: the OAuth device-code flow (RFC 8628), as a built-in plugin.
//!
//! 1. `POST <device_code>` `{client_id, scope: "read:user"}` -> `{device_code, user_code,
//!    verification_uri, interval}`; the user opens the URL and types the code.
//! 2. Poll `POST <access_token>` with the device code: `authorization_pending` waits `interval`,
//!    `slow_down` waits longer (RFC 8628 §3.5), any other error fails.
//! 3. Current OpenCode sends the GitHub token itself as the bearer token (it does not expire:
//!    stored with `expires: 0`). With a token-exchange endpoint configured (the older flow), the
//!    GitHub token is stored as the refresh credential and exchanged for a short-lived Copilot token
//!    (`{token, expires_at}`), which [`CopilotAuth::credentials`] refreshes before it expires.
//!
//! Every endpoint is configurable, so tests run the flow against a local mock server.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use super::AuthError;
use super::AuthMethod;
use super::AuthMethodKind;
use super::AuthProvider;
use super::Authorization;
use super::now_ms;
use crate::hooks::ChatHeadersOutput;
use crate::hooks::ChatInput;
use crate::hooks::HookFuture;
use crate::hooks::HookName;
use crate::hooks::HookSet;
use crate::plugin::Plugin;

/// The provider id Copilot credentials are stored under.
pub const PROVIDER_ID: &str = "github-copilot";
/// OpenCode's current OAuth app.
pub const CLIENT_ID: &str = "Ov23li8tweQw6odWQebz";
/// Refresh an exchanged token this long before it expires.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// Where the flow talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotEndpoints {
    pub device_code: String,
    pub access_token: String,
    /// The Copilot token exchange (`copilot_internal/v2/token`); `None` uses the GitHub token directly.
    pub token_exchange: Option<String>,
    pub client_id: String,
    /// Added to the server's polling interval (OpenCode waits 3 s more than asked).
    pub poll_margin: Duration,
    /// How long a device code lives when the server does not say.
    pub expires_in: Duration,
}

impl CopilotEndpoints {
    /// github.com, the way current OpenCode signs in (no token exchange).
    pub fn github() -> Self {
        Self::under("https://github.com", None)
    }

    /// A GitHub Enterprise Server at `domain` (for example `github.acme.com`).
    pub fn enterprise(domain: &str) -> Self {
        Self::under(&format!("https://{domain}"), None)
    }

    /// Endpoints under `base` (`<base>/login/device/code`, `<base>/login/oauth/access_token`).
    pub fn under(base: &str, token_exchange: Option<String>) -> Self {
        let base = base.trim_end_matches('/');
        Self {
            device_code: format!("{base}/login/device/code"),
            access_token: format!("{base}/login/oauth/access_token"),
            token_exchange,
            client_id: CLIENT_ID.to_owned(),
            poll_margin: Duration::from_secs(3),
            expires_in: Duration::from_secs(900),
        }
    }
}

/// The Copilot credential flows.
#[derive(Debug, Clone)]
pub struct CopilotAuth {
    endpoints: Arc<CopilotEndpoints>,
}

impl CopilotAuth {
    pub fn new(endpoints: CopilotEndpoints) -> Self {
        Self { endpoints: Arc::new(endpoints) }
    }

    /// Exchanges a GitHub token for a Copilot token (the older flow).
    async fn exchange(&self, github_token: &str, url: &str) -> Result<AuthInfo, AuthError> {
        let request = super::http()
            .get(url)
            .bearer_auth(github_token)
            .header("Accept", "application/json")
            .header("Editor-Version", "vscode/1.105.1")
            .header("Editor-Plugin-Version", "copilot-chat/0.32.4")
            .header("Copilot-Integration-Id", "vscode-chat");
        let answer: CopilotToken = send(request, url).await?;
        Ok(AuthInfo::Oauth {
            refresh: github_token.to_owned(),
            access: answer.token,
            expires: answer.expires_at.saturating_mul(1000),
            account_id: None,
            enterprise_url: None,
        })
    }

    async fn start_device_flow(&self) -> Result<Authorization, AuthError> {
        let url = &self.endpoints.device_code;
        let request = super::http()
            .post(url)
            .header("Accept", "application/json")
            .header("Content-Type", "application/json")
            .body(json!({"client_id": self.endpoints.client_id, "scope": "read:user"}).to_string());
        let device: DeviceCode = send(request, url).await?;
        let instructions = format!("Open {} and enter the code {}", device.verification_uri, device.user_code);
        let this = self.clone();
        let poll = async move { this.poll(device.device_code, device.interval, device.expires_in).await };
        Ok(Authorization::new(device.verification_uri, Some(device.user_code), instructions, Box::pin(poll)))
    }

    async fn poll(self, device_code: String, interval: u64, expires_in: Option<u64>) -> Result<AuthInfo, AuthError> {
        let endpoints = &self.endpoints;
        let deadline = tokio::time::Instant::now() + expires_in.map_or(endpoints.expires_in, Duration::from_secs);
        let mut interval = Duration::from_secs(interval);
        let body = json!({
            "client_id": endpoints.client_id,
            "device_code": device_code,
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
        })
        .to_string();
        loop {
            tokio::time::sleep(interval + endpoints.poll_margin).await;
            if tokio::time::Instant::now() >= deadline {
                return Err(AuthError::Expired);
            }
            let url = &endpoints.access_token;
            let request = super::http()
                .post(url)
                .header("Accept", "application/json")
                .header("Content-Type", "application/json")
                .body(body.clone());
            let answer: Value = send(request, url).await?;
            if let Some(token) = answer.get("access_token").and_then(Value::as_str) {
                return match &endpoints.token_exchange {
                    Some(exchange) => self.exchange(token, exchange).await,
                    None => Ok(AuthInfo::Oauth {
                        refresh: token.to_owned(),
                        access: token.to_owned(),
                        expires: 0,
                        account_id: None,
                        enterprise_url: None,
                    }),
                };
            }
            match answer.get("error").and_then(Value::as_str) {
                Some("authorization_pending") => {}
                Some("slow_down") => {
                    let asked = answer.get("interval").and_then(Value::as_u64).map(Duration::from_secs);
                    interval = asked.unwrap_or(interval + Duration::from_secs(5));
                }
                Some("expired_token") => return Err(AuthError::Expired),
                Some(error) => {
                    let description = answer.get("error_description").and_then(Value::as_str).unwrap_or(error);
                    return Err(AuthError::Denied(description.to_owned()));
                }
                None => return Err(protocol(url, "neither `access_token` nor `error` in the answer")),
            }
        }
    }
}

impl AuthProvider for CopilotAuth {
    fn provider(&self) -> &str {
        PROVIDER_ID
    }

    fn display_name(&self) -> &str {
        "GitHub Copilot"
    }

    fn methods(&self) -> Vec<AuthMethod> {
        vec![AuthMethod { label: "Login with GitHub (device code)".to_owned(), kind: AuthMethodKind::Oauth }]
    }

    fn authorize(&self, method: usize) -> BoxFuture<'_, Result<Authorization, AuthError>> {
        Box::pin(async move {
            match method {
                0 => self.start_device_flow().await,
                other => Err(AuthError::NoSuchMethod(other)),
            }
        })
    }

    fn credentials<'a>(&'a self, store: &'a AuthStore) -> BoxFuture<'a, Result<Option<AuthInfo>, AuthError>> {
        Box::pin(async move {
            let stored = store.get(PROVIDER_ID).map_err(|err| AuthError::Store(err.to_string()))?;
            let Some(AuthInfo::Oauth { refresh, expires, .. }) = &stored else {
                return Ok(stored);
            };
            let margin = u64::try_from(REFRESH_MARGIN.as_millis()).unwrap_or(u64::MAX);
            let fresh = *expires == 0 || expires.saturating_sub(margin) > now_ms();
            let Some(exchange) = self.endpoints.token_exchange.as_deref().filter(|_| !fresh) else {
                return Ok(stored);
            };
            let renewed = self.exchange(refresh, exchange).await?;
            store.set(PROVIDER_ID, renewed.clone()).map_err(|err| AuthError::Store(err.to_string()))?;
            Ok(Some(renewed))
        })
    }
}

/// The built-in Copilot plugin: the `auth` hook, and the `chat.headers` Copilot expects.
#[derive(Debug, Clone)]
pub struct CopilotPlugin {
    auth: Arc<CopilotAuth>,
}

impl CopilotPlugin {
    pub fn new(endpoints: CopilotEndpoints) -> Self {
        Self { auth: Arc::new(CopilotAuth::new(endpoints)) }
    }
}

impl Plugin for CopilotPlugin {
    fn namespace(&self) -> &str {
        "copilot"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::Auth, HookName::ChatHeaders])
    }

    fn auth(&self) -> Option<Arc<dyn AuthProvider>> {
        Some(Arc::clone(&self.auth) as Arc<dyn AuthProvider>)
    }

    fn chat_headers<'a>(&'a self, input: &'a ChatInput, output: &'a mut ChatHeadersOutput) -> HookFuture<'a> {
        if input.model.provider_id == PROVIDER_ID {
            output.headers.insert("Openai-Intent".to_owned(), "conversation-edits".to_owned());
        }
        Box::pin(async { Ok(()) })
    }
}

#[derive(Deserialize)]
struct DeviceCode {
    device_code: String,
    user_code: String,
    verification_uri: String,
    #[serde(default = "default_interval")]
    interval: u64,
    #[serde(default)]
    expires_in: Option<u64>,
}

fn default_interval() -> u64 {
    5
}

#[derive(Deserialize)]
struct CopilotToken {
    token: String,
    /// Seconds since the Unix epoch.
    expires_at: u64,
}

/// Sends `request` and decodes a JSON answer; non-2xx answers are errors with their body.
pub(super) async fn send<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    url: &str,
) -> Result<T, AuthError> {
    let response =
        request.send().await.map_err(|err| AuthError::Http { url: url.to_owned(), reason: err.to_string() })?;
    let status = response.status();
    let body =
        response.bytes().await.map_err(|err| AuthError::Http { url: url.to_owned(), reason: err.to_string() })?;
    if !status.is_success() {
        let body = String::from_utf8_lossy(&body).chars().take(300).collect();
        return Err(AuthError::Status { url: url.to_owned(), status: status.as_u16(), body });
    }
    serde_json::from_slice(&body).map_err(|err| protocol(url, &err.to_string()))
}

pub(super) fn protocol(url: &str, reason: &str) -> AuthError {
    AuthError::Protocol { url: url.to_owned(), reason: reason.to_owned() }
}
