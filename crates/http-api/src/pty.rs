//! Pseudo-terminals behind OpenCode's terminal panel (`/pty...`): each PTY runs one command (a shell by
//! default) as the leader of its own session and process group, keeps the last [`SCROLLBACK`] bytes of
//! its output for clients that connect later, and fans live output out to every connected WebSocket.
//!
//! Invariants:
//! - At most [`MAX_PTYS`] PTYs run per server; creating one more is a 409.
//! - A PTY belongs to the instance directory it was created in: other directories do not see it.
//! - Output is UTF-8 text (a sequence split across reads is held back until complete), so the cursor,
//!   a byte offset into everything the PTY ever wrote, always falls on a character boundary.
//! - A connecting client is subscribed to live output and handed the replay under one lock: it sees
//!   every byte after its cursor once, in order.
//! - When the command ends: `pty.exited`, then the PTY is removed (`pty.deleted`) and its sockets close.
//!   `DELETE` and server shutdown hang up the process group (SIGHUP, then SIGKILL after a grace).
//! - Connect tickets are single-use and expire after [`TICKET_TTL`].

use std::collections::HashMap;
use std::io::Read as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::Instant;

use axum::extract::ws::Utf8Bytes;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use pty_process::OwnedWritePty;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::json;
use tokio::io::AsyncReadExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::sync::Notify;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::bus::EventBus;
use crate::error::ApiError;

/// PTYs one server runs at most.
pub(crate) const MAX_PTYS: usize = 32;
/// Output bytes kept per PTY for replay.
pub(crate) const SCROLLBACK: usize = 1024 * 1024;
/// How long a connect ticket stays valid.
pub(crate) const TICKET_TTL: Duration = Duration::from_secs(60);
/// Replay is sent in text frames of at most this many bytes.
pub(crate) const REPLAY_CHUNK: usize = 64 * 1024;
/// Outstanding tickets kept at most (the oldest go first).
const MAX_TICKETS: usize = 256;
/// Between SIGHUP and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long the last output may take to arrive after the command ended.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// Live output chunks a slow socket may fall behind by.
const LIVE_CAPACITY: usize = 1024;

/// OpenCode's `Pty`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(rename = "Pty")]
#[serde(rename_all = "camelCase")]
pub(crate) struct PtyInfo {
    pub id: String,
    pub title: String,
    pub command: String,
    pub args: Vec<String>,
    pub cwd: String,
    pub status: PtyStatus,
    pub pid: u32,
    /// Set once the command ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PtyStatus {
    Running,
    Exited,
}

/// What to run.
pub(crate) struct Spawn {
    pub command: String,
    pub args: Vec<String>,
    /// An existing directory.
    pub cwd: PathBuf,
    pub title: Option<String>,
    pub env: Vec<(String, String)>,
}

/// The server's PTYs. Cheap to clone.
#[derive(Clone)]
pub(crate) struct PtyService {
    inner: Arc<Registry>,
}

struct Registry {
    sessions: Mutex<HashMap<String, Arc<PtySession>>>,
    tickets: Mutex<HashMap<String, Ticket>>,
    bus: EventBus,
}

struct Ticket {
    pty: String,
    expires: Instant,
}

/// One running PTY.
pub(crate) struct PtySession {
    directory: String,
    info: Mutex<PtyInfo>,
    writer: tokio::sync::Mutex<OwnedWritePty>,
    output: Mutex<Output>,
    kill: Notify,
    waiter: Mutex<Option<JoinHandle<()>>>,
}

struct Output {
    /// The newest output, at most about [`SCROLLBACK`] bytes, always whole characters.
    buffer: Vec<u8>,
    /// The cursor of `buffer[0]`.
    start: u64,
    /// `None` once the PTY closed: receivers then see the end of the stream.
    live: Option<broadcast::Sender<Utf8Bytes>>,
}

/// What a connecting client gets: the replay from its cursor, the cursor after it, then live output.
pub(crate) struct Attached {
    pub replay: Vec<u8>,
    pub end: u64,
    /// `None` when the PTY already closed.
    pub live: Option<broadcast::Receiver<Utf8Bytes>>,
}

impl PtyService {
    pub(crate) fn new(bus: EventBus) -> Self {
        Self { inner: Arc::new(Registry { sessions: Mutex::default(), tickets: Mutex::default(), bus }) }
    }

    /// Starts `spawn` on a new PTY of `directory`; publishes `pty.created`.
    pub(crate) fn create(&self, directory: String, spawn: Spawn) -> Result<PtyInfo, ApiError> {
        let mut sessions = lock(&self.inner.sessions);
        if sessions.len() >= MAX_PTYS {
            return Err(ApiError::Conflict(format!(
                "{MAX_PTYS} terminals are already open: close one (DELETE /pty/{{ptyID}}) first"
            )));
        }
        let (pty, pts) = pty_process::open()
            .map_err(|err| ApiError::Unavailable(format!("cannot open a pseudo-terminal: {err}")))?;
        // A size until the client sends its own; the kernel default (0x0) confuses full-screen programs.
        let _keep_default = pty.resize(pty_process::Size::new(24, 80));
        let child = pty_process::Command::new(&spawn.command)
            .args(&spawn.args)
            .current_dir(&spawn.cwd)
            .envs(spawn.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .env("TERM", "xterm-256color")
            .env("OPENCODE_TERMINAL", "1")
            .kill_on_drop(true)
            .spawn(pts)
            .map_err(|err| {
                ApiError::bad(format!("cannot start {:?} in {}: {err}", spawn.command, spawn.cwd.display()))
            })?;
        let pty_id = id::ascending(IdKind::Pty);
        let tail: String = pty_id.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect();
        let info = PtyInfo {
            title: spawn.title.filter(|t| !t.is_empty()).unwrap_or_else(|| format!("Terminal {tail}")),
            id: pty_id.clone(),
            command: spawn.command,
            args: spawn.args,
            cwd: spawn.cwd.to_string_lossy().into_owned(),
            status: PtyStatus::Running,
            pid: child.id().unwrap_or_default(),
            exit_code: None,
        };
        let (reader, writer) = pty.into_split();
        let session = Arc::new(PtySession {
            directory: directory.clone(),
            info: Mutex::new(info.clone()),
            writer: tokio::sync::Mutex::new(writer),
            output: Mutex::new(Output {
                buffer: Vec::new(),
                start: 0,
                live: Some(broadcast::channel(LIVE_CAPACITY).0),
            }),
            kill: Notify::new(),
            waiter: Mutex::default(),
        });
        let reading = tokio::spawn(read_output(Arc::clone(&session), reader));
        let waiter = tokio::spawn(watch_exit(Arc::clone(&self.inner), Arc::clone(&session), child, reading));
        *lock(&session.waiter) = Some(waiter);
        sessions.insert(pty_id, session);
        drop(sessions);
        self.inner.bus.publish(Some(directory), "pty.created", json!({ "info": info }));
        Ok(info)
    }

    /// The PTYs of `directory`, oldest first.
    pub(crate) fn list(&self, directory: &str) -> Vec<PtyInfo> {
        let mut out: Vec<PtyInfo> = lock(&self.inner.sessions)
            .values()
            .filter(|session| session.directory == directory)
            .map(|session| session.info())
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// The PTY `pty_id` of `directory`.
    pub(crate) fn get(&self, directory: &str, pty_id: &str) -> Result<Arc<PtySession>, ApiError> {
        lock(&self.inner.sessions)
            .get(pty_id)
            .filter(|session| session.directory == directory)
            .cloned()
            .ok_or_else(|| not_found(pty_id))
    }

    /// Renames and/or resizes; publishes `pty.updated`.
    pub(crate) async fn update(
        &self,
        directory: &str,
        pty_id: &str,
        title: Option<String>,
        size: Option<(u16, u16)>,
    ) -> Result<PtyInfo, ApiError> {
        let session = self.get(directory, pty_id)?;
        if let Some((rows, cols)) = size {
            let writer = session.writer.lock().await;
            // A PTY whose command just ended cannot be resized; the rename still applies.
            if let Err(err) = writer.resize(pty_process::Size::new(rows, cols)) {
                tracing::debug!(%err, pty_id, "cannot resize a pseudo-terminal");
            }
        }
        let info = {
            let mut info = lock(&session.info);
            if let Some(title) = title.filter(|t| !t.is_empty()) {
                info.title = title;
            }
            info.clone()
        };
        self.inner.bus.publish(Some(session.directory.clone()), "pty.updated", json!({ "info": info }));
        Ok(info)
    }

    /// Removes the PTY, closes its sockets and hangs up its process group; publishes `pty.deleted`.
    pub(crate) fn remove(&self, directory: &str, pty_id: &str) -> Result<(), ApiError> {
        let session = {
            let mut sessions = lock(&self.inner.sessions);
            match sessions.get(pty_id) {
                Some(session) if session.directory == directory => sessions.remove(pty_id),
                _ => None,
            }
        }
        .ok_or_else(|| not_found(pty_id))?;
        session.close();
        session.kill.notify_one();
        self.inner.bus.publish(Some(session.directory.clone()), "pty.deleted", json!({ "id": pty_id }));
        Ok(())
    }

    /// A single-use ticket that lets a client without credentials connect to `pty_id`, and its lifetime
    /// in seconds.
    pub(crate) fn issue_ticket(&self, pty_id: &str) -> Result<(String, u64), ApiError> {
        let ticket = random_token()
            .map_err(|err| ApiError::Internal(format!("cannot read random bytes for a ticket: {err}")))?;
        let now = Instant::now();
        let mut tickets = lock(&self.inner.tickets);
        tickets.retain(|_, t| t.expires > now);
        while tickets.len() >= MAX_TICKETS {
            let oldest = tickets.iter().min_by_key(|(_, t)| t.expires).map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            tickets.remove(&oldest);
        }
        tickets.insert(ticket.clone(), Ticket { pty: pty_id.to_owned(), expires: now + TICKET_TTL });
        Ok((ticket, TICKET_TTL.as_secs()))
    }

    /// Whether `ticket` is a live ticket for `pty_id` (without using it up).
    pub(crate) fn ticket_valid(&self, pty_id: &str, ticket: &str) -> bool {
        lock(&self.inner.tickets).get(ticket).is_some_and(|t| t.pty == pty_id && t.expires > Instant::now())
    }

    /// Uses `ticket` up; whether it was a live ticket for `pty_id`.
    pub(crate) fn redeem(&self, pty_id: &str, ticket: &str) -> bool {
        let mut tickets = lock(&self.inner.tickets);
        if tickets.get(ticket).is_none_or(|t| t.pty != pty_id) {
            return false;
        }
        tickets.remove(ticket).is_some_and(|t| t.expires > Instant::now())
    }

    /// Hangs up every PTY and waits (bounded) until their processes are gone.
    pub(crate) async fn shutdown(&self) {
        let sessions: Vec<Arc<PtySession>> = lock(&self.inner.sessions).drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.close();
            session.kill.notify_one();
        }
        for session in sessions {
            let waiter = lock(&session.waiter).take();
            if let Some(waiter) = waiter {
                let _gave_up = tokio::time::timeout(KILL_GRACE + DRAIN_GRACE + KILL_GRACE, waiter).await;
            }
        }
    }
}

impl PtySession {
    pub(crate) fn info(&self) -> PtyInfo {
        lock(&self.info).clone()
    }

    /// Subscribes to live output and takes the replay from `cursor` (`-1`: none, from the end; absent
    /// or negative: everything kept), under one lock so that nothing is missed or sent twice.
    pub(crate) fn attach(&self, cursor: Option<i64>) -> Attached {
        let output = lock(&self.output);
        let end = output.start + output.buffer.len() as u64;
        let from = match cursor {
            Some(-1) => end,
            Some(cursor) => u64::try_from(cursor).unwrap_or(0),
            None => 0,
        };
        let offset = usize::try_from(from.saturating_sub(output.start)).unwrap_or(usize::MAX);
        let replay = output.buffer.get(offset..).map(<[u8]>::to_vec).unwrap_or_default();
        Attached { replay, end, live: output.live.as_ref().map(broadcast::Sender::subscribe) }
    }

    /// Writes input to the PTY (ignored once the command ended).
    pub(crate) async fn write(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().await;
        if let Err(err) = writer.write_all(bytes).await {
            tracing::debug!(%err, "cannot write to a pseudo-terminal");
        }
    }

    /// Ends live output: connected sockets close after what was already sent.
    fn close(&self) {
        lock(&self.output).live = None;
    }

    fn push(&self, text: String) {
        let mut output = lock(&self.output);
        output.buffer.extend_from_slice(text.as_bytes());
        // Trimming in steps of a quarter keeps the copying amortised.
        if output.buffer.len() > SCROLLBACK + SCROLLBACK / 4 {
            let mut cut = output.buffer.len() - SCROLLBACK;
            while output.buffer.get(cut).is_some_and(|b| b & 0xC0 == 0x80) {
                cut += 1;
            }
            output.buffer.drain(..cut);
            output.start += cut as u64;
        }
        if let Some(live) = &output.live {
            let _no_receivers = live.send(Utf8Bytes::from(text));
        }
    }
}

/// Reads the PTY until the command and every process holding the terminal are gone.
async fn read_output(session: Arc<PtySession>, mut reader: pty_process::OwnedReadPty) {
    let mut buf = vec![0u8; 16 * 1024];
    let mut pending = Vec::new();
    loop {
        // EIO is how Linux says that nobody holds the terminal any more.
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(buf.get(..n).unwrap_or_default());
        let text = take_text(&mut pending);
        if !text.is_empty() {
            session.push(text);
        }
    }
    if !pending.is_empty() {
        session.push(String::from_utf8_lossy(&pending).into_owned());
    }
}

/// Waits for the command to end (or for a hang-up request), then publishes `pty.exited` and removes the
/// PTY (`pty.deleted`) unless `DELETE` or shutdown already did.
async fn watch_exit(
    registry: Arc<Registry>,
    session: Arc<PtySession>,
    mut child: tokio::process::Child,
    mut reading: JoinHandle<()>,
) {
    let pid = child.id();
    let status = tokio::select! {
        status = child.wait() => status,
        () = session.kill.notified() => hang_up(&mut child, pid).await,
    };
    let code = status.map(|status| exit_code(&status)).unwrap_or(1);
    if tokio::time::timeout(DRAIN_GRACE, &mut reading).await.is_err() {
        // A background job still holds the terminal: its output is no longer wanted.
        reading.abort();
    }
    let pty_id = {
        let mut info = lock(&session.info);
        info.status = PtyStatus::Exited;
        info.exit_code = Some(code);
        info.id.clone()
    };
    session.close();
    let directory = Some(session.directory.clone());
    registry.bus.publish(directory.clone(), "pty.exited", json!({ "id": pty_id, "exitCode": code }));
    let removed = {
        let mut sessions = lock(&registry.sessions);
        let ours = sessions.get(&pty_id).is_some_and(|s| Arc::ptr_eq(s, &session));
        ours && sessions.remove(&pty_id).is_some()
    };
    if removed {
        registry.bus.publish(directory, "pty.deleted", json!({ "id": pty_id }));
    }
}

/// SIGHUP to the process group (a shell passes it on to its jobs), SIGKILL if it is still there later.
async fn hang_up(child: &mut tokio::process::Child, pid: Option<u32>) -> std::io::Result<ExitStatus> {
    signal_group(pid, nix::sys::signal::Signal::SIGHUP);
    match tokio::time::timeout(KILL_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            signal_group(pid, nix::sys::signal::Signal::SIGKILL);
            child.wait().await
        }
    }
}

/// Signals the group the child leads. Only called before the child was reaped, so the id is still
/// ours.
fn signal_group(pid: Option<u32>, signal: nix::sys::signal::Signal) {
    let Some(pid) = pid.and_then(|pid| i32::try_from(pid).ok()) else { return };
    if let Err(err) = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal) {
        tracing::debug!(%err, pid, "cannot signal a terminal's process group");
    }
}

/// The exit code, or 128 + the signal for a killed command (as shells report it).
fn exit_code(status: &ExitStatus) -> u32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => u32::try_from(code).unwrap_or(1),
        (None, Some(signal)) => 128 + u32::try_from(signal).unwrap_or(0),
        (None, None) => 1,
    }
}

/// Takes the complete UTF-8 text from the front of `pending` (invalid sequences become U+FFFD) and
/// leaves an incomplete trailing sequence for the next read.
fn take_text(pending: &mut Vec<u8>) -> String {
    let mut out = String::new();
    let mut rest: &[u8] = pending;
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                out.push_str(text);
                rest = &[];
                break;
            }
            Err(err) => {
                let (valid, after) = rest.split_at(err.valid_up_to());
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match err.error_len() {
                    Some(len) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        rest = after.get(len..).unwrap_or_default();
                    }
                    None => {
                        rest = after;
                        break;
                    }
                }
            }
        }
    }
    *pending = rest.to_vec();
    out
}

/// 32 random bytes as hex.
/// 32 bytes from the system's random source, as hex.
pub(crate) fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn not_found(pty_id: &str) -> ApiError {
    ApiError::not_found(format!("no terminal {pty_id} in this directory (GET /pty lists them)"))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_taken_up_to_an_incomplete_character() {
        let mut pending = "hé".as_bytes().to_vec();
        let last = pending.pop().unwrap_or_default();
        assert_eq!(take_text(&mut pending), "h");
        assert_eq!(pending.len(), 1);
        pending.push(last);
        assert_eq!(take_text(&mut pending), "é");
        assert!(pending.is_empty());
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut pending = vec![b'a', 0xFF, b'b'];
        assert_eq!(take_text(&mut pending), "a\u{FFFD}b");
        assert!(pending.is_empty());
    }

    #[test]
    fn signals_count_as_128_plus_the_signal() {
        assert_eq!(exit_code(&ExitStatus::from_raw(9)), 137);
        assert_eq!(exit_code(&ExitStatus::from_raw(3 << 8)), 3);
    }
}
