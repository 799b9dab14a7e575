//! External plugins over JSON-RPC: the Python test plugin transforms chat params, adds a tool and a
//! Context Source; a crashing plugin is reported; a hung plugin times out and the hook is skipped.

use std::sync::Arc;
use std::time::Duration;

use opencode_llm::LlmRequest;
use opencode_plugin_host::PluginEvent;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginState;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::StartContext;
use opencode_plugin_host::ToolCallInput;
use opencode_plugin_host::external::ExternalPlugin;
use opencode_plugin_host::external::ExternalSpec;
use opencode_system_context::SystemContextRegistry;
use opencode_tool_registry::ToolError;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Project;
use super::support::Recorder;
use super::support::acme;
use super::support::chat_input;

async fn host_with(project: &Project, spec: ExternalSpec) -> PluginHost {
    let requirement = spec.requirement;
    let host = PluginHost::builder()
        .plugin(Arc::new(ExternalPlugin::new(spec)), requirement)
        .start_context(StartContext { directory: project.dir(), worktree: None })
        .build();
    host.ready().await.unwrap();
    host
}

#[tokio::test]
async fn an_external_plugin_transforms_chat_params_and_headers() {
    let project = Project::new();
    let host = host_with(&project, acme("normal")).await;
    assert_eq!(host.namespaces(), vec!["acme"]);
    host.event(&PluginEvent { kind: "session.idle".into(), properties: json!({"sessionID": "ses_1"}) });
    host.event(&PluginEvent { kind: "session.error".into(), properties: json!({}) });
    let mut request = LlmRequest::new("gpt-5");
    request.generation.max_tokens = Some(1000);
    let failures = host.apply_chat_params(&chat_input(), &mut request).await;
    assert_eq!(failures, vec![]);
    assert_eq!(request.generation.temperature, Some(0.1));
    assert_eq!(request.generation.max_tokens, Some(1000));
    assert_eq!(request.options.0["openai"], json!({"reasoningEffort": "low"}));
    assert_eq!(request.http.headers["x-acme-model"], "gpt-5");
    // Events are notifications sent in order on the same pipe, so they arrived before the hook call.
    assert_eq!(request.http.headers["x-acme-events"], "session.idle,session.error");
    host.shutdown().await;
}

#[tokio::test]
async fn an_external_tool_is_a_registry_tool_executed_by_the_plugin() {
    let project = Project::new();
    let host = host_with(&project, acme("normal")).await;
    assert_eq!(host.attach_tools(&project.registry), vec![]);
    let tool = project.registry.get("acme_echo").unwrap();
    assert_eq!(tool.description(), "Echoes its text back.");
    assert_eq!(tool.parameters()["required"], json!(["text"]));

    let mut args = json!({"text": "hello"});
    let input = ToolCallInput { tool: "acme_echo".into(), session_id: "ses_1".into(), call_id: "call_1".into() };
    assert_eq!(host.apply_tool_before(&input, &mut args).await, vec![]);
    let output = tool.execute(args, &project.ctx()).await.unwrap();
    assert_eq!(output.text, "echo: HELLO");
    assert_eq!(output.title.as_deref(), Some("echo"));
    assert_eq!(output.metadata["session"], json!("ses_1"));

    let err = tool.execute(json!({"text": "fail"}), &project.ctx()).await.unwrap_err();
    assert_eq!(err, ToolError::model("plugin `acme` failed `tool.execute`: acme_echo refuses to fail"));

    assert!(host.unload("acme").await);
    assert!(project.registry.get("acme_echo").is_none());
}

#[tokio::test]
async fn an_external_context_source_renders_into_the_baseline_and_is_removed_on_unload() {
    let project = Project::new();
    let host = host_with(&project, acme("normal")).await;
    let registry = SystemContextRegistry::new();
    assert_eq!(host.attach_context(&registry), vec![]);
    let first = registry.load().await.unwrap().initialize().await.unwrap();
    assert_eq!(first.baseline.text, "Acme todos: write the tests first.");

    assert!(host.unload("acme").await);
    let after = registry.load().await.unwrap();
    assert_eq!(after.len(), 0);
}

#[tokio::test]
async fn a_plugin_that_crashes_at_start_is_reported_with_its_stderr() {
    let project = Project::new();
    let host = PluginHost::builder()
        .plugin(Arc::new(ExternalPlugin::new(acme("crash"))), Requirement::Optional)
        .plugin(Recorder::new("fine"), Requirement::Required)
        .start_context(StartContext { directory: project.dir(), worktree: None })
        .build();
    let report = host.ready().await.unwrap();
    let PluginState::Failed(reason) = &report.plugins[0].state else { panic!("{report:?}") };
    assert_eq!(report.plugins[0].name, "acme");
    assert!(reason.starts_with("plugin `acme` exited: its output closed"), "{reason}");
    assert!(reason.contains("acme: cannot find its license file"), "{reason}");
    assert_eq!(host.namespaces(), vec!["fine"]);
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_failure() {
    let project = Project::new();
    let spec = ExternalSpec::new("ghost", vec!["/nonexistent/plugin".into()]);
    let host = PluginHost::builder()
        .plugin(Arc::new(ExternalPlugin::new(spec)), Requirement::Required)
        .start_context(StartContext { directory: project.dir(), worktree: None })
        .build();
    let err = host.ready().await.unwrap_err().to_string();
    assert!(
        err.starts_with("required plugin `ghost` failed to start: cannot start plugin `ghost` (/nonexistent/plugin)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_hung_plugin_times_out_and_the_hook_is_skipped() {
    let project = Project::new();
    let mut spec = acme("hang");
    spec.call_timeout = Duration::from_millis(200);
    let host = host_with(&project, spec).await;
    let mut request = LlmRequest::new("gpt-5");
    let failures = host.apply_chat_params(&chat_input(), &mut request).await;
    let errors: Vec<(&str, &str, &str)> =
        failures.iter().map(|failure| (failure.plugin.as_str(), failure.hook, failure.error.as_str())).collect();
    assert_eq!(
        errors,
        vec![
            ("acme", "chat.params", "plugin `acme` did not answer `hook` within 200 ms"),
            ("acme", "chat.headers", "plugin `acme` did not answer `hook` within 200 ms"),
        ]
    );
    assert_eq!(request, LlmRequest::new("gpt-5"));
    host.shutdown().await;
}

#[tokio::test]
async fn a_slow_plugin_is_awaited_before_ready_returns() {
    let project = Project::new();
    let mut spec = acme("slow");
    spec.options = json!({"delay": 0.3, "namespace": "sloth"});
    spec.requirement = Requirement::Required;
    let host = host_with(&project, spec).await;
    assert_eq!(host.namespaces(), vec!["sloth"]);
    let mut request = LlmRequest::new("gpt-5");
    assert_eq!(host.apply_chat_params(&chat_input(), &mut request).await, vec![]);
    assert_eq!(request.generation.temperature, Some(0.1));
}
