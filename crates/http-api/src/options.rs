//! How the server listens and whom it lets in.

use opencode_config::Env;
use opencode_config::ServerConfig;

/// Listening address, who may reach the server (hosts, origins, credentials), what they may change,
/// and limits. [`ServerOptions::default`] is OpenCode's: `127.0.0.1:4096`, no password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerOptions {
    pub hostname: String,
    /// 0 picks a free port.
    pub port: u16,
    /// Origins (besides the server's own) whose pages may call the server: they get CORS headers and
    /// may change state. `*` allows every origin.
    pub cors: Vec<String>,
    /// Names a request's `Host` may carry besides loopback names, IP addresses and `hostname` (the
    /// defence against DNS rebinding). `.example.com` allows the domain and its subdomains.
    pub allowed_hosts: Vec<String>,
    /// Whether clients may change configuration or add MCP servers over HTTP (`PATCH /config`,
    /// `PATCH /global/config`, `POST /mcp`). Each change is logged.
    pub allow_config_changes: bool,
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
            allowed_hosts: Vec::new(),
            allow_config_changes: true,
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

    /// [`from_env`](Self::from_env) with the configuration's `server` section applied (flags given on
    /// the command line are applied after, by the caller).
    pub fn configured(env: &Env, server: Option<&ServerConfig>) -> Self {
        let mut options = Self::from_env(env);
        let Some(server) = server else { return options };
        options.port = server.port.unwrap_or(options.port);
        options.hostname = server.hostname.clone().unwrap_or(options.hostname);
        options.cors.clone_from(&server.cors);
        options.allowed_hosts.clone_from(&server.allowed_hosts);
        options.allow_config_changes = server.allow_config_changes.unwrap_or(true);
        options
    }

    /// A server only its starter can use: loopback, a free port, and a fresh random password that
    /// nothing else knows (for a front end that runs its own server in-process). Other local users and
    /// processes can connect but not get past authentication.
    pub fn private() -> std::io::Result<Self> {
        let credentials = Credentials { username: "opencode".to_owned(), password: crate::pty::random_token()? };
        Ok(Self { port: 0, credentials: Some(credentials), ..Self::default() })
    }

    /// Refuses a configuration change over HTTP when `allow_config_changes` is off; logs it otherwise.
    pub(crate) fn config_change(&self, what: &str) -> Result<(), crate::error::ApiError> {
        if !self.allow_config_changes {
            tracing::warn!("refused a configuration change over HTTP: {what}");
            return Err(crate::error::ApiError::Forbidden(format!(
                "this server does not accept configuration changes over HTTP ({what}); edit opencode.json \
                 instead, or set server.allow_config_changes to true"
            )));
        }
        tracing::warn!("configuration changed over HTTP: {what}");
        Ok(())
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
