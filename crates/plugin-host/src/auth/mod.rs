//! Provider credential flows contributed by plugins (OpenCode's `auth` hook), and the built-in ones.
//!
//! An [`AuthProvider`] lists its login methods, runs one ([`AuthProvider::authorize`] returns the URL
//! and code to show, and a completion to await), and loads the credentials to use now, refreshing
//! them before they expire ([`AuthProvider::credentials`]). Tokens live in `opencode-config`'s
//! [`AuthStore`].
//!
//! Built in: GitHub Copilot's OAuth device-code flow ([`copilot`]), and the PKCE authorization-code
//! flows of Anthropic Claude Pro/Max (pasted code, [`anthropic`]) and OpenAI ChatGPT Plus/Pro
//! (local callback server, [`openai`]), sharing [`pkce`]. [`builtin_plugins`] assembles
//! them; its environment overrides (see [`COPILOT_URL_VAR`]) point the flows at other servers.
//! [`AuthRefresher`] offers them to the session runtime as `opencode-config`'s
//! `CredentialRefresher`, so stored sign-ins are refreshed before each turn.

pub mod anthropic;
pub mod copilot;
pub mod openai;
pub mod pkce;
mod refresher;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use opencode_config::Env;

use crate::plugin::Plugin;

pub use refresher::AuthRefresher;

/// Base URL of the GitHub OAuth endpoints the Copilot device flow uses (default
/// `https://github.com`; `<base>/login/device/code` and `<base>/login/oauth/access_token`).
pub const COPILOT_URL_VAR: &str = "OPENCODE_COPILOT_URL";
/// Milliseconds added to the device flow's polling interval (default 3000, as OpenCode).
pub const COPILOT_POLL_MARGIN_VAR: &str = "OPENCODE_COPILOT_POLL_MARGIN_MS";

/// The Anthropic OAuth token endpoint (default `https://console.anthropic.com/v1/oauth/token`).
pub const ANTHROPIC_TOKEN_URL_VAR: &str = "OPENCODE_ANTHROPIC_TOKEN_URL";
/// The OpenAI OAuth issuer (default `https://auth.openai.com`; `/oauth/authorize`, `/oauth/token`).
pub const OPENAI_ISSUER_VAR: &str = "OPENCODE_OPENAI_OAUTH_URL";
/// The one port for OpenAI's local sign-in callback (default 1455, else 1457; `0` picks a free one).
pub const OPENAI_CALLBACK_PORT_VAR: &str = "OPENCODE_OPENAI_CALLBACK_PORT";

/// The built-in provider auth plugins, in dispatch order, with the endpoint overrides of `env`.
pub fn builtin_plugins(env: &Env) -> Vec<Arc<dyn Plugin>> {
    let mut anthropic = anthropic::AnthropicEndpoints::default();
    if let Some(token) = env.get(ANTHROPIC_TOKEN_URL_VAR) {
        token.clone_into(&mut anthropic.token);
    }
    let mut openai = openai::OpenAiEndpoints::default();
    if let Some(issuer) = env.get(OPENAI_ISSUER_VAR) {
        issuer.clone_into(&mut openai.issuer);
    }
    if let Some(port) = env.get(OPENAI_CALLBACK_PORT_VAR).and_then(|port| port.parse().ok()) {
        openai.ports = vec![port];
    }
    let mut copilot = match env.get(COPILOT_URL_VAR) {
        Some(base) => copilot::CopilotEndpoints::under(base, None),
        None => copilot::CopilotEndpoints::github(),
    };
    if let Some(margin) = env.get(COPILOT_POLL_MARGIN_VAR).and_then(|ms| ms.parse().ok()) {
        copilot.poll_margin = Duration::from_millis(margin);
    }
    vec![
        Arc::new(copilot::CopilotPlugin::new(copilot)),
        Arc::new(anthropic::AnthropicPlugin::new(anthropic)),
        Arc::new(openai::OpenAiPlugin::new(openai)),
    ]
}

/// How a login method works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethodKind {
    /// A browser/device authorization; the host shows a URL (and a code) and waits.
    Oauth,
    /// An API key the user pastes.
    Api,
}

/// One login method, as `opencode auth login` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMethod {
    pub label: String,
    pub kind: AuthMethodKind,
}

/// What completes an authorization: waiting (device code, local callback), or the code the user
/// pastes after authorizing in the browser.
pub type AuthFuture = BoxFuture<'static, Result<AuthInfo, AuthError>>;

/// A started authorization: show `url` (and `user_code`) to the user; then, when
/// [`Authorization::needs_code`], read the code the provider displayed and call
/// [`Authorization::finish_with_code`], else await [`Authorization::finish`].
pub struct Authorization {
    pub url: String,
    pub user_code: Option<String>,
    pub instructions: String,
    completion: Completion,
}

enum Completion {
    Auto(AuthFuture),
    Code(Box<dyn FnOnce(String) -> AuthFuture + Send>),
}

impl Authorization {
    /// An authorization that completes by itself (polling, a local callback server).
    pub fn new(url: String, user_code: Option<String>, instructions: String, completion: AuthFuture) -> Self {
        Self { url, user_code, instructions, completion: Completion::Auto(completion) }
    }

    /// An authorization that completes with the code the user pastes.
    pub fn with_code(
        url: String,
        instructions: String,
        exchange: impl FnOnce(String) -> AuthFuture + Send + 'static,
    ) -> Self {
        Self { url, user_code: None, instructions, completion: Completion::Code(Box::new(exchange)) }
    }

    /// Whether the user must paste a code ([`Authorization::finish_with_code`]).
    pub fn needs_code(&self) -> bool {
        matches!(self.completion, Completion::Code(_))
    }

    /// Waits until the user authorized (or the flow failed or expired).
    pub async fn finish(self) -> Result<AuthInfo, AuthError> {
        match self.completion {
            Completion::Auto(completion) => completion.await,
            Completion::Code(_) => Err(AuthError::CodeRequired),
        }
    }

    /// Completes with the code the user pasted (an authorization that needs none ignores it).
    pub async fn finish_with_code(self, code: &str) -> Result<AuthInfo, AuthError> {
        match self.completion {
            Completion::Auto(completion) => completion.await,
            Completion::Code(_) if code.trim().is_empty() => Err(AuthError::CodeRequired),
            Completion::Code(exchange) => exchange(code.trim().to_owned()).await,
        }
    }
}

impl std::fmt::Debug for Authorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorization")
            .field("url", &self.url)
            .field("user_code", &self.user_code)
            .field("needs_code", &self.needs_code())
            .finish()
    }
}

/// A provider's credential flows.
pub trait AuthProvider: Send + Sync {
    /// The provider id the credentials are stored under (`github-copilot`).
    fn provider(&self) -> &str;
    /// A human name (`GitHub Copilot`).
    fn display_name(&self) -> &str;
    fn methods(&self) -> Vec<AuthMethod>;
    /// Starts login method `method` (an index into [`AuthProvider::methods`]).
    fn authorize(&self, method: usize) -> BoxFuture<'_, Result<Authorization, AuthError>>;
    /// The credentials to use now: the stored ones, refreshed (and stored again) when they expire
    /// within the refresh margin. `None` when nothing is stored.
    fn credentials<'a>(&'a self, store: &'a AuthStore) -> BoxFuture<'a, Result<Option<AuthInfo>, AuthError>>;
}

/// A credential flow that did not complete.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("cannot reach {url}: {reason}")]
    Http { url: String, reason: String },
    #[error("{url} answered HTTP {status}: {body}")]
    Status { url: String, status: u16, body: String },
    #[error("authorization was refused: {0}")]
    Denied(String),
    #[error("the device code expired before it was authorized")]
    Expired,
    #[error("unexpected answer from {url}: {reason}")]
    Protocol { url: String, reason: String },
    #[error("no such login method: {0}")]
    NoSuchMethod(usize),
    #[error("cannot store credentials: {0}")]
    Store(String),
    #[error("no authorization code was given")]
    CodeRequired,
    #[error("the authorization answer does not belong to this login (state mismatch)")]
    StateMismatch,
    #[error("cannot listen for the sign-in callback on 127.0.0.1 port {ports}: {reason}")]
    CallbackPort { ports: String, reason: String },
    #[error("sign-in callback failed: {0}")]
    Callback(String),
    #[error("no authorization arrived within {0} s")]
    TimedOut(u64),
    #[error("no secure randomness available")]
    Random,
}

impl AuthError {
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Http { .. } => "check the network connection (and a proxy, if any)",
            Self::Status { .. } | Self::Protocol { .. } => {
                "the provider's login service changed or is down; try again later"
            }
            Self::Denied(_) => "run `opencode auth login` again and approve the request",
            Self::Expired => "run `opencode auth login` again and enter the code sooner",
            Self::NoSuchMethod(_) => "run `opencode auth login` to see the methods",
            Self::Store(_) => "check the permissions of the data directory",
            Self::CodeRequired => "paste the code the provider shows after you authorize, then press enter",
            Self::StateMismatch => "start `opencode auth login` again and use the newest browser tab",
            Self::CallbackPort { .. } => {
                "another program (perhaps another login) uses the port; close it and try again"
            }
            Self::Callback(_) | Self::TimedOut(_) => "run `opencode auth login` again and finish in the browser",
            Self::Random => "the operating system's random source failed; try again",
        }
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
}

/// The HTTP client of the login endpoints, built on first use: building one loads the TLS roots,
/// which would otherwise cost every process start a few milliseconds for a login it rarely runs.
pub(crate) fn http() -> &'static reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(|| {
        // Installing twice is harmless: the first provider wins.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder()
            .user_agent(concat!("opencode/", env!("CARGO_PKG_VERSION")))
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .unwrap_or_default()
    })
}
