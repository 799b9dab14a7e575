//! A local mock of an OAuth-protected remote MCP server (shared with the CLI's tests through
//! `#[path]`): protected resource metadata, an authorization server under `/tenant` (RFC 8414
//! metadata, dynamic registration, an authorization endpoint that redirects straight to the
//! callback, a token endpoint that checks PKCE), a streamable-HTTP MCP endpoint at `/mcp` that
//! wants a Bearer token, and a legacy HTTP+SSE server at `/sse` (no auth) whose POST is refused.

use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;

use axum::Router;
use axum::body::Body;
use axum::body::Bytes;
use axum::extract::State as Shared;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::http::Uri;
use axum::response::IntoResponse;
use axum::response::Response;
use axum::routing::get;
use axum::routing::post;
use base64::Engine;
use serde_json::Value;
use serde_json::json;
use sha2::Digest;
use tokio::sync::mpsc;

/// What the mock saw and what it accepts.
#[derive(Default)]
pub struct State {
    pub base: String,
    pub registration: bool,
    /// `expires_in` of the next tokens issued.
    pub expires_in: Option<u64>,
    pub access_tokens: HashSet<String>,
    pub refresh_tokens: HashSet<String>,
    pub clients: HashSet<String>,
    pub registrations: usize,
    /// Code exchanges whose `code_verifier` matched the `code_challenge`.
    pub verified_exchanges: usize,
    pub refreshes: usize,
    /// Every request as `METHOD path`.
    pub requests: Vec<String>,
    /// The `Authorization` header of every request to `/mcp`.
    pub mcp_authorization: Vec<Option<String>>,
    codes: HashMap<String, Pending>,
    issued: usize,
    sse: Option<mpsc::UnboundedSender<String>>,
}

struct Pending {
    challenge: String,
    client_id: String,
    redirect_uri: String,
}

/// A running mock.
#[derive(Clone)]
pub struct MockOAuth {
    pub base: String,
    state: Arc<Mutex<State>>,
}

impl MockOAuth {
    /// Starts the mock on a free port of 127.0.0.1 in the current runtime.
    pub async fn start(registration: bool) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State { base: base.clone(), registration, ..State::default() }));
        state.lock().unwrap().clients.insert("fixed-client".into());
        let app = Router::new()
            .route("/mcp", post(mcp).get(mcp_get).delete(mcp_get))
            .route("/.well-known/oauth-protected-resource/mcp", get(resource_metadata))
            .route("/.well-known/oauth-authorization-server/tenant", get(server_metadata))
            .route("/tenant/register", post(register))
            .route("/tenant/authorize", get(authorize))
            .route("/tenant/token", post(token))
            .route("/sse", get(sse_stream))
            .route("/messages", post(sse_message))
            .with_state(Arc::clone(&state));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base, state }
    }

    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn sse_url(&self) -> String {
        format!("{}/sse", self.base)
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// Issues a token pair directly (as if an earlier sign-in had happened).
    pub fn issue(&self) -> (String, String) {
        issue(&mut self.state())
    }
}

/// A free loopback port for the OAuth callback.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

type App = Shared<Arc<Mutex<State>>>;

fn issue(state: &mut State) -> (String, String) {
    state.issued += 1;
    let access = format!("at-{}", state.issued);
    let refresh = format!("rt-{}", state.issued);
    state.access_tokens.insert(access.clone());
    state.refresh_tokens.insert(refresh.clone());
    (access, refresh)
}

fn log<'a>(state: &'a Arc<Mutex<State>>, method: &str, uri: &Uri) -> MutexGuard<'a, State> {
    let mut state = state.lock().unwrap();
    state.requests.push(format!("{method} {}", uri.path()));
    state
}

fn unauthorized(state: &State) -> Response {
    let challenge = format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#,
        state.base
    );
    (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)], "unauthorized").into_response()
}

fn authorized(state: &State, headers: &HeaderMap) -> bool {
    let header = headers.get("authorization").and_then(|value| value.to_str().ok()).unwrap_or_default();
    header.strip_prefix("Bearer ").is_some_and(|token| state.access_tokens.contains(token))
}

async fn mcp(Shared(state): App, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let mut state = log(&state, "POST", &uri);
    let header = headers.get("authorization").and_then(|value| value.to_str().ok()).map(str::to_owned);
    state.mcp_authorization.push(header);
    if !authorized(&state, &headers) {
        return unauthorized(&state);
    }
    let message: Value = serde_json::from_slice(&body).unwrap();
    match answer(&message) {
        Some(reply) => {
            ([("content-type", "application/json"), ("mcp-session-id", "s1")], reply.to_string()).into_response()
        }
        None => StatusCode::ACCEPTED.into_response(),
    }
}

async fn mcp_get(Shared(state): App, uri: Uri, headers: HeaderMap) -> Response {
    let state = log(&state, "GET", &uri);
    if !authorized(&state, &headers) {
        return unauthorized(&state);
    }
    StatusCode::METHOD_NOT_ALLOWED.into_response()
}

/// The MCP answers: initialize, tools/list (one `echo` tool), tools/call, ping.
fn answer(message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    message.get("method")?;
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "mock", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "echo",
            "description": "Echoes its text",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": message["params"]["arguments"]["text"]}]}),
        "ping" => json!({}),
        _ => {
            return Some(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}));
        }
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

async fn resource_metadata(Shared(state): App, uri: Uri) -> Response {
    let state = log(&state, "GET", &uri);
    axum::Json(json!({
        "resource": format!("{}/mcp", state.base),
        "authorization_servers": [format!("{}/tenant", state.base)],
        "scopes_supported": ["mcp:tools"],
    }))
    .into_response()
}

async fn server_metadata(Shared(state): App, uri: Uri) -> Response {
    let state = log(&state, "GET", &uri);
    let base = &state.base;
    let mut metadata = json!({
        "issuer": format!("{base}/tenant"),
        "authorization_endpoint": format!("{base}/tenant/authorize"),
        "token_endpoint": format!("{base}/tenant/token"),
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    });
    if state.registration {
        metadata["registration_endpoint"] = json!(format!("{base}/tenant/register"));
    }
    axum::Json(metadata).into_response()
}

async fn register(Shared(state): App, uri: Uri, body: Bytes) -> Response {
    let mut state = log(&state, "POST", &uri);
    let request: Value = serde_json::from_slice(&body).unwrap();
    assert!(request["redirect_uris"][0].as_str().unwrap().ends_with("/mcp/oauth/callback"), "{request}");
    assert_eq!(request["token_endpoint_auth_method"], "none");
    state.registrations += 1;
    let client_id = format!("dyn-client-{}", state.registrations);
    state.clients.insert(client_id.clone());
    (StatusCode::CREATED, axum::Json(json!({"client_id": client_id, "redirect_uris": request["redirect_uris"]})))
        .into_response()
}

async fn authorize(Shared(state): App, uri: Uri) -> Response {
    let mut state = log(&state, "GET", &uri);
    let query = pairs(uri.query().unwrap_or_default());
    let field = |name: &str| query.get(name).cloned().unwrap_or_default();
    let valid = field("response_type") == "code"
        && field("code_challenge_method") == "S256"
        && state.clients.contains(&field("client_id"))
        && field("resource") == format!("{}/mcp", state.base)
        && field("scope") == "mcp:tools";
    if !valid {
        return (StatusCode::BAD_REQUEST, format!("bad authorization request: {query:?}")).into_response();
    }
    let code = format!("code-{}", state.codes.len() + 1);
    let redirect_uri = field("redirect_uri");
    let pending = Pending {
        challenge: field("code_challenge"),
        client_id: field("client_id"),
        redirect_uri: redirect_uri.clone(),
    };
    state.codes.insert(code.clone(), pending);
    let location = format!("{redirect_uri}?code={code}&state={}", field("state"));
    (StatusCode::FOUND, [("location", location)]).into_response()
}

async fn token(Shared(state): App, uri: Uri, body: Bytes) -> Response {
    let mut state = log(&state, "POST", &uri);
    let form = pairs(&String::from_utf8_lossy(&body));
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    let refused = |error: &str| (StatusCode::BAD_REQUEST, axum::Json(json!({"error": error}))).into_response();
    if field("resource") != format!("{}/mcp", state.base) || !state.clients.contains(&field("client_id")) {
        return refused("invalid_client");
    }
    match field("grant_type").as_str() {
        "authorization_code" => {
            let Some(pending) = state.codes.remove(&field("code")) else { return refused("invalid_grant") };
            let digest = sha2::Sha256::digest(field("code_verifier").as_bytes());
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            if computed != pending.challenge
                || pending.client_id != field("client_id")
                || pending.redirect_uri != field("redirect_uri")
            {
                return refused("invalid_grant");
            }
            state.verified_exchanges += 1;
        }
        "refresh_token" => {
            if !state.refresh_tokens.remove(&field("refresh_token")) {
                return refused("invalid_grant");
            }
            state.refreshes += 1;
        }
        _ => return refused("unsupported_grant_type"),
    }
    let (access, refresh) = issue(&mut state);
    let mut answer =
        json!({"access_token": access, "token_type": "Bearer", "refresh_token": refresh, "scope": "mcp:tools"});
    if let Some(seconds) = state.expires_in {
        answer["expires_in"] = json!(seconds);
    }
    axum::Json(answer).into_response()
}

async fn sse_stream(Shared(state): App, uri: Uri) -> Response {
    let (sender, receiver) = mpsc::unbounded_channel();
    sender.send("event: endpoint\ndata: /messages?sessionId=1\n\n".to_owned()).unwrap();
    log(&state, "GET", &uri).sse = Some(sender);
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let frame = receiver.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(Bytes::from(frame)), receiver))
    });
    ([("content-type", "text/event-stream")], Body::from_stream(stream)).into_response()
}

async fn sse_message(Shared(state): App, uri: Uri, body: Bytes) -> Response {
    let state = log(&state, "POST", &uri);
    let message: Value = serde_json::from_slice(&body).unwrap();
    if let (Some(reply), Some(sender)) = (answer(&message), &state.sse) {
        sender.send(format!("event: message\ndata: {reply}\n\n")).unwrap();
    }
    StatusCode::ACCEPTED.into_response()
}

/// A decoded `application/x-www-form-urlencoded` string.
fn pairs(text: &str) -> HashMap<String, String> {
    reqwest::Url::parse(&format!("http://x/?{text}")).unwrap().query_pairs().into_owned().collect()
}
