//! The hooks that change what a session stores and sends, through the runtime: `chat.message`
//! rewrites a user message before it is written, `tool.definition` what the model sees of a tool,
//! `experimental.session.compacting` the summary prompt, and, through the real tool registry,
//! `permission.ask` answers before the user is asked and `shell.env` reaches `bash`.

use std::sync::Arc;
use std::sync::Mutex;

use opencode_catalog::Catalog;
use opencode_config::Config;
use opencode_config::Paths;
use opencode_llm::ClientOptions;
use opencode_llm::ContentPart;
use opencode_llm::LlmClient;
use opencode_llm::RetryPolicy;
use opencode_mock_provider::MockProvider;
use opencode_plugin_host::ChatMessageInput;
use opencode_plugin_host::ChatMessageOutput;
use opencode_plugin_host::CompactingOutput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::ModelRef;
use opencode_plugin_host::PermissionInput;
use opencode_plugin_host::PermissionOutput;
use opencode_plugin_host::PermissionStatus;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::SessionInput;
use opencode_plugin_host::ShellEnvInput;
use opencode_plugin_host::ShellEnvOutput;
use opencode_plugin_host::ToolDefinitionInput;
use opencode_plugin_host::ToolDefinitionOutput;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::PluginHooks;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RegistryTools;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::StandardLocations;
use opencode_session_runtime::ToolHost;
use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_tool_registry::Permissions;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::loop_::file_tools;
use super::support::fast_retries;
use super::support::history;
use super::support::requests;
use super::support::text;
use super::support::tool_call;

/// Implements the hooks under test, recording their inputs.
#[derive(Default)]
struct Editor {
    messages: Mutex<Vec<ChatMessageInput>>,
    shells: Mutex<Vec<ShellEnvInput>>,
}

impl Plugin for Editor {
    fn namespace(&self) -> &str {
        "editor"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([
            HookName::ChatMessage,
            HookName::ToolDefinition,
            HookName::SessionCompacting,
            HookName::PermissionAsk,
            HookName::ShellEnv,
        ])
    }

    fn chat_message<'a>(&'a self, input: &'a ChatMessageInput, output: &'a mut ChatMessageOutput) -> HookFuture<'a> {
        self.messages.lock().unwrap().push(input.clone());
        if let Some(ContentPart::Text { text, .. }) = output.parts.first_mut() {
            *text = text.replace("colour", "color");
        }
        output.parts.push(ContentPart::text("Answer in one sentence."));
        Box::pin(async { Ok(()) })
    }

    fn tool_definition<'a>(
        &'a self,
        input: &'a ToolDefinitionInput,
        output: &'a mut ToolDefinitionOutput,
    ) -> HookFuture<'a> {
        if input.tool_id == "read" {
            output.description = format!("{} (UTF-8 only)", output.description);
            output.parameters["required"] = json!(["path"]);
        }
        Box::pin(async { Ok(()) })
    }

    fn session_compacting<'a>(&'a self, input: &'a SessionInput, output: &'a mut CompactingOutput) -> HookFuture<'a> {
        output.context.push(format!("Keep ticket OC-7 of {}.", input.session_id));
        Box::pin(async { Ok(()) })
    }

    fn permission_ask<'a>(&'a self, input: &'a PermissionInput, output: &'a mut PermissionOutput) -> HookFuture<'a> {
        output.status = match input.patterns.first().map(String::as_str) {
            Some(p) if p.ends_with("secret.env") => PermissionStatus::Deny,
            Some(p) if p.ends_with(".env") => PermissionStatus::Allow,
            _ => PermissionStatus::Ask,
        };
        Box::pin(async { Ok(()) })
    }

    fn shell_env<'a>(&'a self, input: &'a ShellEnvInput, output: &'a mut ShellEnvOutput) -> HookFuture<'a> {
        self.shells.lock().unwrap().push(input.clone());
        output.env.insert("GREETING".into(), "hello from a plugin".into());
        Box::pin(async { Ok(()) })
    }
}

type Tools = Arc<dyn Fn(&std::path::Path, &Config, &Paths) -> Arc<dyn ToolHost> + Send + Sync>;

/// A runtime over the mock provider with `editor` as its only plugin, the tools `tools` builds, and
/// `extra` merged into the configuration.
async fn runtime(
    mock: &MockProvider,
    data: &std::path::Path,
    editor: &Arc<Editor>,
    extra: Value,
    tools: Tools,
) -> SessionRuntime {
    let host = PluginHost::builder().plugin(Arc::clone(editor) as Arc<dyn Plugin>, Requirement::Required).build();
    host.ready().await.unwrap();
    let config = mock.opencode_config(extra);
    let config: Config = serde_json::from_value(config).unwrap();
    let paths = Paths::under(data);
    let store = Arc::new(opencode_session_store::Store::open(paths.database()).unwrap());
    let catalog = Arc::new(Catalog::default().with_config(&config).unwrap());
    let llm = LlmClient::with_options(ClientOptions { retry: RetryPolicy::none(), ..ClientOptions::default() });
    let (tool_config, tool_paths) = (config.clone(), paths.clone());
    let locations = StandardLocations::new(&config, paths.clone(), opencode_config::Env::default())
        .with_tools(move |dir| Ok(tools(dir, &tool_config, &tool_paths)));
    let options = RuntimeOptions { retry: fast_retries(), titles: false, ..RuntimeOptions::default() };
    SessionRuntime::builder(store, llm, catalog, Arc::new(config), paths)
        .locations(locations)
        .options(options)
        .hooks(Arc::new(PluginHooks::new(Arc::new(host))))
        .build()
}

fn fn_tools() -> Tools {
    let tools = file_tools();
    Arc::new(move |_, _, _| Arc::new(tools.clone()))
}

#[tokio::test]
async fn chat_message_rewrites_the_user_message_before_it_is_stored_and_sent() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let editor = Arc::new(Editor::default());
    let runtime = runtime(&mock, data.path(), &editor, json!({}), fn_tools()).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([text("Blue.")]);

    let result = runtime.run(PromptRequest::text(&session.id, "What colour is the sky?")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let messages = history(runtime.store(), &session.id);
    let texts: Vec<&str> = messages[0]
        .parts
        .iter()
        .filter_map(|part| match &part.kind {
            PartKind::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["What color is the sky?", "Answer in one sentence."]);
    let sent = requests(&mock)[0].iter().find(|m| m["role"] == "user").unwrap().clone();
    assert_eq!(
        sent["content"],
        json!([{"type": "text", "text": "What color is the sky?"}, {"type": "text", "text": "Answer in one sentence."}])
    );
    // The hook saw the message it was rewriting, and the agent and model it runs under.
    let MessageInfo::User(user) = &messages[0].info else { panic!("a user message first") };
    assert_eq!(
        editor.messages.lock().unwrap().clone(),
        [ChatMessageInput {
            session_id: session.id.clone(),
            agent: Some("build".into()),
            model: Some(ModelRef { provider_id: "mock".into(), model_id: "m".into() }),
            message_id: Some(user.id.clone()),
            variant: None,
        }]
    );
}

#[tokio::test]
async fn tool_definition_changes_what_the_model_sees_of_a_tool() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let runtime = runtime(&mock, data.path(), &Arc::new(Editor::default()), json!({}), fn_tools()).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([text("Hi.")]);

    runtime.run(PromptRequest::text(&session.id, "Hi")).await.unwrap();

    let body = mock.requests()[0].body_json().unwrap();
    let tools: Vec<(Value, Value, Value)> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            (f["name"].clone(), f["description"].clone(), f["parameters"]["required"].clone())
        })
        .collect();
    assert_eq!(
        tools,
        [
            (json!("read"), json!("Read a file (UTF-8 only)"), json!(["path"])),
            (json!("write"), json!("Write a file"), Value::Null),
        ]
    );
}

#[tokio::test]
async fn session_compacting_adds_context_to_the_summary_prompt() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let extra = json!({"compaction": {"preserve_recent_tokens": 5}});
    let runtime = runtime(&mock, data.path(), &Arc::new(Editor::default()), extra, fn_tools()).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([text("Noted: the ticket is OC-7 and the fix is in parser.rs."), text("## Objective\nFix OC-7.")]);
    runtime.run(PromptRequest::text(&session.id, "Remember ticket OC-7; the bug is in parser.rs")).await.unwrap();

    let outcome = runtime.compact(&session.id).await;

    assert_eq!(outcome, Some(DrainOutcome::Completed));
    let summary = requests(&mock)[1].clone();
    let prompt = summary.last().unwrap()["content"].as_str().unwrap().to_owned();
    let context = format!("Keep ticket OC-7 of {}.", session.id);
    assert!(prompt.contains(&format!("{context}\n\n<conversation-history>\n")), "{prompt}");
    assert!(prompt.starts_with("Create a new anchored summary"), "{prompt}");
}

#[tokio::test]
async fn permission_ask_answers_for_the_user_and_shell_env_reaches_bash() {
    let mock = MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(project.path().join("dev.env"), "TOKEN=dev").unwrap();
    std::fs::write(project.path().join("secret.env"), "TOKEN=prod").unwrap();
    let editor = Arc::new(Editor::default());
    let permissions = Arc::new(Permissions::in_memory());
    let host = PluginHost::builder().plugin(Arc::clone(&editor) as Arc<dyn Plugin>, Requirement::Required).build();
    host.ready().await.unwrap();
    let tool_permissions = Arc::clone(&permissions);
    let tools: Tools = Arc::new(move |dir, config, paths| {
        let permissions = Arc::clone(&tool_permissions);
        Arc::new(RegistryTools::standard_with_plugins(dir, config, paths, permissions, &host).unwrap())
    });
    let runtime = runtime(&mock, data.path(), &editor, json!({}), tools).await;
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([
        tool_call("call_1", "read", json!({"filePath": "dev.env"})),
        tool_call("call_2", "read", json!({"filePath": "secret.env"})),
        tool_call("call_3", "bash", json!({"command": "echo \"$GREETING\""})),
        text("Done."),
    ]);

    // `build` asks before reading `*.env` files: without the plugin's answers this run would wait
    // for a user who never comes.
    let result = runtime.run(PromptRequest::text(&session.id, "Check the env files")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    assert!(permissions.pending(None).is_empty());
    let tool_results: Vec<String> = requests(&mock)
        .last()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(tool_results.len(), 3, "{tool_results:?}");
    assert!(tool_results[0].contains("TOKEN=dev"), "{}", tool_results[0]);
    assert_eq!(tool_results[1], "A plugin denied permission to use this specific tool call.");
    assert_eq!(tool_results[2].trim_end(), "hello from a plugin");
    let shells = editor.shells.lock().unwrap().clone();
    assert_eq!(
        shells,
        [ShellEnvInput {
            cwd: std::fs::canonicalize(project.path()).unwrap(),
            session_id: Some(session.id.clone()),
            call_id: Some("call_3".into()),
        }]
    );
}
