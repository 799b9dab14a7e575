//! A runtime wired to the mock provider in temp dirs, SSE builders for Chat Completions streams, and
//! request inspection.

use std::path::Path;
use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::ClientOptions;
use opencode_llm::LlmClient;
use opencode_llm::RetryPolicy;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::MemoryOptions;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_store::MessageWithParts;
use opencode_session_store::NewSession;
use opencode_session_store::Session;
use opencode_session_store::Store;
use opencode_system_context::builtin::CalendarDate;
use opencode_system_context::builtin::DateSource;
use serde_json::Value;
use serde_json::json;
use tempfile::TempDir;

pub struct Harness {
    pub mock: MockProvider,
    pub runtime: SessionRuntime,
    pub store: Arc<Store>,
    pub project: TempDir,
    pub data: TempDir,
    pub session: Session,
}

/// Model limits and compaction settings of the mock model.
#[derive(Clone, Copy)]
pub struct Limits {
    pub context: u64,
    pub output: u64,
    pub reserved: u64,
    pub keep: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { context: 200_000, output: 8_000, reserved: 20_000, keep: 8_000 }
    }
}

pub async fn harness(tools: FnTools) -> Harness {
    harness_with(tools, Limits::default(), json!({})).await
}

pub async fn harness_with(tools: FnTools, limits: Limits, agents: Value) -> Harness {
    let mock = MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let runtime = runtime_at(&mock, data.path(), tools, limits, agents);
    let store = Arc::clone(runtime.store());
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    Harness { mock, runtime, store, project, data, session }
}

/// A runtime over the database in `data` (a second one over the same files simulates a restart).
pub fn runtime_at(mock: &MockProvider, data: &Path, tools: FnTools, limits: Limits, agents: Value) -> SessionRuntime {
    runtime_with_memory(mock, data, tools, limits, agents, MemoryOptions::default())
}

/// [`runtime_at`] keeping what `memory` allows in memory.
pub fn runtime_with_memory(
    mock: &MockProvider,
    data: &Path,
    tools: FnTools,
    limits: Limits,
    agents: Value,
    memory: MemoryOptions,
) -> SessionRuntime {
    let config: Config = serde_json::from_value(mock.opencode_config(json!({
        "agent": agents,
        "compaction": {"reserved": limits.reserved, "preserve_recent_tokens": limits.keep},
        "provider": {"mock": {"models": {"m": {"limit": {"context": limits.context, "output": limits.output}}}}}
    })))
    .unwrap();
    let paths = Paths::under(data);
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let catalog = Arc::new(Catalog::default().with_config(&config).unwrap());
    let llm = LlmClient::with_options(ClientOptions { retry: RetryPolicy::none(), ..ClientOptions::default() });
    let date = DateSource::with_clock(|| CalendarDate { year: 2026, month: 3, day: 14 });
    let locations = StandardLocations::new(&config, paths.clone(), opencode_config::Env::default())
        .with_date(date)
        .with_tools(move |_| Ok(Arc::new(tools.clone())));
    let options = RuntimeOptions { retry: fast_retries(), titles: false, memory, ..RuntimeOptions::default() };
    SessionRuntime::builder(store, llm, catalog, Arc::new(config), paths).locations(locations).options(options).build()
}

/// A streamed text answer.
pub fn text(answer: &str) -> MockResponse {
    MockResponse::chat_text(answer)
}

/// A streamed answer calling one tool.
pub fn tool_call(id: &str, name: &str, input: Value) -> MockResponse {
    tool_calls(&[(id, name, input)])
}

/// A streamed answer calling several tools.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> MockResponse {
    MockResponse::chat_tool_calls(calls, None)
}

/// A context-overflow rejection, as OpenAI sends it.
pub fn overflow() -> MockResponse {
    MockResponse::json(
        400,
        &json!({"error": {"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    )
}

/// The chat messages of every request the mock received.
pub fn requests(mock: &MockProvider) -> Vec<Vec<Value>> {
    mock.requests().iter().map(|r| r.body_json().unwrap()["messages"].as_array().unwrap().clone()).collect()
}

/// `role: text` of each message (tool calls as `name(args)`), for whole-value comparisons.
pub fn transcript(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap();
            let content = match &m["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
                _ => String::new(),
            };
            let calls: Vec<String> = m["tool_calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            format!(
                                "{}({})",
                                c["function"]["name"].as_str().unwrap(),
                                c["function"]["arguments"].as_str().unwrap()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if calls.is_empty() {
                format!("{role}: {content}")
            } else {
                format!("{role}: {content}{}", calls.join(","))
            }
        })
        .collect()
}

/// The session's whole transcript.
pub fn history(store: &Store, session: &str) -> Vec<MessageWithParts> {
    let page = store.read(|r| r.messages(session, None, 1000)).unwrap();
    page.messages
}

/// A runtime over a fresh store under `paths` whose Locations get the standard registry tools, asking
/// `permissions`; the catalog is `config`'s providers only and titles are off.
pub fn runtime_with_standard_tools(
    config: Config,
    paths: Paths,
    permissions: Arc<opencode_tool_registry::Permissions>,
) -> (SessionRuntime, Arc<Store>) {
    let (tool_config, tool_paths) = (config.clone(), paths.clone());
    let locations = StandardLocations::new(&config, paths.clone(), Default::default()).with_tools(move |dir| {
        let tools = opencode_session_runtime::RegistryTools::standard(
            dir,
            &tool_config,
            &tool_paths,
            Arc::clone(&permissions),
        )?;
        Ok(Arc::new(tools))
    });
    let store = Arc::new(Store::open(paths.database()).unwrap());
    let runtime = SessionRuntime::builder(
        Arc::clone(&store),
        LlmClient::new(),
        Arc::new(Catalog::default().with_config(&config).unwrap()),
        Arc::new(config),
        paths,
    )
    .locations(locations)
    .options(RuntimeOptions { titles: false, ..RuntimeOptions::default() })
    .build();
    (runtime, store)
}

/// The runtime's retries with a 10 ms first back-off, so tests of retries run fast.
pub fn fast_retries() -> opencode_llm::RetryPolicy {
    opencode_llm::RetryPolicy {
        base_delay: std::time::Duration::from_millis(10),
        ..opencode_session_runtime::RuntimeOptions::default().retry
    }
}
