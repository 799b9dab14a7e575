//! A plugin that keeps the window itself ([`Plugin::manages_context`]): the runner's proactive
//! compaction stands down, and Magic Context, registered from config, shapes the real requests.

use std::sync::Arc;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::ClientOptions;
use opencode_llm::LlmClient;
use opencode_llm::Message;
use opencode_llm::RetryPolicy;
use opencode_magic_context::MagicContext;
use opencode_mock_provider::MockProvider;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::MessagesOutput;
use opencode_plugin_host::ModelRef;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::SideModel;
use opencode_plugin_host::SideRequest;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::PluginHooks;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_store::NewSession;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::fast_retries;
use super::support::requests;
use super::support::text;
use super::support::transcript;

/// Sends only the newest message, and says it manages the window.
struct Newest;

impl Plugin for Newest {
    fn namespace(&self) -> &str {
        "newest"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([HookName::ChatMessagesTransform])
    }

    fn manages_context(&self) -> bool {
        true
    }

    fn chat_messages_transform<'a>(&'a self, _: &'a ChatInput, output: &'a mut MessagesOutput) -> HookFuture<'a> {
        let newest: Vec<Message> = output.messages.pop().into_iter().collect();
        output.messages = newest;
        Box::pin(async { Ok(()) })
    }
}

/// A runtime over the mock provider with a `context`-token model and `host`'s plugins.
async fn runtime(mock: &MockProvider, data: &std::path::Path, host: PluginHost, context: u64) -> SessionRuntime {
    host.ready().await.unwrap();
    let config: Config = serde_json::from_value(mock.opencode_config(json!({
        "compaction": {"reserved": 200, "preserve_recent_tokens": 1_000},
        "provider": {"mock": {"models": {"m": {"limit": {"context": context, "output": 200}, "cost": {"input": 3, "output": 15}}}}}
    })))
    .unwrap();
    let paths = Paths::under(data);
    let store = Arc::new(opencode_session_store::Store::open(paths.database()).unwrap());
    let catalog = Arc::new(Catalog::default().with_config(&config).unwrap());
    let llm = LlmClient::with_options(ClientOptions { retry: RetryPolicy::none(), ..ClientOptions::default() });
    let locations = StandardLocations::new(&config, paths.clone(), opencode_config::Env::default());
    let options = RuntimeOptions { retry: fast_retries(), titles: false, ..RuntimeOptions::default() };
    SessionRuntime::builder(store, llm, catalog, Arc::new(config), paths)
        .locations(locations)
        .options(options)
        .hooks(Arc::new(PluginHooks::new(Arc::new(host))))
        .build()
}

#[tokio::test]
async fn a_plugin_managing_the_window_stands_the_proactive_compaction_down() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let host = PluginHost::builder().plugin(Arc::new(Newest), Requirement::Required).build();
    assert!(!host.manages_context(), "nothing is ready before start");
    let runtime = runtime(&mock, data.path(), host, 3_000).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([text("ok"), text("Continuing.")]);
    runtime.run(PromptRequest::text(&session.id, "a".repeat(4_000))).await.unwrap();
    let second = runtime.run(PromptRequest::text(&session.id, "b".repeat(7_000))).await.unwrap();

    assert_eq!(second.outcome, DrainOutcome::Completed);
    let sent = requests(&mock);
    assert_eq!(sent.len(), 2, "no summary request: the plugin keeps the window");
    assert_eq!(transcript(&sent[1])[1..], [format!("user: {}", "b".repeat(7_000))]);
}

#[tokio::test]
async fn magic_context_from_config_shapes_the_provider_request() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The configured window is a fallback: the model's limits from the catalog win.
    let config = Config { magic_context: Some(json!({"context_limit": 8_000})), ..Config::default() };
    let plugin = Arc::new(MagicContext::from_config(&config, data.path()).unwrap().unwrap());
    let host = PluginHost::builder().plugin(Arc::clone(&plugin) as Arc<dyn Plugin>, Requirement::Optional).build();
    let runtime = runtime(&mock, data.path(), host, 64_000).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    // The model copies a tag; it is stored without it.
    mock.push_all([text("§7§ Hello."), text("Still here.")]);
    runtime.run(PromptRequest::text(&session.id, "hi")).await.unwrap();
    runtime.run(PromptRequest::text(&session.id, "and again")).await.unwrap();

    let sent = requests(&mock);
    let first = transcript(&sent[0]);
    let second = transcript(&sent[1]);
    assert!(first[1].starts_with("user: <session-history>"), "{first:?}");
    assert!(first[2].starts_with("user: <session-history-since>"), "{first:?}");
    assert_eq!(first[3], "user: §1§ hi");
    assert_eq!(second[..4], first[..4], "the second request replays the first byte for byte");
    assert_eq!(second[4..], ["assistant: §2§ Hello.".to_owned(), "user: §3§ and again".to_owned()]);
    assert!(data.path().join("magic-context/context.db").exists());
    let status = plugin.status(&session.id).unwrap().unwrap();
    let window = 64_000 - 200;
    assert_eq!(status.usage_percentage, status.usage_tokens as f64 * 100.0 / f64::from(window));
}

/// Keeps the side model the host hands it.
#[derive(Default)]
struct Keeper {
    side: std::sync::Mutex<Option<Arc<dyn SideModel>>>,
}

impl Plugin for Keeper {
    fn namespace(&self) -> &str {
        "keeper"
    }

    fn hooks(&self) -> HookSet {
        HookSet::EMPTY
    }

    fn attach_side_model(&self, model: Arc<dyn SideModel>) {
        *self.side.lock().unwrap() = Some(model);
    }
}

#[tokio::test]
async fn plugins_get_the_runtime_as_their_side_model_on_the_small_model() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let keeper = Arc::new(Keeper::default());
    let host = PluginHost::builder().plugin(Arc::clone(&keeper) as Arc<dyn Plugin>, Requirement::Required).build();
    let runtime = runtime(&mock, data.path(), host, 64_000).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    let side = keeper.side.lock().unwrap().clone().expect("the runtime handed its side model over");
    mock.push(text("<compartments/>"));
    let request = SideRequest {
        session_id: session.id.clone(),
        model: ModelRef { provider_id: "mock".into(), model_id: "m".into() },
        purpose: "historian".into(),
        system: "You summarise.".into(),
        prompt: "[0] U: hello".into(),
        max_output_tokens: 500,
    };
    let answer = side.complete(request).await.unwrap();
    assert_eq!((answer.text.as_str(), answer.model.as_str()), ("<compartments/>", "mock/m"));
    assert_eq!((answer.usage.input_tokens, answer.usage.output_tokens), (100, 10));
    // $3 / $15 per million tokens in and out.
    let bill = (100.0 * 3.0 + 10.0 * 15.0) / 1e6;
    assert!((answer.cost - bill).abs() < 1e-12, "{}", answer.cost);
    let totals = runtime.session(&session.id).await.unwrap();
    assert!((totals.cost - bill).abs() < 1e-12, "the session's cost counts the side call: {}", totals.cost);
    assert_eq!((totals.tokens.input, totals.tokens.output), (100, 10));
    let sent = requests(&mock);
    assert_eq!(transcript(&sent[0]), ["system: You summarise.".to_owned(), "user: [0] U: hello".to_owned()]);
    let unknown = SideRequest { session_id: "ses_unknown".into(), ..side_request_template() };
    let error = side.complete(unknown).await.unwrap_err();
    assert!(error.starts_with("historian request on the small model: "), "{error}");
}

fn side_request_template() -> SideRequest {
    SideRequest {
        session_id: String::new(),
        model: ModelRef { provider_id: "mock".into(), model_id: "m".into() },
        purpose: "historian".into(),
        system: "s".into(),
        prompt: "p".into(),
        max_output_tokens: 10,
    }
}
