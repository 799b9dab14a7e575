//! `/mcp…`: OpenCode's MCP server control over the instance directory's MCP servers (the runtime's
//! Location of that directory, opened if needed).
//!
//! - `GET /mcp` waits until no server is still connecting (OpenCode answers once its servers have
//!   connected or failed), then maps each to OpenCode's `MCPStatus`.
//! - `POST /mcp` adds (or replaces) a server for this instance only, nothing is written to a config
//!   file, waits for its connect and answers every status. A reload of the instance forgets it.
//! - `POST /mcp/{name}/connect|disconnect` → `true`; a disconnected server is `disabled` and its tools
//!   leave the Location's registry.
//! - OAuth: `POST /mcp/{name}/auth` starts a sign-in and returns the URL without opening a browser;
//!   `POST /mcp/{name}/auth/callback {code}` finishes it; `POST /mcp/{name}/auth/authenticate` waits
//!   for the loopback callback itself (the URL is announced as `mcp.browser.open.failed`, as OpenCode
//!   does when it cannot open a browser); `DELETE /mcp/{name}/auth` forgets stored credentials.
//! - Errors are OpenCode's: 404 `{_tag: "McpServerNotFoundError", name, message}`, 400
//!   `{error}` (`McpUnsupportedOAuthError`) for local servers and `oauth: false`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use indexmap::IndexMap;
use opencode_session_runtime::mcp::AuthStart;
use opencode_session_runtime::mcp::McpError;
use opencode_session_runtime::mcp::McpEvent;
use opencode_session_runtime::mcp::McpManager;
use opencode_session_runtime::mcp::ServerStatus;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::json;
use tokio::sync::broadcast;

use super::Op;
use crate::bus::EventBus;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;

/// How long `POST /mcp/{name}/auth/authenticate` waits for the browser (OpenCode: 5 minutes).
const AUTHENTICATE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/mcp", "mcp.status", "Get the status of all MCP servers", status_route).returns::<StatusMap>(),
        Op::post("/mcp", "mcp.add", "Add an MCP server to the instance (not written to config)", add_route)
            .body::<McpAddBody>()
            .returns::<StatusMap>(),
        Op::post("/mcp/{name}/connect", "mcp.connect", "Connect an MCP server", connect_route).returns_bool(),
        Op::post("/mcp/{name}/disconnect", "mcp.disconnect", "Disconnect an MCP server", disconnect_route)
            .returns_bool(),
        Op::post("/mcp/{name}/auth", "mcp.auth.start", "Start MCP OAuth (returns the authorization URL)", start_route)
            .returns::<McpAuthStarted>(),
        Op::delete("/mcp/{name}/auth", "mcp.auth.remove", "Remove MCP OAuth credentials", remove_route)
            .returns::<McpAuthRemoved>(),
        Op::post(
            "/mcp/{name}/auth/callback",
            "mcp.auth.callback",
            "Complete MCP OAuth with the authorization code",
            callback_route,
        )
        .body::<McpAuthCallbackBody>()
        .returns::<McpStatus>(),
        Op::post(
            "/mcp/{name}/auth/authenticate",
            "mcp.auth.authenticate",
            "Start MCP OAuth and wait for the loopback callback",
            authenticate_route,
        )
        .returns::<McpStatus>(),
    ]
}

/// `MCPStatus`: one server's state, as OpenCode reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
#[schemars(rename = "MCPStatus")]
pub(crate) enum McpStatus {
    Connected,
    Disabled,
    Failed {
        error: String,
    },
    NeedsAuth,
    NeedsClientRegistration {
        error: String,
    },
    /// Ours: a connect still running (`GET /mcp` waits for connects, so only a server added by a
    /// concurrent request shows it).
    Connecting,
}

impl From<ServerStatus> for McpStatus {
    fn from(status: ServerStatus) -> Self {
        match status {
            ServerStatus::Connected => Self::Connected,
            ServerStatus::Disabled => Self::Disabled,
            ServerStatus::Failed { error } => Self::Failed { error },
            ServerStatus::NeedsAuth => Self::NeedsAuth,
            ServerStatus::NeedsClientRegistration { error } => Self::NeedsClientRegistration { error },
            ServerStatus::Connecting => Self::Connecting,
        }
    }
}

/// Server name → status (for the document; answers keep the configuration's order).
type StatusMap = BTreeMap<String, McpStatus>;

/// `POST /mcp`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpAddBody {
    name: String,
    config: McpServerBody,
}

/// `McpLocalConfig` | `McpRemoteConfig` (OpenCode's `cwd` is not supported: local servers run in
/// the instance directory).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum McpServerBody {
    Local {
        /// Command and arguments to run the MCP server.
        command: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        environment: Option<BTreeMap<String, String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        enabled: Option<bool>,
        /// Connect timeout in milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
    Remote {
        /// URL of the remote MCP server.
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        enabled: Option<bool>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        headers: Option<BTreeMap<String, String>>,
        /// OAuth settings, or `false` to disable OAuth auto-detection.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        oauth: Option<OAuthBody>,
        /// Connect timeout in milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
}

/// A remote server's `oauth`: `McpOAuthConfig`, or `false` (`true` means the defaults).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
enum OAuthBody {
    Switch(bool),
    Config(McpOAuthConfigBody),
}

/// `McpOAuthConfig`: without `clientId` the client registers itself dynamically (RFC 7591).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(rename = "McpOAuthConfig")]
struct McpOAuthConfigBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    /// Space-separated scopes to request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
    /// Port of the loopback callback (default 19876).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    callback_port: Option<u16>,
    /// The full redirect URI (default `http://127.0.0.1:<callbackPort>/mcp/oauth/callback`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    redirect_uri: Option<String>,
}

/// `POST /mcp/{name}/auth/callback`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct McpAuthCallbackBody {
    code: String,
}

/// `POST /mcp/{name}/auth`: where the user signs in (both empty when the server needs no sign-in).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpAuthStarted {
    authorization_url: String,
    oauth_state: String,
}

/// `DELETE /mcp/{name}/auth`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct McpAuthRemoved {
    success: bool,
}

async fn status_route(State(s): State<AppState>, Dir(i): Dir) -> Result<Json<IndexMap<String, McpStatus>>, ApiError> {
    let Some(manager) = manager(&s, &i).await? else { return Ok(Json(IndexMap::new())) };
    manager.settled().await;
    Ok(Json(statuses(&manager)))
}

async fn add_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    JsonBody(body): JsonBody<McpAddBody>,
) -> Result<Json<IndexMap<String, McpStatus>>, ApiError> {
    if body.name.trim().is_empty() {
        return Err(ApiError::bad("the server name must not be empty"));
    }
    if let McpServerBody::Local { timeout: Some(0), .. } | McpServerBody::Remote { timeout: Some(0), .. } = &body.config
    {
        return Err(ApiError::bad("`timeout` must be a positive number of milliseconds"));
    }
    let launches = match &body.config {
        McpServerBody::Local { command, .. } => format!("runs `{}`", command.join(" ")),
        McpServerBody::Remote { url, .. } => format!("at {url}"),
    };
    s.inner.options.config_change(&format!("POST /mcp adds server `{}` ({launches})", body.name))?;
    let entry = serde_json::to_value(&body.config)
        .and_then(serde_json::from_value)
        .map_err(|err| ApiError::bad(format!("invalid MCP server config: {err}")))?;
    let manager =
        manager(&s, &i).await?.ok_or_else(|| ApiError::bad("this server runs no MCP servers (no session runtime)"))?;
    manager.add(&body.name, entry);
    manager.wait(&body.name).await;
    Ok(Json(statuses(&manager)))
}

async fn connect_route(State(s): State<AppState>, Dir(i): Dir, P(name): P<String>) -> Result<Json<bool>, McpFailure> {
    let manager = known(&s, &i, &name).await?;
    manager.connect(&name).await?;
    Ok(Json(true))
}

async fn disconnect_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(name): P<String>,
) -> Result<Json<bool>, McpFailure> {
    let manager = known(&s, &i, &name).await?;
    if !manager.disconnect(&name) {
        return Err(McpFailure::NotFound(name));
    }
    Ok(Json(true))
}

async fn start_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(name): P<String>,
) -> Result<Json<McpAuthStarted>, McpFailure> {
    let manager = known(&s, &i, &name).await?;
    let AuthStart { authorization_url, oauth_state } = manager.start_auth(&name).await?;
    Ok(Json(McpAuthStarted { authorization_url, oauth_state }))
}

async fn remove_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(name): P<String>,
) -> Result<Json<McpAuthRemoved>, McpFailure> {
    let manager = known(&s, &i, &name).await?;
    let removing = manager.clone();
    blocking(move || removing.remove_auth(&name).map_err(|err| ApiError::Internal(failure_text(&err)))).await?;
    Ok(Json(McpAuthRemoved { success: true }))
}

async fn callback_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(name): P<String>,
    JsonBody(body): JsonBody<McpAuthCallbackBody>,
) -> Result<Json<McpStatus>, McpFailure> {
    let manager = known(&s, &i, &name).await?;
    if body.code.is_empty() {
        return Err(ApiError::bad("`code` must not be empty").into());
    }
    Ok(Json(manager.finish_auth(&name, &body.code).await?.into()))
}

async fn authenticate_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(name): P<String>,
) -> Result<Json<McpStatus>, McpFailure> {
    let manager = known(&s, &i, &name).await?;
    Ok(Json(manager.authenticate(&name, AUTHENTICATE_TIMEOUT).await?.into()))
}

/// Publishes the MCP events of every directory on the bus, to that directory's `/event` streams:
/// `mcp.tools.changed` `{server}` and `mcp.browser.open.failed` `{mcpName, url}`.
pub(crate) async fn relay_mcp_events(mut events: broadcast::Receiver<(PathBuf, McpEvent)>, bus: EventBus) {
    loop {
        let (directory, event) = match events.recv().await {
            Ok(received) => received,
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "MCP events were dropped");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let directory = Some(directory.to_string_lossy().into_owned());
        match event {
            McpEvent::ToolsChanged { server } => {
                bus.publish(directory, "mcp.tools.changed", json!({ "server": server }))
            }
            McpEvent::BrowserOpenFailed { server, url } => {
                bus.publish(directory, "mcp.browser.open.failed", json!({ "mcpName": server, "url": url }));
            }
        }
    }
}

/// The instance's MCP servers.
async fn manager(s: &AppState, i: &Instance) -> Result<Option<McpManager>, ApiError> {
    s.in_directory(i.directory.clone(), |driver, directory| driver.mcp(directory)).await
}

/// The instance's manager when it knows server `name`, else OpenCode's 404.
async fn known(s: &AppState, i: &Instance, name: &str) -> Result<McpManager, McpFailure> {
    match manager(s, i).await? {
        Some(manager) if manager.contains(name) => Ok(manager),
        _ => Err(McpFailure::NotFound(name.to_owned())),
    }
}

fn statuses(manager: &McpManager) -> IndexMap<String, McpStatus> {
    manager.statuses().into_iter().map(|(name, status)| (name, status.into())).collect()
}

fn failure_text(err: &McpError) -> String {
    format!("{err} ({})", err.hint())
}

/// A failed `/mcp/{name}…` request, in OpenCode's error shapes.
#[derive(Debug)]
enum McpFailure {
    /// 404 `McpServerNotFoundError`.
    NotFound(String),
    /// 400 `McpUnsupportedOAuthError`.
    UnsupportedOAuth(String),
    Api(ApiError),
}

impl From<ApiError> for McpFailure {
    fn from(err: ApiError) -> Self {
        Self::Api(err)
    }
}

impl From<McpError> for McpFailure {
    fn from(err: McpError) -> Self {
        match err {
            McpError::UnknownServer { name } => Self::NotFound(name),
            McpError::OAuthUnsupported { .. } => Self::UnsupportedOAuth(err.to_string()),
            // The credentials file is ours to keep readable.
            McpError::AuthStore { .. } => Self::Api(ApiError::Internal(failure_text(&err))),
            // The remote server or its authorization server refused or failed: the request cannot
            // succeed as made; the message says why.
            other => Self::Api(ApiError::bad(failure_text(&other))),
        }
    }
}

impl IntoResponse for McpFailure {
    fn into_response(self) -> Response {
        match self {
            Self::NotFound(name) => {
                let body = json!({
                    "_tag": "McpServerNotFoundError",
                    "name": name,
                    "message": format!("MCP server not found: {name}"),
                });
                (StatusCode::NOT_FOUND, Json(body)).into_response()
            }
            Self::UnsupportedOAuth(error) => (StatusCode::BAD_REQUEST, Json(json!({ "error": error }))).into_response(),
            Self::Api(err) => err.into_response(),
        }
    }
}
