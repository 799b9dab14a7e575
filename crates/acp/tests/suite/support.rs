//! An agent over an in-process pipe, on a temporary home with the mock provider configured, and a
//! client (the protocol crate's own client side) that records what the agent sends it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, ContentBlock, FileSystemCapabilities, InitializeRequest, InitializeResponse, NewSessionRequest,
    NewSessionResponse, PermissionOptionKind, PromptRequest, PromptResponse, ReadTextFileRequest, ReadTextFileResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SessionUpdate, TextContent, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::{Agent, ByteStreams, Client};
use opencode_config::Env;
use opencode_mock_provider::{MockProvider, MockResponse};
use opencode_session_store::Store;
use serde_json::{Value, json};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio_util::compat::{Compat, TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

pub type Pipe = ByteStreams<Compat<WriteHalf<DuplexStream>>, Compat<ReadHalf<DuplexStream>>>;

/// A home, a project directory and the mock provider (`mock/m`, and `mock/r` with reasoning
/// variants).
pub struct Fixture {
    pub home: tempfile::TempDir,
    pub mock: MockProvider,
    /// The small model's provider: titles new sessions, apart from the scripted turns.
    pub titles: MockProvider,
    pub env: Env,
    pub work: PathBuf,
}

impl Fixture {
    pub async fn new(extra: Value) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let home = tempfile::tempdir().unwrap();
        let work = home.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let mock = MockProvider::start().await.unwrap();
        let titles = MockProvider::start().await.unwrap();
        titles.respond_with(|_| MockResponse::chat_text("A session title"));
        let mut config = json!({
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "x"},
                "models": {
                    "m": {"name": "Mock", "tool_call": true, "limit": {"context": 200_000, "output": 8_000}},
                    "r": {"name": "Reasoner", "tool_call": true, "reasoning": true, "limit": {"context": 200_000, "output": 8_000}}
                }
            },
            "titles": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("{}/v1", titles.base_url()), "apiKey": "x"},
                "models": {"t": {"limit": {"context": 8_000, "output": 100}}}
            }},
            "model": "mock/m",
            "small_model": "titles/t"
        });
        if let (Some(config), Value::Object(extra)) = (config.as_object_mut(), extra) {
            config.extend(extra);
        }
        let env = Env::from_pairs([
            ("HOME", home.path().join("home").display().to_string()),
            ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_owned()),
            ("OPENCODE_CONFIG_CONTENT", config.to_string()),
        ]);
        Self { home, mock, titles, env, work }
    }

    pub fn push(&self, responses: impl IntoIterator<Item = MockResponse>) {
        self.mock.push_all(responses);
    }

    /// The session database, read beside the agent.
    pub fn store(&self) -> Store {
        Store::open(self.env.paths().database()).unwrap()
    }

    /// Starts an agent; returns the client's end of its pipe and the agent's task (which ends when
    /// the client closes the pipe).
    pub fn agent(&self) -> (Pipe, tokio::task::JoinHandle<Result<(), agent_client_protocol::Error>>) {
        let (client, agent) = tokio::io::duplex(1 << 20);
        let engine = opencode_acp::engine(&self.env, &self.work).unwrap();
        let task = tokio::spawn(opencode_acp::serve(engine, self.work.clone(), pipe(agent)));
        (pipe(client), task)
    }

    /// Runs `body` as a client of a new agent answering permission requests with `answer`; waits
    /// until the agent has stopped.
    pub async fn client<T: Send + 'static>(
        &self,
        answer: Answer,
        body: impl AsyncFnOnce(Conn) -> T + Send + 'static,
    ) -> T {
        let (pipe, agent) = self.agent();
        let result = connect(pipe, answer, body).await;
        tokio::time::timeout(Duration::from_secs(20), agent).await.expect("the agent stopped").unwrap().unwrap();
        result
    }
}

fn pipe(stream: DuplexStream) -> Pipe {
    let (read, write) = tokio::io::split(stream);
    ByteStreams::new(write.compat_write(), read.compat())
}

/// How the client answers permission requests.
pub type Answer = Arc<dyn Fn(&RequestPermissionRequest) -> RequestPermissionOutcome + Send + Sync>;

/// Selects the option of `kind`.
pub fn choose(kind: PermissionOptionKind) -> Answer {
    Arc::new(move |request: &RequestPermissionRequest| {
        let option = request.options.iter().find(|option| option.kind == kind).expect("the option is offered");
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option.option_id.clone()))
    })
}

/// What the client received.
#[derive(Clone, Default)]
pub struct Log {
    pub updates: Arc<Mutex<Vec<SessionNotification>>>,
    pub permissions: Arc<Mutex<Vec<RequestPermissionRequest>>>,
    pub writes: Arc<Mutex<Vec<WriteTextFileRequest>>>,
    /// The editor's open buffers (written by `fs/write_text_file`, read by `fs/read_text_file`;
    /// a file without one is read from the disk, as an editor does).
    pub buffers: Arc<Mutex<HashMap<PathBuf, String>>>,
}

/// A connected client.
pub struct Conn {
    pub cx: ConnectionTo<Agent>,
    pub log: Log,
}

/// Connects a client over `pipe` and runs `body` with it.
pub async fn connect<T: Send + 'static>(
    pipe: Pipe,
    answer: Answer,
    body: impl AsyncFnOnce(Conn) -> T + Send + 'static,
) -> T {
    let log = Log::default();
    let (updates, permissions, writes) = (log.updates.clone(), log.permissions.clone(), log.writes.clone());
    let (read_buffers, write_buffers) = (log.buffers.clone(), log.buffers.clone());
    let out = Arc::new(Mutex::new(None));
    let result = Arc::clone(&out);
    Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                updates.lock().unwrap().push(notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                let outcome = answer(&request);
                permissions.lock().unwrap().push(request);
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest, responder, _cx| {
                write_buffers.lock().unwrap().insert(request.path.clone(), request.content.clone());
                writes.lock().unwrap().push(request);
                responder.respond(WriteTextFileResponse::new())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest, responder, _cx| {
                let open = read_buffers.lock().unwrap().get(&request.path).cloned();
                let content = open.unwrap_or_else(|| std::fs::read_to_string(&request.path).unwrap_or_default());
                responder.respond(ReadTextFileResponse::new(content))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(pipe, async move |cx: ConnectionTo<Agent>| {
            *result.lock().unwrap() = Some(body(Conn { cx, log }).await);
            Ok(())
        })
        .await
        .unwrap();
    out.lock().unwrap().take().expect("the client body ran")
}

impl Conn {
    /// `initialize`, advertising file reads and writes.
    pub async fn init(&self) -> InitializeResponse {
        let fs = FileSystemCapabilities::new().read_text_file(true).write_text_file(true);
        let request = InitializeRequest::new(ProtocolVersion::V1).client_capabilities(ClientCapabilities::new().fs(fs));
        self.cx.send_request(request).block_task().await.unwrap()
    }

    pub async fn new_session(&self, cwd: &Path) -> NewSessionResponse {
        self.cx.send_request(NewSessionRequest::new(cwd)).block_task().await.unwrap()
    }

    /// `initialize` then `session/new`; the session id.
    pub async fn start(&self, cwd: &Path) -> String {
        self.init().await;
        self.new_session(cwd).await.session_id.0.to_string()
    }

    pub async fn prompt(&self, session: &str, text: &str) -> Result<PromptResponse, agent_client_protocol::Error> {
        let blocks = vec![ContentBlock::Text(TextContent::new(text))];
        self.cx.send_request(PromptRequest::new(session.to_owned(), blocks)).block_task().await
    }

    /// The updates received so far for `session`.
    pub fn updates(&self, session: &str) -> Vec<SessionUpdate> {
        let updates = self.log.updates.lock().unwrap();
        updates.iter().filter(|n| n.session_id.0.as_ref() == session).map(|n| n.update.clone()).collect()
    }

    /// The text of the agent's message chunks for `session`, joined.
    pub fn agent_text(&self, session: &str) -> String {
        chunks(&self.updates(session), |update| match update {
            SessionUpdate::AgentMessageChunk(chunk) => Some(chunk.content.clone()),
            _ => None,
        })
    }

    /// Waits until an update of `session` satisfies `found`.
    pub async fn wait_for(&self, session: &str, found: impl Fn(&SessionUpdate) -> bool) {
        for _ in 0..400 {
            if self.updates(session).iter().any(&found) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no such update arrived: {:#?}", self.updates(session));
    }
}

/// The text of the chunks `pick` selects, joined.
pub fn chunks(updates: &[SessionUpdate], pick: impl Fn(&SessionUpdate) -> Option<ContentBlock>) -> String {
    updates
        .iter()
        .filter_map(pick)
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text),
            _ => None,
        })
        .collect()
}

/// A streamed text answer.
pub fn text(answer: &str) -> MockResponse {
    MockResponse::chat_text(answer)
}

/// A streamed answer calling one tool.
pub fn tool_call(id: &str, name: &str, input: Value) -> MockResponse {
    MockResponse::chat_tool_calls(&[(id, name, input)], Some((50, 5)))
}

/// An answer that starts, then stalls (until the turn is interrupted).
pub fn stalled(start: &str) -> MockResponse {
    let frame = json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": start}}]});
    MockResponse::sse([frame.to_string()]).then_stall()
}

/// A text answer cut off at the output limit.
pub fn truncated(answer: &str) -> MockResponse {
    MockResponse::sse([
        json!({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": answer}}]}).to_string(),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}).to_string(),
        "[DONE]".to_owned(),
    ])
}

/// Approves every permission request once.
pub fn choose_once() -> Answer {
    choose(agent_client_protocol::v1::schema::PermissionOptionKind::AllowOnce)
}

/// Each provider request's body, as text.
pub fn requests_of(fixture: &Fixture) -> Vec<String> {
    fixture.mock.requests().iter().map(|request| request.body_json().unwrap().to_string()).collect()
}
