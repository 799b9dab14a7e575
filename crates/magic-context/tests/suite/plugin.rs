//! The plugin on the host: off unless configured (then requests are untouched), fails closed
//! when its state cannot open, and its tools work through a tool registry.

use std::sync::Arc;

use indexmap::IndexMap;
use opencode_config::Config;
use opencode_config::ToolOutputConfig;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::protocol::Protocol;
use opencode_llm::protocol::anthropic_messages::AnthropicMessages;
use opencode_magic_context::MagicContext;
use opencode_magic_context::register;
use opencode_plugin_host::ChatInput;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginState;
use opencode_plugin_host::StartContext;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::Location;
use opencode_tool_registry::NoProgress;
use opencode_tool_registry::OutputStore;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::ToolRegistry;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::sessions;

fn config(section: Option<serde_json::Value>) -> Config {
    Config { magic_context: section, ..Config::default() }
}

fn chat_input() -> ChatInput {
    let mut input = ChatInput {
        session_id: "ses_1".into(),
        message_id: "msg_9".into(),
        agent: "build".into(),
        ..ChatInput::default()
    };
    input.model.provider_id = "anthropic".into();
    input.model.model_id = "claude-sonnet-4-5".into();
    input
}

fn request() -> LlmRequest {
    let mut request = LlmRequest::new("claude-sonnet-4-5").system("You are a coding agent.");
    request.messages = sessions::history(&sessions::generate(1, 4), 4);
    request
}

async fn host(config: &Config, data: &std::path::Path, project: &std::path::Path) -> PluginHost {
    let start = StartContext { directory: project.to_path_buf(), worktree: None };
    let host = register(PluginHost::builder(), config, data).start_context(start).build();
    host.ready().await.unwrap();
    host
}

/// The encoded request a host sends after its transforms.
async fn sent(host: &PluginHost) -> String {
    let mut request = request();
    host.apply_transforms(&chat_input(), &mut request).await;
    AnthropicMessages.encode(&request).unwrap().to_string()
}

#[tokio::test]
async fn off_unless_configured_and_then_requests_are_byte_identical() {
    let data = tempfile::tempdir().unwrap();
    let untouched = AnthropicMessages.encode(&request()).unwrap().to_string();
    for section in [None, Some(json!(false)), Some(json!({"enabled": false}))] {
        let host = host(&config(section.clone()), data.path(), data.path()).await;
        assert!(host.namespaces().is_empty(), "{section:?}");
        assert_eq!(sent(&host).await, untouched, "{section:?}");
    }
    assert!(!data.path().join("magic-context").exists(), "nothing of it ran");
    let on = host(&config(Some(json!(true))), data.path(), data.path()).await;
    assert_eq!(on.namespaces(), vec!["magic-context".to_owned()]);
    let managed = sent(&on).await;
    assert_ne!(managed, untouched);
    assert!(managed.contains("<session-history>") && managed.contains("§1§ "));
    assert!(data.path().join("magic-context/context.db").exists());
}

#[tokio::test]
async fn a_malformed_section_is_reported_and_nothing_runs() {
    let data = tempfile::tempdir().unwrap();
    let host = host(&config(Some(json!({"execute_threshold_percentage": 5}))), data.path(), data.path()).await;
    let report = host.report().unwrap();
    let problem = report.problems().next().unwrap();
    assert_eq!(
        problem.state,
        PluginState::NotLoaded("magic_context config: execute_threshold_percentage must be 20..=90, got 5".into())
    );
    assert!(host.namespaces().is_empty());
}

#[tokio::test]
async fn it_fails_closed_when_its_state_cannot_open() {
    let data = tempfile::tempdir().unwrap();
    // A file where its directory should be.
    std::fs::write(data.path().join("magic-context"), "not a directory").unwrap();
    let host = host(&config(Some(json!(true))), data.path(), data.path()).await;
    let report = host.report().unwrap();
    let problem = report.problems().next().unwrap();
    assert!(
        matches!(&problem.state, PluginState::Failed(reason) if reason.starts_with("magic context state at ")),
        "{problem:?}"
    );
    assert!(host.namespaces().is_empty(), "a plugin that did not start gets no hooks");
    assert_eq!(sent(&host).await, AnthropicMessages.encode(&request()).unwrap().to_string());
}

fn tool_context(registry: &Arc<ToolRegistry>, root: &std::path::Path) -> ToolContext {
    let dirs = AgentDirs { tool_output: root.join("tool-output"), plans: root.join("plans"), ..AgentDirs::default() };
    let agents = Agents::new(&dirs, None, &IndexMap::new());
    ToolContext {
        session_id: "ses_1".into(),
        message_id: "msg_1".into(),
        call_id: "call_1".into(),
        agent: agents.get("build").unwrap(),
        location: Arc::clone(registry.location()),
        cancel: CancellationToken::new(),
        permissions: Arc::new(Permissions::in_memory()),
        progress: Arc::new(NoProgress),
        output: registry.output().clone(),
        editor: None,
    }
}

#[tokio::test]
async fn the_agent_tools_work_through_the_tool_registry() {
    let temp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(temp.path()).unwrap();
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let output = OutputStore::new(root.join("tool-output"), ToolOutputConfig::default());
    let registry = Arc::new(ToolRegistry::new(Location::new(&project, output.dir()).unwrap(), output).unwrap());
    let host = host(&config(Some(json!(true))), &root, &project).await;
    assert!(host.attach_tools(&registry).is_empty());
    let mut request = request();
    request.messages.insert(0, Message::user("Remember: the release branch prefix is rel-7."));
    host.apply_transforms(&chat_input(), &mut request).await;
    let ctx = tool_context(&registry, &root);
    let run = |name: &'static str, input: serde_json::Value| {
        let tool = registry.get(name).unwrap();
        let ctx = ctx.clone();
        async move { tool.execute(input, &ctx).await }
    };
    let found = run("ctx_search", json!({"query": "release branch prefix"})).await.unwrap();
    assert!(found.text.contains("[message 0] Remember: the release branch prefix is rel-7."), "{}", found.text);
    let expanded = run("ctx_expand", json!({"start": 0, "end": 0})).await.unwrap();
    assert_eq!(expanded.text, "[0] user: Remember: the release branch prefix is rel-7.\n");
    assert_eq!(run("ctx_note", json!({"action": "write", "content": "check CI"})).await.unwrap().text, "note 1 saved");
    assert_eq!(run("ctx_note", json!({"action": "read"})).await.unwrap().text, "[1] check CI");
    let saved =
        run("ctx_memory", json!({"action": "write", "category": "naming", "content": "handlers end in _handler"}));
    assert_eq!(saved.await.unwrap().text, "memory 1 saved");
    let listed = run("ctx_memory", json!({"action": "list"})).await.unwrap();
    assert_eq!(listed.text, "[1] NAMING: handlers end in _handler");
    let queued = run("ctx_reduce", json!({"drop": "2-3"})).await.unwrap();
    assert_eq!(queued.text, "queued 2 drop(s); they apply on the next cache-busting pass");
    match run("ctx_reduce", json!({"drop": "5000"})).await {
        Err(ToolError::Model(message)) => assert!(message.starts_with("no tag §5000§"), "{message}"),
        other => panic!("expected a model error, got {other:?}"),
    }
    let plugin = MagicContext::from_config(&config(Some(json!(true))), &root).unwrap().unwrap();
    assert_eq!(plugin.database(), root.join("magic-context/context.db"));
}

#[tokio::test]
async fn the_historian_runs_after_a_pass_and_the_next_executing_pass_shows_its_compartments() {
    let data = tempfile::tempdir().unwrap();
    let section = json!({"context_limit": 60_000, "protected_user_turns": 1});
    let plugin = Arc::new(MagicContext::from_config(&config(Some(section)), data.path()).unwrap().unwrap());
    let start = StartContext { directory: data.path().to_path_buf(), worktree: None };
    let host = PluginHost::builder()
        .plugin(
            Arc::clone(&plugin) as Arc<dyn opencode_plugin_host::Plugin>,
            opencode_plugin_host::Requirement::Required,
        )
        .start_context(start)
        .build();
    host.ready().await.unwrap();
    let mut request = request();
    request.messages = sessions::history(&sessions::generate(2, 10), 10);
    let raw = request.clone();
    host.apply_transforms(&chat_input(), &mut request).await;
    // The historian runs on its own thread after the pass.
    let mut compartments = 0;
    for _ in 0..100 {
        compartments = plugin.status("ses_1").unwrap().unwrap().compartments;
        if compartments > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(compartments > 0, "the historian published nothing");
    assert!(plugin.flush("ses_1").unwrap());
    let mut next = raw.clone();
    host.apply_transforms(&chat_input(), &mut next).await;
    assert!(next.messages[1].text().contains("## 0-"), "{}", next.messages[1].text());
    assert!(next.messages.len() < request.messages.len(), "covered messages left the request");
}

#[tokio::test]
async fn past_the_block_line_the_pass_waits_for_the_historian() {
    let data = tempfile::tempdir().unwrap();
    let section = json!({"context_limit": 8_000, "protected_user_turns": 1});
    let host = host(&config(Some(section)), data.path(), data.path()).await;
    let mut request = request();
    request.messages = sessions::history(&sessions::generate(2, 10), 10);
    let raw = request.messages.len();
    host.apply_transforms(&chat_input(), &mut request).await;
    let slots = format!("{}{}", request.messages[0].text(), request.messages[1].text());
    assert!(slots.contains("## 0-"), "this very request carries the compartments: {slots}");
    assert!(request.messages.len() < raw);
}

/// A small model that summarises the whole range in one compartment, or answers `fixed`.
struct FakeSide {
    fixed: Option<&'static str>,
    seen: std::sync::Mutex<Vec<opencode_plugin_host::SideRequest>>,
}

impl opencode_plugin_host::SideModel for FakeSide {
    fn complete(
        &self,
        request: opencode_plugin_host::SideRequest,
    ) -> futures_util::future::BoxFuture<'_, Result<opencode_plugin_host::SideAnswer, String>> {
        let numbers: Vec<usize> =
            request.prompt.lines().filter_map(|line| line.strip_prefix('[')?.split(']').next()?.parse().ok()).collect();
        let (first, last) = (numbers.first().copied().unwrap_or(0), numbers.last().copied().unwrap_or(0));
        let text = self.fixed.map(str::to_owned).unwrap_or_else(|| {
            format!(
                "<compartments><compartment start=\"{first}\" end=\"{last}\" title=\"Summarised by the small model\">\
                 <p1>I fixed things.</p1><p2>Fixed.</p2><p3>Fixed.</p3><p4>src/lib.rs</p4></compartment></compartments>\
                 <facts><CONFIG_VALUES>* The staging port is 5433.</CONFIG_VALUES></facts>"
            )
        });
        self.seen.lock().unwrap().push(request);
        let usage = opencode_llm::Usage::from_exclusive(1_000, 0, 0, 200, 0);
        let answer =
            opencode_plugin_host::SideAnswer { text, model: "anthropic/claude-haiku-4-5".into(), usage, cost: 0.002 };
        Box::pin(async move { Ok(answer) })
    }
}

/// Runs a pass over ten turns with `side` as the host's side model and returns m[1] after the
/// historian published and a flushed pass, and `/ctx-status` then.
async fn history_through(side: Arc<FakeSide>) -> (String, String) {
    let data = tempfile::tempdir().unwrap();
    let section = json!({"context_limit": 60_000, "protected_user_turns": 1});
    let plugin = Arc::new(MagicContext::from_config(&config(Some(section)), data.path()).unwrap().unwrap());
    let host = PluginHost::builder()
        .plugin(
            Arc::clone(&plugin) as Arc<dyn opencode_plugin_host::Plugin>,
            opencode_plugin_host::Requirement::Required,
        )
        .build();
    host.ready().await.unwrap();
    host.provide_side_model(side);
    let mut request = request();
    request.messages = sessions::history(&sessions::generate(2, 10), 10);
    let raw = request.clone();
    host.apply_transforms(&chat_input(), &mut request).await;
    for _ in 0..100 {
        if plugin.status("ses_1").unwrap().unwrap().compartments > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    plugin.flush("ses_1").unwrap();
    let mut next = raw;
    host.apply_transforms(&chat_input(), &mut next).await;
    (next.messages[1].text(), plugin.status("ses_1").unwrap().unwrap().to_string())
}

#[tokio::test]
async fn with_a_side_model_the_historian_asks_the_small_model() {
    let side = Arc::new(FakeSide { fixed: None, seen: std::sync::Mutex::new(Vec::new()) });
    let (m1, status) = history_through(Arc::clone(&side)).await;
    assert!(m1.contains("Summarised by the small model\nI fixed things."), "{m1}");
    assert!(
        m1.contains("<memory id=\"1\" category=\"CONFIG_VALUES\">The staging port is 5433.</memory>"),
        "the answer's facts became project memories: {m1}"
    );
    assert!(status.ends_with("1 small-model call(s) (1000 tokens in, 200 out, $0.0020)"), "{status}");
    let seen = side.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!((seen[0].purpose.as_str(), seen[0].session_id.as_str()), ("historian", "ses_1"));
    assert_eq!(seen[0].model, chat_input().model);
    assert_eq!(seen[0].system, opencode_magic_context::historian::SYSTEM);
    assert!(
        seen[0].prompt.starts_with("<project_memory>\n</project_memory>\n<new_messages>\n[0] U: "),
        "{}",
        seen[0].prompt
    );
}

#[tokio::test]
async fn an_answer_that_breaks_the_rules_gives_way_to_the_digest() {
    let side = Arc::new(FakeSide { fixed: Some("Sorry, I cannot help."), seen: std::sync::Mutex::new(Vec::new()) });
    let (m1, status) = history_through(Arc::clone(&side)).await;
    assert_eq!(side.seen.lock().unwrap().len(), 1, "the small model was asked");
    assert!(m1.contains("\nU: "), "the digest was used instead: {m1}");
    assert!(status.ends_with("1 small-model call(s) (1000 tokens in, 200 out, $0.0020)"), "its cost counts: {status}");
}
