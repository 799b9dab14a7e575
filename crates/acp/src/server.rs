//! The connection: one handler per ACP method, each answering from [`Shared`]. Handlers hold the
//! connection's dispatch loop, so nothing here waits on the client: a prompt's turn runs in a task
//! of its own, and so do permission requests.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol::v1::schema::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, AuthMethodTerminal, AuthenticateRequest,
    AuthenticateResponse, CancelNotification, ClientCapabilities, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LoadSessionRequest, McpCapabilities, NewSessionRequest,
    PromptCapabilities, PromptRequest, ResumeSessionRequest, SessionCapabilities, SessionListCapabilities,
    SessionResumeCapabilities, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, JsonRpcResponse};

use crate::error::AgentError;
use crate::session::Commands;
use crate::setup::Engine;

/// The product's name and version, as `initialize` reports them.
pub const AGENT_NAME: &str = "opencode";
pub const AGENT_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The sign-in method: the client runs `opencode auth login` in a terminal.
pub(crate) const LOGIN_METHOD: &str = "opencode-auth-login";

/// What every handler shares.
pub(crate) struct Shared {
    pub(crate) engine: Engine,
    /// Where sessions are created when the client names no usable directory (`--cwd`).
    pub(crate) cwd: PathBuf,
    initialized: AtomicBool,
    client: Mutex<ClientCapabilities>,
    /// The turn running in each session (one at a time).
    pub(crate) turns: Mutex<HashMap<String, Arc<Turn>>>,
    /// `reject_always` answers: (session, permission, pattern) never asked again on this connection.
    pub(crate) rejected: Mutex<HashSet<(String, String, String)>>,
}

/// A running prompt turn.
#[derive(Debug, Default)]
pub(crate) struct Turn {
    /// `session/cancel` arrived: the turn ends with `cancelled`, whatever the drain reports.
    pub(crate) cancelled: AtomicBool,
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn new(engine: Engine, cwd: PathBuf) -> Self {
        Self {
            engine,
            cwd,
            initialized: AtomicBool::new(false),
            client: Mutex::new(ClientCapabilities::new()),
            turns: Mutex::new(HashMap::new()),
            rejected: Mutex::new(HashSet::new()),
        }
    }

    /// Fails requests that come before `initialize`.
    pub(crate) fn ready(&self) -> Result<(), AgentError> {
        if self.initialized.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(AgentError::State("the connection is not initialized; send `initialize` first".to_owned()))
        }
    }

    pub(crate) fn client(&self) -> ClientCapabilities {
        lock(&self.client).clone()
    }

    /// Registers a turn for `session`; fails when one is already running there.
    pub(crate) fn begin_turn(&self, session: &str) -> Result<Arc<Turn>, AgentError> {
        let mut turns = lock(&self.turns);
        if turns.contains_key(session) {
            return Err(AgentError::State(format!(
                "a prompt is already running in session `{session}`; wait for its response or send session/cancel"
            )));
        }
        let turn = Arc::new(Turn::default());
        turns.insert(session.to_owned(), Arc::clone(&turn));
        Ok(turn)
    }

    pub(crate) fn end_turn(&self, session: &str) {
        lock(&self.turns).remove(session);
    }

    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        *lock(&self.client) = request.client_capabilities;
        self.initialized.store(true, Ordering::Release);
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().image(true).embedded_context(true))
            .mcp_capabilities(McpCapabilities::new().http(true))
            .session_capabilities(
                SessionCapabilities::new()
                    .list(SessionListCapabilities::new())
                    .resume(SessionResumeCapabilities::new()),
            )
            .auth(AgentAuthCapabilities::new());
        let login = AuthMethodTerminal::new(LOGIN_METHOD, "Sign in to a provider")
            .description("Runs `opencode auth login` to store a provider's API key or sign-in".to_owned())
            .args(vec!["auth".to_owned(), "login".to_owned()]);
        // Protocol v1 is the only version spoken; a client asking for another gets v1 back and decides.
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .auth_methods(vec![AuthMethod::Terminal(login)])
            .agent_info(Implementation::new(AGENT_NAME, AGENT_VERSION).title("OpenCode".to_owned()))
    }

    /// `authenticate`: succeeds when some provider has credentials (after `opencode auth login`, or
    /// an API key in the environment).
    async fn authenticate(&self, request: AuthenticateRequest) -> Result<AuthenticateResponse, AgentError> {
        self.ready()?;
        if request.method_id.0.as_ref() != LOGIN_METHOD {
            return Err(AgentError::invalid(format!(
                "unknown authentication method `{}` (known: {LOGIN_METHOD})",
                request.method_id.0
            )));
        }
        let runtime = self.engine.runtime.clone();
        let cwd = self.cwd.clone();
        let models = tokio::task::spawn_blocking(move || runtime.models(&cwd))
            .await
            .map_err(|err| AgentError::Internal(err.to_string()))??;
        if models.is_empty() {
            return Err(AgentError::State(
                "no provider has credentials yet; run `opencode auth login` or set a provider's API key".to_owned(),
            ));
        }
        Ok(AuthenticateResponse::new())
    }

    /// Interrupts every running turn (the client is gone) and waits until each stopped at a durable
    /// point.
    async fn shutdown(&self) {
        let sessions: Vec<String> = lock(&self.turns).keys().cloned().collect();
        for session in &sessions {
            tracing::info!(session.id = %session, "client gone; interrupting the turn");
            self.engine.runtime.interrupt(session);
        }
        for session in &sessions {
            self.engine.runtime.wait_idle(session).await;
        }
    }
}

/// Answers a request with a result or its error.
pub(crate) fn answer<T: JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<T, AgentError>,
) -> Result<(), agent_client_protocol::Error> {
    match result {
        Ok(response) => responder.respond(response),
        Err(err) => {
            tracing::debug!(?err, "request failed");
            responder.respond_with_error(err.into())
        }
    }
}

/// Answers a request that opens a session, then tells the client the session's commands (which
/// it can only use once it knows the session).
fn answer_with_commands<T: JsonRpcResponse>(
    responder: Responder<T>,
    result: Result<(T, Commands), AgentError>,
    cx: &ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let ready = result.as_ref().ok().map(|(_, commands)| commands.clone());
    answer(responder, result.map(|(response, _)| response))?;
    if let Some(commands) = ready {
        commands.send(cx);
    }
    Ok(())
}

/// Serves ACP over `transport` until the client closes it; then interrupts the turns still
/// running (their partial work is durable, as any interrupted turn's) and returns.
pub async fn serve(
    engine: Engine,
    cwd: PathBuf,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let shared = Arc::new(Shared::new(engine, cwd));
    let result = connection(Arc::clone(&shared), transport).await;
    shared.shutdown().await;
    result
}

async fn connection(
    shared: Arc<Shared>,
    transport: impl ConnectTo<Agent> + 'static,
) -> Result<(), agent_client_protocol::Error> {
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11) = (
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
        Arc::clone(&shared),
    );
    Agent
        .v1()
        .name(AGENT_NAME)
        .on_receive_request(
            async move |request: InitializeRequest, responder: Responder<InitializeResponse>, _cx| {
                responder.respond(s1.initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: AuthenticateRequest, responder, _cx| answer(responder, s2.authenticate(request).await),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer_with_commands(responder, s3.new_session(request).await, &cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer_with_commands(responder, s4.load_session(request, &cx).await, &cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx: ConnectionTo<Client>| {
                answer_with_commands(responder, s11.resume_session(request).await, &cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                answer(responder, s5.list_sessions(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                crate::turn::start(Arc::clone(&s6), request, responder, cx).await
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                s7.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, cx: ConnectionTo<Client>| {
                answer(responder, s8.set_mode(request, &cx).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, cx: ConnectionTo<Client>| {
                answer(responder, s9.set_config_option(request, &cx).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Client>| {
            tokio::select! {
                () = cx.incoming_closed() => {}
                () = crate::permission::bridge(s10, cx.clone()) => {}
            }
            Ok(())
        })
        .await
}
