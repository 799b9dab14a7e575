//! Language servers for diagnostics and code navigation: the servers configured under `lsp`,
//! chosen by file extension, started lazily on first use, reused, and killed when [`Lsp`] is
//! dropped.
//!
//! Config (OpenCode's shape): `"lsp": false` or `{ "<id>": { "command": [..], "extensions":
//! [".rs"], "env": {..}, "initialization": {..}, "disabled": false } }`. OpenCode's built-in
//! server catalogue (auto-detected servers) is not reproduced: only configured servers run.

mod client;

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use client::Client;

/// How long `touch` waits for diagnostics after a change (OpenCode: 3 s).
pub const DIAGNOSTICS_TIMEOUT: Duration = Duration::from_secs(3);

/// One configured language server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LspServer {
    pub id: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// File extensions with their dot (`.rs`).
    pub extensions: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Sent as `initializationOptions`.
    pub initialization: Option<Value>,
}

/// A diagnostic as the server published it (LSP positions are 0-based).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub range: Range,
    /// 1 error, 2 warning, 3 information, 4 hint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<u8>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Range {
    pub start: Position,
    pub end: Position,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub line: u32,
    pub character: u32,
}

impl Diagnostic {
    /// OpenCode's one-line form: `ERROR [3:5] message` (1-based).
    pub fn pretty(&self) -> String {
        let severity = match self.severity {
            Some(2) => "WARN",
            Some(3) => "INFO",
            Some(4) => "HINT",
            _ => "ERROR",
        };
        format!("{severity} [{}:{}] {}", self.range.start.line + 1, self.range.start.character + 1, self.message)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Some(1)
    }
}

/// A language server problem. Display is the one-line cause; [`LspError::hint`] says what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LspError {
    #[error("invalid `lsp` configuration: {reason}")]
    Config { reason: String },
    #[error("cannot start language server `{server}`: {reason}")]
    Spawn { server: String, reason: String },
    #[error("language server `{server}`: {reason}")]
    Protocol { server: String, reason: String },
    #[error("language server `{server}` did not answer {method} in time")]
    Timeout { server: String, method: String },
    #[error("language server `{server}` exited")]
    Exited { server: String },
    #[error("cannot read {} for its language server: {reason}", path.display())]
    Read { path: PathBuf, reason: String },
}

impl LspError {
    pub fn hint(&self) -> &'static str {
        match self {
            Self::Config { .. } => "each server needs `command` (a list) and `extensions` (like [\".rs\"])",
            Self::Spawn { .. } => "check that the server's command is installed and on PATH",
            Self::Protocol { .. } | Self::Exited { .. } => "run the server's command by hand to see its errors",
            Self::Timeout { .. } => "the server may still be indexing; try again shortly",
            Self::Read { .. } => "check that the file exists and is UTF-8 text",
        }
    }
}

/// The language servers of one Location.
pub struct Lsp {
    root: PathBuf,
    servers: Vec<LspServer>,
    clients: tokio::sync::Mutex<HashMap<String, Arc<Client>>>,
    /// Servers that failed to start, with why; they are not retried.
    broken: Mutex<HashMap<String, LspError>>,
}

impl std::fmt::Debug for Lsp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lsp").field("root", &self.root).field("servers", &self.servers).finish_non_exhaustive()
    }
}

impl Lsp {
    pub fn new(root: impl Into<PathBuf>, servers: Vec<LspServer>) -> Self {
        Self {
            root: root.into(),
            servers,
            clients: tokio::sync::Mutex::new(HashMap::new()),
            broken: Mutex::new(HashMap::new()),
        }
    }

    /// Servers from the config's `lsp` value (absent or `false`: none).
    pub fn from_config(root: impl Into<PathBuf>, config: Option<&Value>) -> Result<Self, LspError> {
        Ok(Self::new(root, servers_from_config(config)?))
    }

    pub fn servers(&self) -> &[LspServer] {
        &self.servers
    }

    /// Whether some server handles `path`'s extension.
    pub fn handles(&self, path: &Path) -> bool {
        !self.servers_for(path).is_empty()
    }

    /// Sends `path`'s current content to its servers (starting them if needed) and, with `wait`,
    /// waits up to [`DIAGNOSTICS_TIMEOUT`] for their diagnostics; returns the file's diagnostics.
    pub async fn touch(&self, path: &Path, wait: bool) -> Result<Vec<Diagnostic>, LspError> {
        let text = std::fs::read_to_string(path).map_err(|err| LspError::Protocol {
            server: "-".into(),
            reason: format!("cannot read {}: {err}", path.display()),
        })?;
        let mut diagnostics = Vec::new();
        for client in self.clients_for(path).await? {
            let before = client.sync(path, &text).await?;
            if wait {
                diagnostics.extend(client.wait_diagnostics(path, before, DIAGNOSTICS_TIMEOUT).await);
            } else {
                diagnostics.extend(client.diagnostics(path));
            }
        }
        Ok(diagnostics)
    }

    /// Sends a request about `path` to each of its servers; non-null results in server order.
    pub async fn request(&self, path: &Path, method: &str, params: Value) -> Result<Vec<Value>, LspError> {
        let mut results = Vec::new();
        for client in self.clients_for(path).await? {
            let result = client.request(method, params.clone()).await?;
            if !result.is_null() {
                results.push(result);
            }
        }
        Ok(results)
    }

    /// Sends a request to every running server (for workspace-wide queries).
    pub async fn request_all(&self, method: &str, params: Value) -> Result<Vec<Value>, LspError> {
        let clients: Vec<Arc<Client>> = self.clients.lock().await.values().cloned().collect();
        let mut results = Vec::new();
        for client in clients {
            let result = client.request(method, params.clone()).await?;
            if !result.is_null() {
                results.push(result);
            }
        }
        Ok(results)
    }

    /// How many servers are running.
    pub async fn running(&self) -> usize {
        self.clients.lock().await.len()
    }

    /// Asks every running server to shut down and stops them.
    pub async fn shutdown(&self) {
        let clients: Vec<Arc<Client>> = self.clients.lock().await.drain().map(|(_, client)| client).collect();
        for client in clients {
            client.shutdown().await;
        }
    }

    fn servers_for(&self, path: &Path) -> Vec<&LspServer> {
        let Some(extension) = path.extension().map(|ext| format!(".{}", ext.to_string_lossy())) else {
            return Vec::new();
        };
        self.servers.iter().filter(|server| server.extensions.contains(&extension)).collect()
    }

    /// The running clients for `path`, starting the ones not yet running.
    async fn clients_for(&self, path: &Path) -> Result<Vec<Arc<Client>>, LspError> {
        let mut clients = self.clients.lock().await;
        let mut found = Vec::new();
        for server in self.servers_for(path) {
            // A server that exited is started again.
            if let Some(client) = clients.get(&server.id).filter(|client| client.is_alive()) {
                found.push(Arc::clone(client));
                continue;
            }
            if let Some(err) = lock(&self.broken).get(&server.id) {
                return Err(err.clone());
            }
            match Client::start(server, &self.root).await {
                Ok(client) => {
                    let client = Arc::new(client);
                    clients.insert(server.id.clone(), Arc::clone(&client));
                    found.push(client);
                }
                Err(err) => {
                    lock(&self.broken).insert(server.id.clone(), err.clone());
                    return Err(err);
                }
            }
        }
        Ok(found)
    }
}

fn servers_from_config(config: Option<&Value>) -> Result<Vec<LspServer>, LspError> {
    let invalid = |reason: String| LspError::Config { reason };
    let entries = match config {
        None | Some(Value::Null | Value::Bool(false)) => return Ok(Vec::new()),
        Some(Value::Object(entries)) => entries,
        Some(_) => return Err(invalid("expected `false` or an object of servers".into())),
    };
    let mut servers = Vec::new();
    for (id, entry) in entries {
        let Some(entry) = entry.as_object() else { return Err(invalid(format!("server `{id}` is not an object"))) };
        if entry.get("disabled").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let strings = |key: &str| -> Result<Vec<String>, LspError> {
            match entry.get(key) {
                None => Ok(Vec::new()),
                Some(value) => serde_json::from_value(value.clone())
                    .map_err(|_| invalid(format!("`lsp.{id}.{key}` must be a list of strings"))),
            }
        };
        let command = strings("command")?;
        if command.is_empty() {
            return Err(invalid(format!("`lsp.{id}.command` is missing or empty")));
        }
        let extensions: Vec<String> = strings("extensions")?
            .into_iter()
            .map(|ext| if ext.starts_with('.') { ext } else { format!(".{ext}") })
            .collect();
        if extensions.is_empty() {
            return Err(invalid(format!(
                "`lsp.{id}.extensions` is missing (custom servers need their file extensions)"
            )));
        }
        let env = match entry.get("env") {
            None => BTreeMap::new(),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|_| invalid(format!("`lsp.{id}.env` must map names to strings")))?,
        };
        let initialization = entry.get("initialization").cloned();
        servers.push(LspServer { id: id.clone(), command, extensions, env, initialization });
    }
    Ok(servers)
}

/// `file://` URI of an absolute path, percent-encoding what URIs do not allow.
pub fn path_to_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The path of a `file://` URI.
pub fn uri_to_path(uri: &str) -> Option<PathBuf> {
    let encoded = uri.strip_prefix("file://")?;
    let bytes = encoded.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let Some(value) = encoded.get(index + 1..index + 3).and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            decoded.push(value);
            index += 3;
            continue;
        }
        decoded.push(bytes[index]);
        index += 1;
    }
    Some(PathBuf::from(String::from_utf8_lossy(&decoded).into_owned()))
}

/// The LSP language id of a file.
fn language_id(path: &Path) -> String {
    let extension = path.extension().map(|ext| ext.to_string_lossy().to_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "rs" => "rust",
        "py" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "rb" => "ruby",
        "sh" | "bash" => "shellscript",
        "md" => "markdown",
        "h" | "c" => "c",
        "cc" | "cpp" | "cxx" | "hpp" => "cpp",
        "cs" => "csharp",
        "kt" => "kotlin",
        "yml" => "yaml",
        other => other,
    }
    .to_owned()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_parses_servers_and_refuses_incomplete_ones() {
        let config = serde_json::json!({
            "fake": {"command": ["python3", "x.py"], "extensions": ["rs", ".toml"], "env": {"A": "1"}},
            "off": {"disabled": true}
        });
        let servers = servers_from_config(Some(&config)).unwrap();
        assert_eq!(servers.len(), 1);
        assert_eq!(servers[0].extensions, [".rs", ".toml"]);
        assert_eq!(servers[0].env.get("A").map(String::as_str), Some("1"));
        assert!(servers_from_config(Some(&Value::Bool(false))).unwrap().is_empty());
        let err = servers_from_config(Some(&serde_json::json!({"x": {"command": ["a"]}}))).unwrap_err();
        assert!(err.to_string().contains("`lsp.x.extensions` is missing"), "{err}");
        assert!(servers_from_config(Some(&serde_json::json!({"x": {"extensions": [".a"]}}))).is_err());
    }

    #[test]
    fn uris_round_trip() {
        let path = Path::new("/tmp/a b/ü#.rs");
        let uri = path_to_uri(path);
        assert_eq!(uri, "file:///tmp/a%20b/%C3%BC%23.rs");
        assert_eq!(uri_to_path(&uri).unwrap(), path);
    }

    #[test]
    fn diagnostics_print_one_based() {
        let diagnostic = Diagnostic {
            range: Range { start: Position { line: 2, character: 4 }, end: Position { line: 2, character: 5 } },
            severity: Some(1),
            message: "boom".into(),
            source: None,
            code: None,
        };
        assert_eq!(diagnostic.pretty(), "ERROR [3:5] boom");
    }
}
