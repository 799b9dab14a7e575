//! Why a call failed: the server answered with an error, the server could not be reached, or its
//! answer was not what the API promises.

/// A failed call. `Display` is one line that says what failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error status; `name` and `message` come from OpenCode's error body
    /// (`{name, data: {message}}`) when it has one.
    #[error("{method} {path} failed with {status}: {message}")]
    Api { method: String, path: String, status: u16, name: Option<String>, message: String },
    /// No answer: connection refused, reset, timed out.
    #[error("cannot reach the server at {url}: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The answer did not decode as the API's JSON.
    #[error("{method} {path}: unexpected answer: {detail}")]
    Decode { method: String, path: String, detail: String },
    /// The base URL is not an `http(s)://` URL.
    #[error("not a server URL: {0} (expected http://HOST:PORT)")]
    BadUrl(String),
}

impl ClientError {
    /// The HTTP status of an [`ClientError::Api`] failure.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// What to do about it, in one line.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Api { status: 401, .. } => {
                "the server needs a password: pass --password or set OPENCODE_SERVER_PASSWORD"
            }
            Self::Api { status: 404, .. } => "the session or message may have been deleted; refresh the list",
            Self::Api { .. } => "the server refused the request; its message says why",
            Self::Unreachable { .. } => "check that the server is running and the URL is right",
            Self::Decode { .. } => "the server speaks another version of the API; update the client or the server",
            Self::BadUrl(_) => "give the server's URL, e.g. http://127.0.0.1:4096",
        }
    }
}
