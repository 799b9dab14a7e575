//! `mcp-auth.json` in the data directory: per server the OAuth tokens, the dynamically registered
//! client and the URL they belong to, in OpenCode's format (camelCase keys, `expiresAt` in epoch
//! seconds). Written atomically with mode 0600; a file that does not parse is reported, never
//! overwritten.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;

use indexmap::IndexMap;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

use crate::error::McpError;

/// The file's name inside the data directory (OpenCode's).
pub const MCP_AUTH_FILE: &str = "mcp-auth.json";

/// One server's stored OAuth state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpAuthEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<McpTokens>,
    /// The client registered dynamically (RFC 7591) for this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<McpClientInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_verifier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth_state: Option<String>,
    /// The server URL the credentials were obtained for; they are not used for another URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_url: Option<String>,
    /// Keys written by other versions, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// OAuth tokens of one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTokens {
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Expiry in seconds since the epoch (fractional, as OpenCode writes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl McpTokens {
    /// Whether the access token has expired (tokens without an expiry never do).
    pub fn is_expired(&self) -> bool {
        self.expires_at.is_some_and(|expires_at| expires_at <= now_seconds())
    }
}

/// A client registered with the authorization server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpClientInfo {
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id_issued_at: Option<f64>,
    /// Epoch seconds; 0 or absent means the secret does not expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<f64>,
}

impl McpClientInfo {
    /// Whether the client secret has expired (then the client registers again).
    pub fn is_expired(&self) -> bool {
        self.client_secret_expires_at.is_some_and(|at| at > 0.0 && at < now_seconds())
    }
}

/// How `opencode mcp list` describes a server's stored credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthStatus {
    Authenticated,
    Expired,
    NotAuthenticated,
}

impl std::fmt::Display for AuthStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Authenticated => "authenticated",
            Self::Expired => "token expired",
            Self::NotAuthenticated => "not authenticated",
        })
    }
}

/// The `mcp-auth.json` file of one data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAuthStore {
    path: PathBuf,
}

impl McpAuthStore {
    /// The store in `data_dir` (OpenCode: `~/.local/share/opencode`).
    pub fn new(data_dir: &Path) -> Self {
        Self { path: data_dir.join(MCP_AUTH_FILE) }
    }

    /// The store of the data directory the environment selects (`XDG_DATA_HOME`, `OPENCODE_TEST_HOME`).
    pub fn from_env() -> Self {
        Self::new(&opencode_config::Paths::from_env().data)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry; a missing file is empty.
    pub fn all(&self) -> Result<IndexMap<String, McpAuthEntry>, McpError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(IndexMap::new()),
            Err(err) => return Err(self.error(format!("cannot read it: {err}"))),
        };
        if text.trim().is_empty() {
            return Ok(IndexMap::new());
        }
        serde_json::from_str(&text).map_err(|err| self.error(format!("cannot parse it: {err}")))
    }

    /// One server's entry.
    pub fn get(&self, name: &str) -> Result<Option<McpAuthEntry>, McpError> {
        Ok(self.all()?.shift_remove(name))
    }

    /// One server's entry if it was stored for `server_url` (credentials never travel to another URL).
    pub fn get_for_url(&self, name: &str, server_url: &str) -> Result<Option<McpAuthEntry>, McpError> {
        Ok(self.get(name)?.filter(|entry| entry.server_url.as_deref() == Some(server_url)))
    }

    /// Changes one server's entry (created empty when missing) and records `server_url` on it.
    pub fn update(
        &self,
        name: &str,
        server_url: Option<&str>,
        change: impl FnOnce(&mut McpAuthEntry),
    ) -> Result<(), McpError> {
        let _writer = lock_writes();
        let mut all = self.all()?;
        let entry = all.entry(name.to_owned()).or_default();
        change(entry);
        if let Some(url) = server_url {
            entry.server_url = Some(url.to_owned());
        }
        self.write(&all)
    }

    /// Removes one server's entry; `false` when there was none.
    pub fn remove(&self, name: &str) -> Result<bool, McpError> {
        let _writer = lock_writes();
        let mut all = self.all()?;
        if all.shift_remove(name).is_none() {
            return Ok(false);
        }
        self.write(&all)?;
        Ok(true)
    }

    /// Whether usable tokens are stored for the server at `server_url`.
    pub fn status(&self, name: &str, server_url: &str) -> Result<AuthStatus, McpError> {
        let tokens = self.get_for_url(name, server_url)?.and_then(|entry| entry.tokens);
        Ok(match tokens {
            None => AuthStatus::NotAuthenticated,
            Some(tokens) if tokens.is_expired() && tokens.refresh_token.is_none() => AuthStatus::Expired,
            Some(_) => AuthStatus::Authenticated,
        })
    }

    fn write(&self, all: &IndexMap<String, McpAuthEntry>) -> Result<(), McpError> {
        let mut text = serde_json::to_string_pretty(all).map_err(|err| self.error(err.to_string()))?;
        text.push('\n');
        opencode_config::write_private(&self.path, text.as_bytes())
            .map_err(|err| self.error(format!("cannot write it: {err}")))
    }

    fn error(&self, reason: String) -> McpError {
        McpError::AuthStore { path: self.path.display().to_string(), reason }
    }
}

/// Seconds since the epoch, fractional like JavaScript's `Date.now() / 1000`.
pub(crate) fn now_seconds() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |elapsed| elapsed.as_secs_f64())
}

/// Read-modify-write cycles of this process take turns (another process may still race; the
/// rename keeps the file whole either way).
fn lock_writes() -> std::sync::MutexGuard<'static, ()> {
    static WRITES: Mutex<()> = Mutex::new(());
    WRITES.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_in_opencode_format_and_keep_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let store = McpAuthStore::new(dir.path());
        std::fs::write(
            store.path(),
            r#"{"docs":{"tokens":{"accessToken":"a","expiresAt":1.5},"serverUrl":"https://x/mcp","future":1}}"#,
        )
        .unwrap();
        store
            .update("docs", Some("https://x/mcp"), |entry| {
                entry.client_info = Some(McpClientInfo {
                    client_id: "c".into(),
                    client_secret: None,
                    client_id_issued_at: None,
                    client_secret_expires_at: None,
                });
            })
            .unwrap();
        let text = std::fs::read_to_string(store.path()).unwrap();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["docs"]["tokens"]["accessToken"], "a");
        assert_eq!(value["docs"]["clientInfo"]["clientId"], "c");
        assert_eq!(value["docs"]["future"], 1);
        assert!(store.get_for_url("docs", "https://other/mcp").unwrap().is_none());
        assert_eq!(store.status("docs", "https://x/mcp").ok(), Some(AuthStatus::Expired));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn a_corrupt_file_is_reported_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = McpAuthStore::new(dir.path());
        std::fs::write(store.path(), "{not json").unwrap();
        assert!(matches!(store.remove("docs"), Err(McpError::AuthStore { .. })));
        assert_eq!(std::fs::read_to_string(store.path()).ok().as_deref(), Some("{not json"));
    }
}
