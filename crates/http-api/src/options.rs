//! How the server listens and whom it lets in.

use opencode_config::Env;

/// Listening address, CORS origins, credentials and limits. [`ServerOptions::default`] is OpenCode's:
/// `127.0.0.1:4096`, no password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    pub hostname: String,
    /// 0 picks a free port.
    pub port: u16,
    /// Extra origins allowed by CORS (beyond `localhost`/`127.0.0.1` on any port, `tauri://`, `*.opencode.ai`).
    pub cors: Vec<String>,
    /// HTTP Basic credentials required on every request when set.
    pub credentials: Option<Credentials>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
}

/// Username and password for HTTP Basic auth.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("username", &self.username).field("password", &"<redacted>").finish()
    }
}

/// OpenCode's default port.
pub const DEFAULT_PORT: u16 = 4096;

/// The default body limit: 10 MiB (prompts may carry inline files).
pub const DEFAULT_BODY_LIMIT: usize = 10 * 1024 * 1024;

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            hostname: "127.0.0.1".to_owned(),
            port: DEFAULT_PORT,
            cors: Vec::new(),
            credentials: None,
            body_limit: DEFAULT_BODY_LIMIT,
        }
    }
}

impl ServerOptions {
    /// The defaults with credentials from `OPENCODE_SERVER_PASSWORD` and `OPENCODE_SERVER_USERNAME`
    /// (default username `opencode`).
    pub fn from_env(env: &Env) -> Self {
        Self { credentials: Credentials::from_env(env), ..Self::default() }
    }
}

impl Credentials {
    /// `None` when `OPENCODE_SERVER_PASSWORD` is unset or empty.
    pub fn from_env(env: &Env) -> Option<Self> {
        let password = env.get("OPENCODE_SERVER_PASSWORD").filter(|p| !p.is_empty())?;
        let username = env.get("OPENCODE_SERVER_USERNAME").filter(|u| !u.is_empty()).unwrap_or("opencode");
        Some(Self { username: username.to_owned(), password: password.to_owned() })
    }
}
