//! OpenAI ChatGPT Plus/Pro (Codex) sign-in: OAuth authorization code with PKCE (S256) and a local
//! callback server (reference/llm-protocols.md §11.2).
//!
//! 1. A callback server listens on `127.0.0.1:1455` (else `1457`); the browser opens
//!    `<issuer>/oauth/authorize?response_type=code&client_id&redirect_uri=http://localhost:<port>/auth/callback
//!    &scope=openid profile email offline_access&code_challenge&code_challenge_method=S256
//!    &id_token_add_organizations=true&codex_cli_simplified_flow=true&state&originator=opencode`.
//! 2. The callback checks `state` (random, 32 bytes) and reports `error`/`error_description`.
//! 3. `POST <issuer>/oauth/token` form `grant_type=authorization_code&code&redirect_uri&client_id&
//!    code_verifier` -> `{id_token, access_token, refresh_token, expires_in}`; the account id comes
//!    from the id token's claims. Stored as an `oauth` entry with `accountId`.
//! 4. Refresh: `POST <issuer>/oauth/token` form `grant_type=refresh_token&refresh_token&client_id`.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::future::BoxFuture;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use reqwest::Url;
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;

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
pub const PROVIDER_ID: &str = "openai";
/// The Codex CLI's OAuth client, which OpenCode uses.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
pub const SCOPE: &str = "openid profile email offline_access";
/// The ports the redirect URI may use (registered with the OAuth client), in order of preference.
pub const CALLBACK_PORTS: [u16; 2] = [1455, 1457];

/// Where the flow talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiEndpoints {
    /// `https://auth.openai.com`: `/oauth/authorize` and `/oauth/token` live under it.
    pub issuer: String,
    pub client_id: String,
    /// Tried in order for the local callback server.
    pub ports: Vec<u16>,
    /// How long to wait for the browser's callback.
    pub wait: Duration,
}

impl Default for OpenAiEndpoints {
    fn default() -> Self {
        Self {
            issuer: "https://auth.openai.com".to_owned(),
            client_id: CLIENT_ID.to_owned(),
            ports: CALLBACK_PORTS.to_vec(),
            wait: Duration::from_secs(5 * 60),
        }
    }
}

/// The OpenAI credential flows.
#[derive(Debug, Clone)]
pub struct OpenAiAuth {
    endpoints: Arc<OpenAiEndpoints>,
}

impl OpenAiAuth {
    pub fn new(endpoints: OpenAiEndpoints) -> Self {
        Self { endpoints: Arc::new(endpoints) }
    }

    fn token_url(&self) -> String {
        format!("{}/oauth/token", self.endpoints.issuer.trim_end_matches('/'))
    }

    async fn start(&self) -> Result<Authorization, AuthError> {
        let listener = bind(&self.endpoints.ports).await?;
        let port = listener.local_addr().map_err(|err| callback_port(&self.endpoints.ports, &err))?.port();
        let redirect_uri = format!("http://localhost:{port}/auth/callback");
        let pkce = Pkce::generate()?;
        let state = pkce::random_token(32)?;
        let endpoints = &self.endpoints;
        let url = pkce::url_with(
            &format!("{}/oauth/authorize", endpoints.issuer.trim_end_matches('/')),
            &[
                ("response_type", "code"),
                ("client_id", &endpoints.client_id),
                ("redirect_uri", &redirect_uri),
                ("scope", SCOPE),
                ("code_challenge", &pkce.challenge),
                ("code_challenge_method", "S256"),
                ("id_token_add_organizations", "true"),
                ("codex_cli_simplified_flow", "true"),
                ("state", &state),
                ("originator", "opencode"),
            ],
        )?;
        let this = self.clone();
        let wait = endpoints.wait;
        let instructions = format!("Authorize in the browser; it comes back to {redirect_uri}");
        let completion = async move {
            let code = tokio::time::timeout(wait, callback(&listener, &state))
                .await
                .map_err(|_| AuthError::TimedOut(wait.as_secs()))??;
            drop(listener);
            this.exchange(&code, &redirect_uri, &pkce.verifier).await
        };
        Ok(Authorization::new(url, None, instructions, Box::pin(completion)))
    }

    async fn exchange(&self, code: &str, redirect_uri: &str, verifier: &str) -> Result<AuthInfo, AuthError> {
        let body = pkce::form(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", &self.endpoints.client_id),
            ("code_verifier", verifier),
        ])?;
        let answer =
            pkce::post_token(super::http(), &self.token_url(), "application/x-www-form-urlencoded", body).await?;
        let account = answer.id_token.as_deref().and_then(account_id);
        Ok(answer.into_info(None, account))
    }

    async fn refresh(&self, refresh_token: String, account: Option<String>) -> Result<AuthInfo, AuthError> {
        let body = pkce::form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh_token),
            ("client_id", &self.endpoints.client_id),
        ])?;
        let answer =
            pkce::post_token(super::http(), &self.token_url(), "application/x-www-form-urlencoded", body).await?;
        let account = answer.id_token.as_deref().and_then(account_id).or(account);
        Ok(answer.into_info(Some(&refresh_token), account))
    }
}

impl AuthProvider for OpenAiAuth {
    fn provider(&self) -> &str {
        PROVIDER_ID
    }

    fn display_name(&self) -> &str {
        "OpenAI"
    }

    fn methods(&self) -> Vec<AuthMethod> {
        vec![
            AuthMethod { label: "ChatGPT Plus/Pro (browser)".to_owned(), kind: AuthMethodKind::Oauth },
            AuthMethod { label: "Manually enter API Key".to_owned(), kind: AuthMethodKind::Api },
        ]
    }

    fn authorize(&self, method: usize) -> BoxFuture<'_, Result<Authorization, AuthError>> {
        Box::pin(async move {
            match method {
                0 => self.start().await,
                other => Err(AuthError::NoSuchMethod(other)),
            }
        })
    }

    fn credentials<'a>(&'a self, store: &'a AuthStore) -> BoxFuture<'a, Result<Option<AuthInfo>, AuthError>> {
        Box::pin(pkce::refreshed(store, PROVIDER_ID, |token, account| Box::pin(self.refresh(token, account))))
    }
}

/// The built-in OpenAI auth plugin (the `auth` hook).
#[derive(Debug, Clone)]
pub struct OpenAiPlugin {
    auth: Arc<OpenAiAuth>,
}

impl OpenAiPlugin {
    pub fn new(endpoints: OpenAiEndpoints) -> Self {
        Self { auth: Arc::new(OpenAiAuth::new(endpoints)) }
    }
}

impl Plugin for OpenAiPlugin {
    fn namespace(&self) -> &str {
        "openai-auth"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::Auth])
    }

    fn auth(&self) -> Option<Arc<dyn AuthProvider>> {
        Some(Arc::clone(&self.auth) as Arc<dyn AuthProvider>)
    }
}

/// The ChatGPT account id of an id token: `chatgpt_account_id`, or the one inside the
/// `https://api.openai.com/auth` claim, or the first organization's id. The token's signature is
/// not checked: it came straight from the token endpoint over TLS.
pub fn account_id(id_token: &str) -> Option<String> {
    let payload = id_token.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?).ok()?;
    let text = |value: &Value| value.as_str().map(str::to_owned);
    claims
        .get("chatgpt_account_id")
        .and_then(text)
        .or_else(|| claims.get("https://api.openai.com/auth")?.get("chatgpt_account_id").and_then(text))
        .or_else(|| claims.get("organizations")?.get(0)?.get("id").and_then(text))
}

/// Binds the first free port of `ports` on 127.0.0.1.
async fn bind(ports: &[u16]) -> Result<TcpListener, AuthError> {
    let mut last = None;
    for port in ports {
        match TcpListener::bind(("127.0.0.1", *port)).await {
            Ok(listener) => return Ok(listener),
            Err(err) => last = Some(err),
        }
    }
    Err(callback_port(ports, &last.unwrap_or_else(|| std::io::Error::other("no port configured"))))
}

fn callback_port(ports: &[u16], err: &std::io::Error) -> AuthError {
    let ports = ports.iter().map(u16::to_string).collect::<Vec<_>>().join(" or ");
    AuthError::CallbackPort { ports, reason: err.to_string() }
}

/// Serves the callback until the browser brings `/auth/callback`: its code, or why it failed.
/// Other requests (a favicon, a probe) get 404 and the wait goes on.
async fn callback(listener: &TcpListener, state: &str) -> Result<String, AuthError> {
    loop {
        let (mut stream, _) =
            listener.accept().await.map_err(|err| AuthError::Callback(format!("cannot accept: {err}")))?;
        let Some(target) = request_target(&mut stream).await else {
            continue;
        };
        let Some(query) = target.strip_prefix("/auth/callback") else {
            respond(&mut stream, "404 Not Found", "Not found").await;
            continue;
        };
        let outcome = outcome(query, state);
        let page = match &outcome {
            Ok(_) => "Signed in to opencode. You can close this window.".to_owned(),
            Err(err) => format!("Sign-in failed: {err}"),
        };
        respond(&mut stream, if outcome.is_ok() { "200 OK" } else { "400 Bad Request" }, &page).await;
        return outcome;
    }
}

/// The code of a callback query (`?code=..&state=..` or `?error=..`).
fn outcome(query: &str, state: &str) -> Result<String, AuthError> {
    let url = Url::parse(&format!("http://localhost/{query}"))
        .map_err(|err| AuthError::Callback(format!("bad callback: {err}")))?;
    let param = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
    if let Some(error) = param("error") {
        return Err(AuthError::Denied(param("error_description").unwrap_or(error)));
    }
    if param("state").as_deref() != Some(state) {
        return Err(AuthError::StateMismatch);
    }
    param("code").filter(|code| !code.is_empty()).ok_or_else(|| AuthError::Callback("no code in the callback".into()))
}

/// The request target of an HTTP request's first line (`GET <target> HTTP/1.1`).
async fn request_target(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = vec![0; 8192];
    let mut read = 0;
    while !buffer[..read].windows(4).any(|window| window == b"\r\n\r\n") && read < buffer.len() {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer[read..])).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => read += n,
        }
    }
    let head = String::from_utf8_lossy(&buffer[..read]);
    let mut words = head.lines().next()?.split_whitespace();
    let (_method, target) = (words.next()?, words.next()?);
    Some(target.to_owned())
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><title>opencode</title><p>{}</p>", html_escape(text));
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The browser may already be gone; the outcome stands either way.
    let _ignored = stream.write_all(response.as_bytes()).await;
    let _ignored = stream.shutdown().await;
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(claims: &Value) -> String {
        format!("e30.{}.sig", URL_SAFE_NO_PAD.encode(claims.to_string()))
    }

    #[test]
    fn the_account_id_comes_from_the_first_claim_that_has_one() {
        use serde_json::json;
        assert_eq!(account_id(&token(&json!({"chatgpt_account_id": "a1"}))).as_deref(), Some("a1"));
        let nested = json!({"https://api.openai.com/auth": {"chatgpt_account_id": "a2"}});
        assert_eq!(account_id(&token(&nested)).as_deref(), Some("a2"));
        assert_eq!(account_id(&token(&json!({"organizations": [{"id": "org_3"}]}))).as_deref(), Some("org_3"));
        assert_eq!(account_id(&token(&json!({}))), None);
        assert_eq!(account_id("not-a-jwt"), None);
    }

    #[test]
    fn a_callback_yields_its_code_only_with_the_right_state() {
        assert_eq!(outcome("?code=c1&state=s1", "s1"), Ok("c1".to_owned()));
        assert_eq!(outcome("?code=c1&state=s2", "s1"), Err(AuthError::StateMismatch));
        assert_eq!(
            outcome("?error=access_denied&error_description=missing_codex_entitlement", "s1"),
            Err(AuthError::Denied("missing_codex_entitlement".to_owned()))
        );
    }
}
