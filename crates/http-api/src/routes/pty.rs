//! `/pty...`: OpenCode's terminal panel. Create, list, rename/resize and remove PTYs of the instance
//! directory ([`crate::pty`]), and stream one over a WebSocket (`GET /pty/{ptyID}/connect`):
//!
//! - server → client: output as text frames; first the replay from `?cursor=` (absent: everything kept,
//!   `-1`: nothing), then one binary control frame `0x00` + `{"cursor":N}` (the byte offset the client
//!   is at), then live output. The socket closes when the PTY ends.
//! - client → server: text or binary frames, written to the PTY as typed input.
//!
//! Browsers cannot put credentials on a WebSocket: `POST /pty/{ptyID}/connect-token` hands out a
//! single-use `ticket` that `?ticket=` accepts in place of Basic auth (see [`crate::middleware`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use axum::extract::ws::Message;
use axum::extract::ws::Utf8Bytes;
use axum::extract::ws::WebSocket;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use bytes::Bytes;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::OptionalJson;
use crate::extract::P;
use crate::extract::Q;
use crate::pty::PtyInfo;
use crate::pty::PtySession;
use crate::pty::REPLAY_CHUNK;
use crate::pty::Spawn;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/pty/shells", "pty.shells", "List available shells", shells_route).returns::<Vec<ShellInfo>>(),
        Op::get("/pty", "pty.list", "List PTY sessions", list_route).returns::<Vec<PtyInfo>>(),
        Op::post("/pty", "pty.create", "Create PTY session", create_route).body::<PtyCreateBody>().returns::<PtyInfo>(),
        Op::get("/pty/{ptyID}", "pty.get", "Get PTY session", get_route).returns::<PtyInfo>(),
        Op::put("/pty/{ptyID}", "pty.update", "Update PTY session", update_route)
            .body::<PtyUpdateBody>()
            .returns::<PtyInfo>(),
        Op::delete("/pty/{ptyID}", "pty.remove", "Remove PTY session", remove_route).returns_bool(),
        Op::post("/pty/{ptyID}/connect-token", "pty.connectToken", "Create PTY WebSocket token", token_route)
            .returns::<PtyTicketConnectToken>(),
        Op::get("/pty/{ptyID}/connect", "pty.connect", "Connect to PTY session (WebSocket)", connect_route)
            .query(&["cursor", "ticket"])
            .returns_bool(),
    ]
}

/// `POST /pty` body (every field optional: the default is the user's shell in the instance directory).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtyCreateBody {
    /// The program (default: the configured shell, else `$SHELL`, else `/bin/sh`).
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Option<Vec<String>>,
    /// Absolute, or relative to the instance directory (default: the instance directory).
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    title: Option<String>,
    /// Added to the server's environment.
    #[serde(default)]
    env: Option<BTreeMap<String, String>>,
}

/// `PUT /pty/{ptyID}` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtyUpdateBody {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    size: Option<PtySize>,
}

/// A terminal size in character cells.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PtySize {
    #[schemars(range(min = 1, max = 65535))]
    rows: i64,
    #[schemars(range(min = 1, max = 65535))]
    cols: i64,
}

/// One entry of `GET /pty/shells`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ShellInfo {
    path: String,
    name: String,
    /// Whether OpenCode can drive it (fish and nu use their own syntax).
    acceptable: bool,
}

/// `POST /pty/{ptyID}/connect-token` answer.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PtyTicketConnectToken {
    /// Pass as `?ticket=` to `GET /pty/{ptyID}/connect`; valid once.
    ticket: String,
    /// Seconds until it expires.
    expires_in: u64,
}

#[derive(Debug, Deserialize)]
struct ConnectQuery {
    #[serde(default)]
    cursor: Option<String>,
    #[serde(default)]
    ticket: Option<String>,
}

async fn shells_route(State(s): State<AppState>) -> Result<Json<Vec<ShellInfo>>, ApiError> {
    let login = s.inner.env.get("SHELL").map(str::to_owned);
    blocking(move || Ok(Json(shells(login.as_deref())))).await
}

async fn list_route(State(s): State<AppState>, Dir(i): Dir) -> Json<Vec<PtyInfo>> {
    Json(s.inner.pty.list(&i.directory_str()))
}

async fn create_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    OptionalJson(body): OptionalJson<PtyCreateBody>,
) -> Result<Json<PtyInfo>, ApiError> {
    let cwd = match body.cwd.as_deref().filter(|c| !c.is_empty()) {
        Some(cwd) => i.directory.join(cwd),
        None => i.directory.clone(),
    };
    if !cwd.is_dir() {
        return Err(ApiError::bad(format!("cwd {} is not a directory", cwd.display())));
    }
    let command = match body.command.filter(|c| !c.trim().is_empty()) {
        Some(command) => command,
        None => default_shell(&s, &i).await?,
    };
    let mut args = body.args.unwrap_or_default();
    // As OpenCode, a shell starts as a login shell so that the user's profile applies; unlike it, only
    // a bare one (`ssh` ends in "sh" too, and `-l` after a script would become its `$0`).
    let name = Path::new(&command).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if args.is_empty() && name.ends_with("sh") && name != "ssh" {
        args.push("-l".to_owned());
    }
    let spawn =
        Spawn { command, args, cwd, title: body.title, env: body.env.unwrap_or_default().into_iter().collect() };
    s.inner.pty.create(i.directory_str(), spawn).map(Json)
}

async fn get_route(State(s): State<AppState>, Dir(i): Dir, P(id): P<String>) -> Result<Json<PtyInfo>, ApiError> {
    Ok(Json(s.inner.pty.get(&i.directory_str(), &id)?.info()))
}

async fn update_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(id): P<String>,
    JsonBody(body): JsonBody<PtyUpdateBody>,
) -> Result<Json<PtyInfo>, ApiError> {
    let size = body
        .size
        .map(|size| match (u16::try_from(size.rows), u16::try_from(size.cols)) {
            (Ok(rows), Ok(cols)) if rows > 0 && cols > 0 => Ok((rows, cols)),
            _ => Err(ApiError::bad(format!(
                "size {}x{} is out of range: rows and cols must be between 1 and 65535",
                size.rows, size.cols
            ))),
        })
        .transpose()?;
    s.inner.pty.update(&i.directory_str(), &id, body.title, size).await.map(Json)
}

async fn remove_route(State(s): State<AppState>, Dir(i): Dir, P(id): P<String>) -> Result<Json<bool>, ApiError> {
    s.inner.pty.remove(&i.directory_str(), &id)?;
    Ok(Json(true))
}

async fn token_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(id): P<String>,
) -> Result<Json<PtyTicketConnectToken>, ApiError> {
    s.inner.pty.get(&i.directory_str(), &id)?;
    let (ticket, expires_in) = s.inner.pty.issue_ticket(&id)?;
    Ok(Json(PtyTicketConnectToken { ticket, expires_in }))
}

async fn connect_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(id): P<String>,
    Q(query): Q<ConnectQuery>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let session = match s.inner.pty.get(&i.directory_str(), &id) {
        Ok(session) => session,
        Err(err) => return err.into_response(),
    };
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return ApiError::bad(format!("this route is a WebSocket: {}", rejection.body_text())).into_response();
        }
    };
    if let Some(ticket) = query.ticket
        && !s.inner.pty.redeem(&id, &ticket)
    {
        let message = "the ticket is unknown, used or expired: ask POST /pty/{ptyID}/connect-token for a new one";
        return (
            StatusCode::FORBIDDEN,
            Json(json!({ "name": "ForbiddenError", "data": { "message": message, "code": "FORBIDDEN" } })),
        )
            .into_response();
    }
    // As OpenCode: a cursor that is not a number replays everything.
    let cursor = query.cursor.and_then(|c| c.trim().parse::<i64>().ok());
    upgrade.on_upgrade(move |socket| pump(socket, session, cursor))
}

/// Replay, control frame, then output out and input in until either side ends.
async fn pump(mut socket: WebSocket, session: std::sync::Arc<PtySession>, cursor: Option<i64>) {
    let attached = session.attach(cursor);
    let replay = String::from_utf8_lossy(&attached.replay).into_owned();
    for chunk in text_chunks(&replay, REPLAY_CHUNK) {
        if socket.send(Message::Text(Utf8Bytes::from(chunk))).await.is_err() {
            return;
        }
    }
    let mut control = vec![0u8];
    control.extend_from_slice(json!({ "cursor": attached.end }).to_string().as_bytes());
    if socket.send(Message::Binary(Bytes::from(control))).await.is_err() {
        return;
    }
    let Some(mut live) = attached.live else {
        let _gone = socket.send(Message::Close(None)).await;
        return;
    };
    loop {
        tokio::select! {
            output = live.recv() => match output {
                Ok(text) => {
                    if socket.send(Message::Text(text)).await.is_err() {
                        return;
                    }
                }
                // A socket that fell this far behind misses output; the client can reconnect with its cursor.
                Err(RecvError::Lagged(missed)) => tracing::debug!(missed, "a terminal socket fell behind"),
                Err(RecvError::Closed) => break,
            },
            input = socket.recv() => match input {
                Some(Ok(Message::Text(text))) => session.write(text.as_bytes()).await,
                Some(Ok(Message::Binary(bytes))) => session.write(&bytes).await,
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
            },
        }
    }
    let _gone = socket.send(Message::Close(None)).await;
}

/// `text` in pieces of at most `max` bytes, cut on character boundaries.
fn text_chunks(text: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut cut = rest.len().min(max.max(4));
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        let (head, tail) = rest.split_at(cut);
        out.push(head.to_owned());
        rest = tail;
    }
    out
}

/// The configured shell, else `$SHELL`, else `/bin/sh`.
async fn default_shell(s: &AppState, i: &std::sync::Arc<crate::instance::Instance>) -> Result<String, ApiError> {
    let instance = std::sync::Arc::clone(i);
    let configured = blocking(move || Ok(instance.config().config.shell.clone())).await?;
    Ok(configured
        .or_else(|| s.inner.env.get("SHELL").map(str::to_owned))
        .filter(|shell| !shell.trim().is_empty())
        .unwrap_or_else(|| "/bin/sh".to_owned()))
}

/// The shells of `/etc/shells` that exist, and the login shell, without duplicates.
fn shells(login: Option<&str>) -> Vec<ShellInfo> {
    let listed = std::fs::read_to_string("/etc/shells").unwrap_or_default();
    let candidates = login
        .into_iter()
        .map(str::to_owned)
        .chain(listed.lines().map(str::trim).filter(|line| line.starts_with('/')).map(str::to_owned));
    let mut out: Vec<ShellInfo> = Vec::new();
    for path in candidates {
        if out.iter().any(|shell| shell.path == path) || !Path::new(&path).is_file() {
            continue;
        }
        let name = PathBuf::from(&path).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let acceptable = !matches!(name.as_str(), "fish" | "nu");
        out.push(ShellInfo { path, name, acceptable });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_never_split_a_character() {
        let text = "aé".repeat(10);
        let chunks = text_chunks(&text, 4);
        assert_eq!(chunks.concat(), text);
        assert!(chunks.iter().all(|c| c.len() <= 4));
    }
}
