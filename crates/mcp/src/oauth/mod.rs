//! OAuth for remote MCP servers, as OpenCode does it (MCP authorization specification):
//!
//! - a server that answers 401 names its protected resource metadata (RFC 9728) in
//!   `WWW-Authenticate`; that names the authorization server, whose metadata (RFC 8414 / OpenID
//!   Connect discovery) gives the endpoints ([`discovery`]);
//! - without a configured `clientId` the client registers itself (RFC 7591) and the registration is
//!   stored; the authorization-code flow runs with PKCE S256 and a loopback redirect
//!   (`http://127.0.0.1:19876/mcp/oauth/callback` unless configured) ([`authorize`]), or in two
//!   steps for clients that receive the code themselves ([`start`], then
//!   [`PendingAuthorization::finish`]);
//! - tokens live per server in `mcp-auth.json` ([`McpAuthStore`]) and are sent as
//!   `Authorization: Bearer`; an expired token is refreshed before connecting, and once more when
//!   the server still answers 401 ([`Credentials`]).

mod callback;
mod discovery;
mod http;
mod store;
mod tokens;

use std::time::Duration;

use indexmap::IndexMap;
use opencode_config::McpConfig;
use opencode_config::McpOAuthConfig;
use opencode_config::McpServerConfig;

pub(crate) use discovery::Challenge;
pub(crate) use http::client;
pub use store::AuthStatus;
pub use store::MCP_AUTH_FILE;
pub use store::McpAuthEntry;
pub use store::McpAuthStore;
pub use store::McpClientInfo;
pub use store::McpTokens;

use crate::error::McpError;
use callback::Callback;
use discovery::discover;
use tokens::Client;
use tokens::CodeGrant;
use tokens::Pkce;

/// OpenCode's loopback callback port.
pub const DEFAULT_CALLBACK_PORT: u16 = 19876;
/// OpenCode's callback path.
pub const CALLBACK_PATH: &str = "/mcp/oauth/callback";
/// How long `opencode mcp auth` waits for the browser (OpenCode: 5 minutes).
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The resolved `mcp.<name>.oauth` settings of a server with OAuth enabled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scope: Option<String>,
    pub redirect_uri: String,
}

impl OAuthSettings {
    pub fn from_config(config: &McpOAuthConfig) -> Self {
        let port = config.callback_port.unwrap_or(DEFAULT_CALLBACK_PORT);
        Self {
            client_id: config.client_id.clone().filter(|id| !id.is_empty()),
            client_secret: config.client_secret.clone().filter(|secret| !secret.is_empty()),
            scope: config.scope.clone(),
            redirect_uri: config
                .redirect_uri
                .clone()
                .unwrap_or_else(|| format!("http://127.0.0.1:{port}{CALLBACK_PATH}")),
        }
    }
}

impl Default for OAuthSettings {
    fn default() -> Self {
        Self::from_config(&McpOAuthConfig::default())
    }
}

/// A remote server that may be authorized with OAuth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthTarget {
    pub name: String,
    pub url: String,
    pub headers: IndexMap<String, String>,
    pub settings: OAuthSettings,
}

impl OAuthTarget {
    /// The target of config entry `mcp.<name>`: a remote server whose `oauth` is not `false`.
    pub fn from_config(name: &str, entry: &McpConfig) -> Result<Self, McpError> {
        let refuse = |reason: &str| McpError::OAuthUnsupported { server: name.to_owned(), reason: reason.to_owned() };
        let McpConfig::Server(McpServerConfig::Remote { url, headers, oauth, .. }) = entry else {
            return Err(refuse("OAuth applies to remote servers only (`type: \"remote\"`)"));
        };
        let settings = match oauth {
            None => OAuthSettings::default(),
            Some(oauth) => {
                let config =
                    oauth.settings().ok_or_else(|| refuse("OAuth is disabled for this server (`oauth: false`)"))?;
                OAuthSettings::from_config(&config)
            }
        };
        Ok(Self { name: name.to_owned(), url: url.clone(), headers: headers.clone(), settings })
    }
}

/// How [`authorize`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authorization {
    /// Tokens were obtained and stored.
    Authorized,
    /// The server accepted an unauthenticated request: nothing to do.
    NotRequired,
}

/// How [`start`] ended.
#[derive(Debug)]
pub enum Started {
    /// The user is to visit the authorization URL; the flow ends with [`PendingAuthorization::finish`].
    Pending(Box<PendingAuthorization>),
    /// The server accepted an unauthenticated request: nothing to do.
    NotRequired,
}

/// An authorization-code flow waiting for its code: what the code exchange needs (endpoint,
/// client, PKCE verifier), kept in memory between the two steps.
pub struct PendingAuthorization {
    /// Where the user signs in.
    pub authorization_url: String,
    /// The `state` the redirect carries back.
    pub state: String,
    target: OAuthTarget,
    http: reqwest::Client,
    token_endpoint: String,
    resource: String,
    client: Client,
    verifier: String,
}

impl std::fmt::Debug for PendingAuthorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The verifier is a secret.
        f.debug_struct("PendingAuthorization")
            .field("server", &self.target.name)
            .field("authorization_url", &self.authorization_url)
            .finish_non_exhaustive()
    }
}

impl PendingAuthorization {
    /// Exchanges the authorization `code` for tokens and stores them in `store`.
    pub async fn finish(self, code: &str, store: &McpAuthStore) -> Result<(), McpError> {
        let grant = CodeGrant {
            code,
            verifier: &self.verifier,
            redirect_uri: &self.target.settings.redirect_uri,
            resource: &self.resource,
        };
        let tokens = tokens::exchange(&self.http, &self.token_endpoint, &self.client, &grant).await?;
        store.update(&self.target.name, Some(&self.target.url), |entry| {
            entry.tokens = Some(tokens);
            entry.code_verifier = None;
            entry.oauth_state = None;
        })?;
        Ok(())
    }
}

/// Starts the authorization-code flow for `target` without waiting for the browser: discovery,
/// registration when needed (stored in `store`), PKCE and the authorization URL. OpenCode's
/// `POST /mcp/{name}/auth`; the code arrives later ([`PendingAuthorization::finish`]).
pub async fn start(target: &OAuthTarget, store: &McpAuthStore) -> Result<Started, McpError> {
    let http = client()?;
    let Some(challenge) = probe(&http, target).await? else { return Ok(Started::NotRequired) };
    begin(http, target, store, &challenge).await.map(|pending| Started::Pending(Box::new(pending)))
}

/// Runs the authorization-code flow for `target`: discovery, registration when needed, the
/// authorization URL (given to `on_url` to print or open), the loopback callback (within
/// `timeout`), the code exchange; the tokens are stored in `store`.
pub async fn authorize(
    target: &OAuthTarget,
    store: &McpAuthStore,
    timeout: Duration,
    on_url: impl FnOnce(&str),
) -> Result<Authorization, McpError> {
    let http = client()?;
    let Some(challenge) = probe(&http, target).await? else { return Ok(Authorization::NotRequired) };
    // Listening before the URL exists: the browser may come back at once.
    let callback = Callback::bind(&target.settings.redirect_uri).await?;
    let pending = begin(http, target, store, &challenge).await?;
    on_url(&pending.authorization_url);
    let code = tokio::time::timeout(timeout, callback.code(&pending.state))
        .await
        .map_err(|_elapsed| McpError::Auth(format!("no authorization arrived within {} s", timeout.as_secs())))??;
    pending.finish(&code, store).await?;
    Ok(Authorization::Authorized)
}

/// The steps between the challenge and the browser: discovery, the client, PKCE, the URL.
async fn begin(
    http: reqwest::Client,
    target: &OAuthTarget,
    store: &McpAuthStore,
    challenge: &Challenge,
) -> Result<PendingAuthorization, McpError> {
    let settings = &target.settings;
    let discovery = discover(&http, &target.url, challenge).await?;
    let scope = settings.scope.clone().or(discovery.scope.clone());
    let client = client_for(&http, target, store, &discovery, scope.as_deref()).await?;
    let pkce = Pkce::generate()?;
    let state = tokens::random_token(16)?;
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client.id.as_str()),
        ("redirect_uri", settings.redirect_uri.as_str()),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", discovery.resource.as_str()),
    ];
    if let Some(scope) = &scope {
        pairs.push(("scope", scope));
    }
    let authorization_url = http::url_with(&discovery.metadata.authorization_endpoint, &pairs)?;
    Ok(PendingAuthorization {
        authorization_url,
        state,
        target: target.clone(),
        http,
        token_endpoint: discovery.metadata.token_endpoint.clone(),
        resource: discovery.resource.clone(),
        client,
        verifier: pkce.verifier,
    })
}

/// The stored credentials of one server while connecting.
pub(crate) struct Credentials<'a> {
    pub target: &'a OAuthTarget,
    pub store: &'a McpAuthStore,
    pub http: &'a reqwest::Client,
}

impl Credentials<'_> {
    /// The tokens to send, refreshed first when expired; `None` when there are none usable.
    pub(crate) async fn current(&self) -> Option<McpTokens> {
        let entry = match self.store.get_for_url(&self.target.name, &self.target.url) {
            Ok(entry) => entry?,
            Err(err) => {
                tracing::warn!(server = %self.target.name, "stored MCP credentials unreadable: {err}");
                return None;
            }
        };
        let tokens = entry.tokens?;
        if !tokens.is_expired() {
            return Some(tokens);
        }
        self.refresh(&tokens, &Challenge::default()).await
    }

    /// New tokens from the refresh token (stored on success); `None` when that is impossible.
    pub(crate) async fn refresh(&self, tokens: &McpTokens, challenge: &Challenge) -> Option<McpTokens> {
        let refresh_token = tokens.refresh_token.as_deref()?;
        match self.try_refresh(refresh_token, challenge).await {
            Ok(fresh) => Some(fresh),
            Err(err) => {
                tracing::warn!(server = %self.target.name, "MCP token refresh failed: {err}");
                None
            }
        }
    }

    async fn try_refresh(&self, refresh_token: &str, challenge: &Challenge) -> Result<McpTokens, McpError> {
        let client = match configured_client(&self.target.settings) {
            Some(client) => client,
            None => {
                let entry = self.store.get_for_url(&self.target.name, &self.target.url)?;
                let info = entry.and_then(|entry| entry.client_info);
                Client::from(&info.ok_or_else(|| McpError::Auth("no registered client to refresh with".into()))?)
            }
        };
        let discovery = discover(self.http, &self.target.url, challenge).await?;
        let fresh =
            tokens::refresh(self.http, &discovery.metadata.token_endpoint, &client, refresh_token, &discovery.resource)
                .await?;
        let stored = fresh.clone();
        self.store.update(&self.target.name, Some(&self.target.url), |entry| entry.tokens = Some(stored))?;
        Ok(fresh)
    }
}

fn configured_client(settings: &OAuthSettings) -> Option<Client> {
    settings.client_id.as_ref().map(|id| Client { id: id.clone(), secret: settings.client_secret.clone() })
}

/// The configured client, else the one registered earlier for this URL, else a new registration.
async fn client_for(
    http: &reqwest::Client,
    target: &OAuthTarget,
    store: &McpAuthStore,
    discovery: &discovery::Discovery,
    scope: Option<&str>,
) -> Result<Client, McpError> {
    if let Some(client) = configured_client(&target.settings) {
        return Ok(client);
    }
    let stored = store.get_for_url(&target.name, &target.url)?.and_then(|entry| entry.client_info);
    if let Some(info) = stored.filter(|info| !info.is_expired()) {
        return Ok(Client::from(&info));
    }
    let endpoint = discovery.metadata.registration_endpoint.as_deref().ok_or(McpError::NeedsClientRegistration)?;
    let info = tokens::register(http, endpoint, &target.settings.redirect_uri, scope).await?;
    let client = Client::from(&info);
    store.update(&target.name, Some(&target.url), |entry| entry.client_info = Some(info))?;
    Ok(client)
}

/// Asks the server without credentials: `Some(challenge)` when it wants authorization.
async fn probe(http: &reqwest::Client, target: &OAuthTarget) -> Result<Option<Challenge>, McpError> {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "opencode", "version": env!("CARGO_PKG_VERSION")}},
    });
    let post = with_headers(http.post(&target.url), &target.headers)
        .header(::http::header::ACCEPT, "application/json, text/event-stream")
        .header(::http::header::CONTENT_TYPE, "application/json")
        .body(initialize.to_string());
    let response = post.send().await.map_err(|err| McpError::Auth(format!("cannot reach {}: {err}", target.url)))?;
    if let Some(challenge) = challenge_of(&response) {
        return Ok(Some(challenge));
    }
    if response.status().is_success() {
        return Ok(None);
    }
    // A legacy HTTP+SSE server refuses the POST; its SSE stream is what asks for authorization.
    let get = with_headers(http.get(&target.url), &target.headers).header(::http::header::ACCEPT, "text/event-stream");
    let response = get.send().await.map_err(|err| McpError::Auth(format!("cannot reach {}: {err}", target.url)))?;
    Ok(challenge_of(&response))
}

fn challenge_of(response: &reqwest::Response) -> Option<Challenge> {
    let header = || {
        response
            .headers()
            .get(::http::header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
    };
    match response.status() {
        reqwest::StatusCode::UNAUTHORIZED => Some(Challenge::parse(header())),
        reqwest::StatusCode::FORBIDDEN if !header().is_empty() => Some(Challenge::parse(header())),
        _ => None,
    }
}

fn with_headers(mut request: reqwest::RequestBuilder, headers: &IndexMap<String, String>) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    request
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(oauth: serde_json::Value) -> Result<OAuthTarget, McpError> {
        let mut entry = serde_json::json!({"type": "remote", "url": "https://x.test/mcp"});
        if !oauth.is_null() {
            entry["oauth"] = oauth;
        }
        let entry: McpConfig = serde_json::from_value(entry).unwrap();
        OAuthTarget::from_config("docs", &entry)
    }

    #[test]
    fn oauth_config_maps_to_settings_like_opencode() {
        let default = target(serde_json::Value::Null).unwrap().settings;
        assert_eq!(default.redirect_uri, "http://127.0.0.1:19876/mcp/oauth/callback");
        assert_eq!(target(serde_json::json!(true)).unwrap().settings, default);
        assert!(matches!(target(serde_json::json!(false)), Err(McpError::OAuthUnsupported { .. })));
        let custom = target(serde_json::json!({
            "clientId": "id", "clientSecret": "secret", "scope": "a b", "redirectUri": "http://localhost:1234/cb"
        }))
        .unwrap()
        .settings;
        assert_eq!(custom.client_id.as_deref(), Some("id"));
        assert_eq!(custom.client_secret.as_deref(), Some("secret"));
        assert_eq!(custom.scope.as_deref(), Some("a b"));
        assert_eq!(custom.redirect_uri, "http://localhost:1234/cb");
    }
}
