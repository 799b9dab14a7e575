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
    /// The handshake or a request failed.
    #[error("{0}")]
    Protocol(String),
    /// The connection ended (the process exited, the stream closed).
    #[error("connection closed{0}")]
    Closed(String),
}

impl McpError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Config { .. } => "fix the `mcp` entry in opencode.json (local: `command`; remote: `url`)",
            Self::Spawn { .. } => "check that the command exists and is executable (is it on PATH?)",
            Self::Timeout { .. } => "the server is slow or stuck; raise `timeout` (milliseconds) in its `mcp` entry",
            Self::NeedsAuth => "run `opencode mcp auth <name>` or set an `Authorization` header in `headers`",
            Self::Protocol(_) => "check that the command or URL is an MCP server speaking this transport",
            Self::Closed(_) => "the server stopped; check its stderr output and restart opencode",
        }
    }
}
