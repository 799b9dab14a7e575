//! One language server process spoken to in JSON-RPC over stdio with `Content-Length` framing.
//!
//! A reader task parses the server's messages: responses complete their waiting request, requests
//! from the server get a benign reply (so servers that ask for configuration do not stall), and
//! `textDocument/publishDiagnostics` notifications are stored per document. The process is killed
//! when the client is dropped.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicI64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::io::BufReader;
use tokio::process::Child;
use tokio::process::ChildStdin;
use tokio::process::ChildStdout;
use tokio::sync::oneshot;
use tokio::sync::watch;

use super::Diagnostic;
use super::LspError;
use super::LspServer;
use super::path_to_uri;

/// How long a server may take to answer `initialize`.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(45);
/// How long an ordinary request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);
/// Servers often publish twice in a row (syntax, then semantics): wait this long for more.
const DIAGNOSTICS_DEBOUNCE: Duration = Duration::from_millis(150);

type Waiters = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, String>>>>>;

/// Diagnostics per document URI, and how many times each was published.
#[derive(Default)]
struct Published {
    diagnostics: HashMap<String, Vec<Diagnostic>>,
    generation: HashMap<String, u64>,
}

/// A running, initialized language server.
pub(crate) struct Client {
    server: String,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    waiters: Waiters,
    next_id: AtomicI64,
    published: Arc<Mutex<Published>>,
    /// Bumped on every publication; waiters watch it.
    changes: watch::Sender<u64>,
    versions: Mutex<HashMap<String, i32>>,
    /// Set by the reader when the server's output closes.
    exited: Arc<AtomicBool>,
    reader: tokio::task::JoinHandle<()>,
    _child: Child,
}

impl Drop for Client {
    fn drop(&mut self) {
        // `kill_on_drop` ends the process with the child handle; the reader would only see EOF.
        self.reader.abort();
    }
}

impl Client {
    /// Starts `server` in `root` and completes the `initialize` handshake.
    pub(crate) async fn start(server: &LspServer, root: &Path) -> Result<Self, LspError> {
        let (program, args) = server
            .command
            .split_first()
            .ok_or_else(|| LspError::Config { reason: format!("server `{}` has an empty command", server.id) })?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .envs(&server.env)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| LspError::Spawn { server: server.id.clone(), reason: err.to_string() })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LspError::Spawn { server: server.id.clone(), reason: "no stdio pipes".into() });
        };
        let stdin = Arc::new(tokio::sync::Mutex::new(stdin));
        let waiters: Waiters = Arc::default();
        let published: Arc<Mutex<Published>> = Arc::default();
        let (changes, _) = watch::channel(0);
        let exited = Arc::new(AtomicBool::new(false));
        let reader = tokio::spawn(read_loop(
            stdout,
            Arc::clone(&stdin),
            Arc::clone(&waiters),
            Arc::clone(&published),
            (changes.clone(), Arc::clone(&exited)),
            path_to_uri(root),
        ));
        let client = Self {
            server: server.id.clone(),
            stdin,
            waiters,
            next_id: AtomicI64::new(1),
            published,
            changes,
            versions: Mutex::default(),
            exited,
            reader,
            _child: child,
        };
        let root_uri = path_to_uri(root);
        let name = root.file_name().map_or_else(|| "root".to_owned(), |name| name.to_string_lossy().into_owned());
        let params = json!({
            "processId": std::process::id(),
            "rootUri": root_uri,
            "rootPath": root.display().to_string(),
            "workspaceFolders": [{"uri": root_uri, "name": name}],
            "initializationOptions": server.initialization.clone().unwrap_or(Value::Null),
            "capabilities": {
                "window": {"workDoneProgress": true},
                "workspace": {"configuration": true, "workspaceFolders": true, "symbol": {}},
                "textDocument": {
                    "synchronization": {"didOpen": true, "didChange": true, "didSave": false},
                    "publishDiagnostics": {"versionSupport": true},
                    "definition": {}, "references": {}, "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}, "implementation": {}
                }
            }
        });
        client.request_with("initialize", params, INITIALIZE_TIMEOUT).await?;
        client.notify("initialized", json!({})).await?;
        Ok(client)
    }

    /// Whether the server's output is still open (it has not exited).
    pub(crate) fn is_alive(&self) -> bool {
        !self.exited.load(Ordering::Acquire)
    }

    /// Sends a request and waits for its result.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, LspError> {
        self.request_with(method, params, REQUEST_TIMEOUT).await
    }

    async fn request_with(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, LspError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        lock(&self.waiters).insert(id, sender);
        if let Err(err) = self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await {
            lock(&self.waiters).remove(&id);
            return Err(err);
        }
        match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(message))) => Err(self.protocol(format!("{method} failed: {message}"))),
            Ok(Err(_)) => Err(LspError::Exited { server: self.server.clone() }),
            Err(_) => {
                lock(&self.waiters).remove(&id);
                Err(LspError::Timeout { server: self.server.clone(), method: method.to_owned() })
            }
        }
    }

    pub(crate) async fn notify(&self, method: &str, params: Value) -> Result<(), LspError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Opens the document (first time) or replaces its text, and returns the publication count
    /// before the change, to wait for the diagnostics that follow.
    pub(crate) async fn sync(&self, path: &Path, text: &str) -> Result<u64, LspError> {
        let uri = path_to_uri(path);
        let before = lock(&self.published).generation.get(&uri).copied().unwrap_or(0);
        let version = {
            let mut versions = lock(&self.versions);
            let version = versions.entry(uri.clone()).or_insert(-1);
            *version += 1;
            *version
        };
        if version == 0 {
            let language = super::language_id(path);
            let document = json!({"uri": uri, "languageId": language, "version": version, "text": text});
            self.notify("textDocument/didOpen", json!({"textDocument": document})).await?;
        } else {
            let params = json!({
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [{"text": text}]
            });
            self.notify("textDocument/didChange", params).await?;
        }
        Ok(before)
    }

    /// Waits (up to `timeout`) for diagnostics of `path` published after generation `after`, then
    /// briefly for follow-ups; returns what is known either way.
    pub(crate) async fn wait_diagnostics(&self, path: &Path, after: u64, timeout: Duration) -> Vec<Diagnostic> {
        let uri = path_to_uri(path);
        let mut changes = self.changes.subscribe();
        let generation = |published: &Mutex<Published>| lock(published).generation.get(&uri).copied().unwrap_or(0);
        let deadline = tokio::time::Instant::now() + timeout;
        while generation(&self.published) <= after {
            if !self.is_alive() {
                return self.diagnostics(path);
            }
            if tokio::time::timeout_at(deadline, changes.changed()).await.map_or(true, |changed| changed.is_err()) {
                return self.diagnostics(path);
            }
        }
        // Keep listening while publications keep coming within the debounce, never past the deadline.
        loop {
            let quiet = (tokio::time::Instant::now() + DIAGNOSTICS_DEBOUNCE).min(deadline);
            match tokio::time::timeout_at(quiet, changes.changed()).await {
                Ok(Ok(())) if tokio::time::Instant::now() < deadline => {}
                _ => break,
            }
        }
        self.diagnostics(path)
    }

    /// The last diagnostics published for `path`.
    pub(crate) fn diagnostics(&self, path: &Path) -> Vec<Diagnostic> {
        lock(&self.published).diagnostics.get(&path_to_uri(path)).cloned().unwrap_or_default()
    }

    /// `shutdown` then `exit`; the process is killed on drop anyway.
    pub(crate) async fn shutdown(&self) {
        if tokio::time::timeout(Duration::from_secs(2), self.request("shutdown", Value::Null)).await.is_ok() {
            let _ = self.notify("exit", Value::Null).await;
        }
    }

    async fn send(&self, message: &Value) -> Result<(), LspError> {
        write_message(&self.stdin, message).await.map_err(|err| self.protocol(format!("cannot write: {err}")))
    }

    fn protocol(&self, reason: String) -> LspError {
        LspError::Protocol { server: self.server.clone(), reason }
    }
}

async fn write_message(stdin: &tokio::sync::Mutex<ChildStdin>, message: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(message)?;
    let mut stdin = stdin.lock().await;
    stdin.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
    stdin.write_all(&body).await?;
    stdin.flush().await
}

/// Reads framed messages until the server closes its output; then fails every waiting request.
async fn read_loop(
    stdout: ChildStdout,
    stdin: Arc<tokio::sync::Mutex<ChildStdin>>,
    waiters: Waiters,
    published: Arc<Mutex<Published>>,
    (changes, exited): (watch::Sender<u64>, Arc<AtomicBool>),
    root_uri: String,
) {
    let mut reader = BufReader::new(stdout);
    while let Some(message) = read_message(&mut reader).await {
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) => {
                let reply = server_request_reply(method, message.get("params"), &root_uri);
                let response = match reply {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Err(message) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}}),
                };
                if write_message(&stdin, &response).await.is_err() {
                    break;
                }
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let Some(params) = message.get("params") else { continue };
                let Some(uri) = params.get("uri").and_then(Value::as_str) else { continue };
                let diagnostics: Vec<Diagnostic> =
                    serde_json::from_value(params.get("diagnostics").cloned().unwrap_or(Value::Null))
                        .unwrap_or_default();
                {
                    let mut published = lock(&published);
                    published.diagnostics.insert(uri.to_owned(), diagnostics);
                    *published.generation.entry(uri.to_owned()).or_insert(0) += 1;
                }
                changes.send_modify(|count| *count += 1);
            }
            (Some(_), None) => {} // logs, progress, telemetry
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { continue };
                let Some(waiter) = lock(&waiters).remove(&id) else { continue };
                let outcome = match message.get("error") {
                    Some(error) => Err(error.get("message").and_then(Value::as_str).unwrap_or("error").to_owned()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = waiter.send(outcome);
            }
            (None, None) => {}
        }
    }
    // Dropping the senders tells every waiting request that the server is gone; diagnostics
    // waiters are woken to notice it.
    lock(&waiters).clear();
    exited.store(true, Ordering::Release);
    changes.send_modify(|count| *count += 1);
}

/// What the client answers to requests from the server.
fn server_request_reply(method: &str, params: Option<&Value>, root_uri: &str) -> Result<Value, String> {
    match method {
        "workspace/configuration" => {
            let items = params.and_then(|params| params.get("items")).and_then(Value::as_array).map_or(0, Vec::len);
            Ok(Value::Array(vec![Value::Null; items]))
        }
        "workspace/workspaceFolders" => Ok(json!([{"uri": root_uri, "name": "root"}])),
        "window/workDoneProgress/create" | "client/registerCapability" | "client/unregisterCapability" => {
            Ok(Value::Null)
        }
        other => Err(format!("unsupported request {other}")),
    }
}

/// One message: headers up to a blank line, then `Content-Length` bytes of JSON. `None` at EOF
/// or on a malformed frame (the stream cannot be resynchronised).
async fn read_message(reader: &mut BufReader<ChildStdout>) -> Option<Value> {
    loop {
        let mut length: Option<usize> = None;
        let mut line = String::new();
        loop {
            line.clear();
            if reader.read_line(&mut line).await.ok()? == 0 {
                return None;
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.trim().eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().ok();
            }
        }
        let length = length?;
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).await.ok()?;
        if let Ok(message) = serde_json::from_slice(&body) {
            return Some(message);
        }
        tracing::debug!("skipping a language server message that is not JSON");
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
