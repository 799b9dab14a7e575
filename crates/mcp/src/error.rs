//! Why a server could not be reached or used: one-line causes with a hint for the user.

/// A failure to connect to, or talk with, one MCP server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    /// The config entry cannot be used as written.
    #[error("mcp.{server}: {reason}")]
    Config { server: String, reason: String },
    /// The local server's command could not be started.
    #[error("cannot start `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    /// The server did not finish the MCP handshake (and list its tools) in time.
    #[error("no answer within {millis} ms")]
    Timeout { millis: u64 },
    /// The server answered 401/403: it needs OAuth credentials.
    #[error("the server requires authorization")]
    NeedsAuth,
    /// The server answered 401 and OAuth is switched off for it (`oauth: false`).
    #[error("the server answered 401 Unauthorized and OAuth is disabled for it")]
    Unauthorized,
    /// An OAuth step (discovery, registration, authorization, token exchange, refresh) failed.
    #[error("OAuth: {0}")]
    Auth(String),
    /// The authorization server offers no dynamic client registration and no `clientId` is set.
    #[error("the authorization server does not support dynamic client registration")]
    NeedsClientRegistration,
    /// `mcp-auth.json` could not be read or written.
    #[error("{path}: {reason}")]
    AuthStore { path: String, reason: String },
    /// The handshake or a request failed.
    #[error("{0}")]
    Protocol(String),
    /// The connection ended (the process exited, the stream closed).
    #[error("connection closed{0}")]
    Closed(String),
    /// No server of that name is configured (or was added).
    #[error("MCP server not found: {name}")]
    UnknownServer { name: String },
    /// OAuth does not apply to the server: it is local, or its entry says `oauth: false`.
    #[error("mcp.{server}: {reason}")]
    OAuthUnsupported { server: String, reason: String },
}

impl McpError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Config { .. } => "fix the `mcp` entry in opencode.json (local: `command`; remote: `url`)",
            Self::Spawn { .. } => "check that the command exists and is executable (is it on PATH?)",
            Self::Timeout { .. } => "the server is slow or stuck; raise `timeout` (milliseconds) in its `mcp` entry",
            Self::NeedsAuth => "run `opencode mcp auth <name>` or set an `Authorization` header in `headers`",
            Self::Unauthorized => {
                "set an `Authorization` header in `headers`, or remove `oauth: false` to sign in with OAuth"
            }
            Self::Auth(_) => "check the server's OAuth setup, then run `opencode mcp auth <name>` again",
            Self::NeedsClientRegistration => {
                "register a client with the provider and set `oauth.clientId` in the server's `mcp` entry"
            }
            Self::AuthStore { .. } => {
                "fix or delete mcp-auth.json (then sign in again with `opencode mcp auth <name>`)"
            }
            Self::Protocol(_) => "check that the command or URL is an MCP server speaking this transport",
            Self::Closed(_) => "the server stopped; check its stderr output and restart opencode",
            Self::UnknownServer { .. } => "check the name against the `mcp` entries of opencode.json",
            Self::OAuthUnsupported { .. } => {
                "OAuth applies to remote servers; for others set credentials in `headers` or `environment`"
            }
        }
    }
}
