//! One plugin process and its JSON-RPC 2.0 connection: newline-delimited JSON over stdin/stdout,
//! requests matched to answers by id, every request bounded by a timeout, the last stderr lines kept
//! for diagnostics.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tokio::io::AsyncWriteExt;
use tokio::io::BufReader;
use tokio::process::Child;
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::sync::oneshot;

use crate::error::PluginError;

/// How many stderr lines are kept for the exit diagnostic.
const STDERR_TAIL: usize = 20;
/// How long a plugin may take to exit after `shutdown` before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

type Reply = Result<Value, String>;
type Pending = Mutex<HashMap<u64, oneshot::Sender<Reply>>>;

/// A running plugin process.
pub(crate) struct Rpc {
    plugin: String,
    writer: mpsc::UnboundedSender<String>,
    pending: Arc<Pending>,
    next_id: AtomicU64,
    /// Why the connection closed, once it did.
    closed: Arc<Mutex<Option<String>>>,
    child: Mutex<Option<Child>>,
}

impl Rpc {
    /// Spawns `command` in `cwd` with `env` added, and starts its reader, writer and stderr tasks.
    pub fn spawn(plugin: &str, command: &[String], cwd: &Path, env: &[(String, String)]) -> Result<Self, PluginError> {
        let spawn_error =
            |reason: String| PluginError::Spawn { plugin: plugin.to_owned(), command: command.join(" "), reason };
        let (program, args) = command.split_first().ok_or_else(|| spawn_error("the command is empty".into()))?;
        let mut command = Command::new(program);
        // An empty directory means "not given": inherit ours.
        if !cwd.as_os_str().is_empty() {
            command.current_dir(cwd);
        }
        let mut child = command
            .args(args)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .env("OPENCODE_PLUGIN_PROTOCOL", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|err| spawn_error(err.to_string()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(spawn_error("its standard streams are not available".into()));
        };
        let (writer, lines) = mpsc::unbounded_channel();
        let pending: Arc<Pending> = Arc::default();
        let closed: Arc<Mutex<Option<String>>> = Arc::default();
        let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        tokio::spawn(write_lines(stdin, lines));
        tokio::spawn(keep_stderr(plugin.to_owned(), stderr, Arc::clone(&tail)));
        tokio::spawn(read_answers(plugin.to_owned(), stdout, Arc::clone(&pending), Arc::clone(&closed), tail));
        Ok(Self {
            plugin: plugin.to_owned(),
            writer,
            pending,
            next_id: AtomicU64::new(1),
            closed,
            child: Mutex::new(Some(child)),
        })
    }

    /// Sends a request and awaits its answer for at most `limit`. On timeout the plugin is told to
    /// cancel (`$/cancelRequest`) and a later answer is dropped.
    pub async fn request(&self, method: &str, params: Value, limit: Duration) -> Result<Value, PluginError> {
        self.check_open()?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answer, receive) = oneshot::channel();
        lock(&self.pending).insert(id, answer);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        if self.writer.send(line).is_err() {
            lock(&self.pending).remove(&id);
            return Err(self.exited());
        }
        match tokio::time::timeout(limit, receive).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(message))) => {
                Err(PluginError::Remote { plugin: self.plugin.clone(), method: method.to_owned(), message })
            }
            Ok(Err(_)) => Err(self.exited()),
            Err(_) => {
                lock(&self.pending).remove(&id);
                self.notify("$/cancelRequest", json!({"id": id}));
                let after_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
                Err(PluginError::Timeout { plugin: self.plugin.clone(), method: method.to_owned(), after_ms })
            }
        }
    }

    /// Sends a notification (no answer); never blocks.
    pub fn notify(&self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
        // A closed connection drops notifications; the exit was already reported.
        let _closed = self.writer.send(line);
    }

    /// Asks the plugin to exit, then kills it if it does not within a second.
    pub async fn shutdown(&self) {
        self.notify("shutdown", json!({}));
        let child = lock(&self.child).take();
        let Some(mut child) = child else {
            return;
        };
        let exited = tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_ok();
        if !exited && let Err(err) = child.kill().await {
            tracing::warn!(plugin = %self.plugin, %err, "cannot kill plugin process");
        }
    }

    fn check_open(&self) -> Result<(), PluginError> {
        match lock(&self.closed).as_ref() {
            Some(_) => Err(self.exited()),
            None => Ok(()),
        }
    }

    fn exited(&self) -> PluginError {
        let reason = lock(&self.closed).clone().unwrap_or_else(|| "its output closed".to_owned());
        PluginError::Exited { plugin: self.plugin.clone(), reason }
    }
}

async fn write_lines(mut stdin: tokio::process::ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
}

async fn keep_stderr(plugin: String, stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(plugin = %plugin, "{line}");
        let mut tail = lock(&tail);
        if tail.len() == STDERR_TAIL {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

/// Routes answers to their requests until stdout closes; then fails every pending request.
async fn read_answers(
    plugin: String,
    stdout: tokio::process::ChildStdout,
    pending: Arc<Pending>,
    closed: Arc<Mutex<Option<String>>>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    let mut lines = BufReader::new(stdout).lines();
    let reason = loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => route(&plugin, &line, &pending),
            Ok(None) => break "its output closed".to_owned(),
            Err(err) => break format!("cannot read its output: {err}"),
        }
    };
    // Give the stderr task a moment to collect the last words.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let last: Vec<String> = lock(&tail).iter().cloned().collect();
    let reason = if last.is_empty() { reason } else { format!("{reason}; stderr: {}", last.join(" | ")) };
    *lock(&closed) = Some(reason);
    lock(&pending).clear();
}

fn route(plugin: &str, line: &str, pending: &Pending) {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        tracing::warn!(plugin, line, "plugin wrote a line that is not JSON");
        return;
    };
    if let Some(id) = message.get("id").and_then(Value::as_u64).filter(|_| message.get("method").is_none()) {
        let reply = match message.get("error") {
            Some(error) => Err(error.get("message").and_then(Value::as_str).unwrap_or("unknown error").to_owned()),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        if let Some(answer) = lock(pending).remove(&id) {
            // The requester may have timed out meanwhile.
            let _gone = answer.send(reply);
        }
        return;
    }
    match message.get("method").and_then(Value::as_str) {
        Some("log") => {
            let text = message.pointer("/params/message").and_then(Value::as_str).unwrap_or_default();
            tracing::info!(plugin, "{text}");
        }
        _ => tracing::debug!(plugin, line, "ignored plugin message"),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
