//! Plugins through the runtime's hook seam ([`PluginHooks`]): `chat.params` reaches the provider
//! request, `tool.execute.before`/`after` rewrite a call and its stored result, `event` sees the
//! bus, and a failing plugin hook never fails the turn.

use std::sync::Arc;
use std::sync::Mutex;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::ClientOptions;
use opencode_llm::LlmClient;
use opencode_llm::RetryPolicy;
use opencode_mock_provider::MockProvider;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::ChatParamsOutput;
use opencode_plugin_host::HookError;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::ModelLimit;
use opencode_plugin_host::ModelRef;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginEvent;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::ToolAfterInput;
use opencode_plugin_host::ToolAfterOutput;
use opencode_plugin_host::ToolBeforeOutput;
use opencode_plugin_host::ToolCallInput;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::PluginHooks;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_session_store::ToolState;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::loop_::file_tools;
use super::support::fast_retries;
use super::support::history;
use super::support::requests;
use super::support::text;
use super::support::tool_call;

/// Cools the model down, redirects reads to `notes.txt`, tags tool output, and records what it saw.
#[derive(Default)]
struct Reviewer {
    chats: Mutex<Vec<ChatInput>>,
    after: Mutex<Vec<ToolAfterInput>>,
    events: Mutex<Vec<String>>,
}

impl Plugin for Reviewer {
    fn namespace(&self) -> &str {
        "reviewer"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatParams, HookName::ToolExecuteBefore, HookName::ToolExecuteAfter, HookName::Event])
    }

    fn event(&self, event: &PluginEvent) {
        self.events.lock().unwrap().push(event.kind.clone());
    }

    fn chat_params<'a>(&'a self, input: &'a ChatInput, output: &'a mut ChatParamsOutput) -> HookFuture<'a> {
        self.chats.lock().unwrap().push(input.clone());
        output.temperature = Some(0.25);
        Box::pin(async { Ok(()) })
    }

    fn tool_execute_before<'a>(&'a self, _: &'a ToolCallInput, output: &'a mut ToolBeforeOutput) -> HookFuture<'a> {
        output.args["path"] = json!("notes.txt");
        Box::pin(async { Ok(()) })
    }

    fn tool_execute_after<'a>(&'a self, input: &'a ToolAfterInput, output: &'a mut ToolAfterOutput) -> HookFuture<'a> {
        self.after.lock().unwrap().push(input.clone());
        output.output = format!("[reviewed] {}", output.output);
        output.title = Some("reviewed".to_owned());
        Box::pin(async { Ok(()) })
    }
}

/// Fails every `chat.params` call.
struct Broken;

impl Plugin for Broken {
    fn namespace(&self) -> &str {
        "broken"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatParams])
    }

    fn chat_params<'a>(&'a self, _: &'a ChatInput, output: &'a mut ChatParamsOutput) -> HookFuture<'a> {
        let _untouched = output;
        Box::pin(async { Err(HookError::new("boom")) })
    }
}

/// A runtime over the mock provider whose hooks are `host`'s plugins.
async fn runtime(mock: &MockProvider, data: &std::path::Path, host: PluginHost) -> SessionRuntime {
    host.ready().await.unwrap();
    let config: Config = serde_json::from_value(mock.opencode_config(json!({}))).unwrap();
    let paths = Paths::under(data);
    let store = Arc::new(opencode_session_store::Store::open(paths.database()).unwrap());
    let catalog = Arc::new(Catalog::default().with_config(&config).unwrap());
    let llm = LlmClient::with_options(ClientOptions { retry: RetryPolicy::none(), ..ClientOptions::default() });
    let tools = file_tools();
    let locations = StandardLocations::new(&config, paths.clone(), opencode_config::Env::default())
        .with_tools(move |_| Ok(Arc::new(tools.clone())));
    let options = RuntimeOptions { retry: fast_retries(), titles: false, ..RuntimeOptions::default() };
    SessionRuntime::builder(store, llm, catalog, Arc::new(config), paths)
        .locations(locations)
        .options(options)
        .hooks(Arc::new(PluginHooks::new(Arc::new(host))))
        .build()
}

#[tokio::test]
async fn a_rust_plugin_changes_chat_params_and_rewrites_a_tool_call_and_its_stored_output() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(project.path().join("notes.txt"), "draft").unwrap();
    let reviewer = Arc::new(Reviewer::default());
    let host = PluginHost::builder().plugin(Arc::clone(&reviewer) as Arc<dyn Plugin>, Requirement::Required).build();
    let runtime = runtime(&mock, data.path(), host).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([tool_call("call_1", "read", json!({"path": "elsewhere.txt"})), text("It says draft.")]);

    let result = runtime.run(PromptRequest::text(&session.id, "What do my notes say?")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    // chat.params reached both provider requests.
    let bodies: Vec<Value> = mock.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 2);
    assert!(bodies.iter().all(|body| body["temperature"] == json!(0.25)), "{bodies:?}");
    // tool.execute.after's output is what the model saw next ...
    let tool_message = requests(&mock)[1].iter().find(|m| m["role"] == "tool").unwrap().clone();
    assert_eq!(tool_message["content"], json!("[reviewed] draft"));
    // ... and what history stored, with tool.execute.before's rewritten input.
    let messages = history(runtime.store(), &session.id);
    let tool = messages[1].parts.iter().find_map(|p| match &p.kind {
        PartKind::Tool { state, .. } => Some(state.clone()),
        _ => None,
    });
    let Some(ToolState::Completed { input, output, title, .. }) = tool else { panic!("{tool:?}") };
    assert_eq!(
        (input, output.as_str(), title.as_str()),
        (json!({"path": "notes.txt"}), "[reviewed] draft", "reviewed")
    );
    // The hooks were told which turn and call they ran for.
    let chats = reviewer.chats.lock().unwrap().clone();
    assert_eq!(
        chats[0],
        ChatInput {
            session_id: session.id.clone(),
            message_id: messages[1].info.id().to_owned(),
            agent: "build".into(),
            model: ModelRef { provider_id: "mock".into(), model_id: "m".into() },
            limit: Some(ModelLimit { context: 200_000, output: 8_000 }),
        }
    );
    let after = reviewer.after.lock().unwrap().clone();
    assert_eq!(
        after,
        [ToolAfterInput {
            tool: "read".into(),
            session_id: session.id.clone(),
            call_id: "call_1".into(),
            args: json!({"path": "notes.txt"}),
        }]
    );
    // event saw the bus under OpenCode's names.
    let events = reviewer.events.lock().unwrap().clone();
    for kind in ["session.status", "message.updated", "message.part.updated", "message.part.delta"] {
        assert!(events.iter().any(|seen| seen == kind), "{kind} missing from {events:?}");
    }
}

#[tokio::test]
async fn a_failing_plugin_hook_is_skipped_and_the_turn_completes() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = PluginHost::builder()
        .plugin(Arc::new(Broken), Requirement::Optional)
        .plugin(Arc::new(Reviewer::default()), Requirement::Optional)
        .build();
    let runtime = runtime(&mock, data.path(), host).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([text("Hello.")]);

    let result = runtime.run(PromptRequest::text(&session.id, "Hi")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let body = mock.requests()[0].body_json().unwrap();
    assert_eq!(body["temperature"], json!(0.25), "the next plugin still ran");
}
