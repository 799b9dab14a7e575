//! The hooks behind other crates' seams and the runtime's helpers: `config` at start-up,
//! `permission.ask` in the tool registry's permission service, `shell.env` in the `bash` tool,
//! `tool.definition`, `chat.message` and `experimental.session.compacting`.

use std::sync::Arc;
use std::sync::Mutex;

use opencode_config::Config;
use opencode_llm::ContentPart;
use opencode_llm::ToolDefinition;
use opencode_plugin_host::ChatMessageInput;
use opencode_plugin_host::ChatMessageOutput;
use opencode_plugin_host::CompactingOutput;
use opencode_plugin_host::HookFuture;
use opencode_plugin_host::HookName;
use opencode_plugin_host::HookSet;
use opencode_plugin_host::PermissionInput;
use opencode_plugin_host::PermissionOutput;
use opencode_plugin_host::PermissionStatus;
use opencode_plugin_host::Plugin;
use opencode_plugin_host::PluginHost;
use opencode_plugin_host::PluginPermissions;
use opencode_plugin_host::PluginShellEnv;
use opencode_plugin_host::Requirement;
use opencode_plugin_host::SessionInput;
use opencode_plugin_host::ShellEnvInput;
use opencode_plugin_host::ShellEnvOutput;
use opencode_plugin_host::ToolDefinitionInput;
use opencode_plugin_host::ToolDefinitionOutput;
use opencode_tool_registry::PermissionAsk;
use opencode_tool_registry::PermissionFailure;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::tools::EnvOverlay;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Project;

/// Implements every seam hook, recording what it was given.
#[derive(Default)]
struct Everything {
    seen_model: Mutex<Option<String>>,
    permissions: Mutex<Vec<PermissionInput>>,
}

impl Plugin for Everything {
    fn namespace(&self) -> &str {
        "everything"
    }

    fn hooks(&self) -> HookSet {
        HookSet::of([
            HookName::Config,
            HookName::PermissionAsk,
            HookName::ShellEnv,
            HookName::ToolDefinition,
            HookName::ChatMessage,
            HookName::SessionCompacting,
        ])
    }

    fn config<'a>(&'a self, _: &'a (), output: &'a mut Config) -> HookFuture<'a> {
        *self.seen_model.lock().unwrap() = output.model.clone();
        output.small_model = Some("mock/small".into());
        Box::pin(async { Ok(()) })
    }

    fn permission_ask<'a>(&'a self, input: &'a PermissionInput, output: &'a mut PermissionOutput) -> HookFuture<'a> {
        self.permissions.lock().unwrap().push(input.clone());
        output.status = if input.patterns == ["secret.env"] { PermissionStatus::Deny } else { PermissionStatus::Allow };
        Box::pin(async { Ok(()) })
    }

    fn shell_env<'a>(&'a self, input: &'a ShellEnvInput, output: &'a mut ShellEnvOutput) -> HookFuture<'a> {
        output.env.insert("CALL".into(), input.call_id.clone().unwrap_or_default());
        Box::pin(async { Ok(()) })
    }

    fn tool_definition<'a>(
        &'a self,
        input: &'a ToolDefinitionInput,
        output: &'a mut ToolDefinitionOutput,
    ) -> HookFuture<'a> {
        if input.tool_id == "bash" {
            output.description.push_str(" Prefer `rg` over `grep`.");
            output.parameters["properties"]["command"]["description"] = json!("A POSIX command.");
        }
        Box::pin(async { Ok(()) })
    }

    fn chat_message<'a>(&'a self, input: &'a ChatMessageInput, output: &'a mut ChatMessageOutput) -> HookFuture<'a> {
        let agent = input.agent.clone().unwrap_or_default();
        output.parts.push(ContentPart::text(format!("(sent to {agent})")));
        Box::pin(async { Ok(()) })
    }

    fn session_compacting<'a>(&'a self, _: &'a SessionInput, output: &'a mut CompactingOutput) -> HookFuture<'a> {
        output.context.push("Keep the ticket number.".into());
        Box::pin(async { Ok(()) })
    }
}

async fn host(plugin: Arc<Everything>, config: Option<Config>) -> PluginHost {
    let mut builder = PluginHost::builder().plugin(plugin, Requirement::Required);
    if let Some(config) = config {
        builder = builder.config(Arc::new(config));
    }
    let host = builder.build();
    host.ready().await.unwrap();
    host
}

#[tokio::test]
async fn plugins_see_and_amend_the_configuration_once_at_start() {
    let plugin = Arc::new(Everything::default());
    let config = Config { model: Some("mock/m".into()), ..Config::default() };
    let host = host(Arc::clone(&plugin), Some(config.clone())).await;
    assert_eq!(plugin.seen_model.lock().unwrap().as_deref(), Some("mock/m"));
    let amended = host.config().unwrap();
    assert_eq!(amended.small_model.as_deref(), Some("mock/small"));
    assert_eq!(amended.model, config.model);

    // Without a `config` plugin the host hands back the configuration it was given.
    let config = Arc::new(config);
    let plain = PluginHost::builder().config(Arc::clone(&config)).build();
    plain.ready().await.unwrap();
    assert!(Arc::ptr_eq(&plain.config().unwrap(), &config));
}

#[tokio::test]
async fn permission_ask_allows_or_denies_before_the_user_is_asked() {
    let plugin = Arc::new(Everything::default());
    let host = host(Arc::clone(&plugin), None).await;
    let project = Project::new();
    let ctx = project.ctx();
    ctx.permissions.set_hook(PluginPermissions::hook(host));
    let ask = |pattern: &str| PermissionAsk {
        permission: "read".into(),
        patterns: vec![pattern.into()],
        always: vec!["*.env".into()],
        ..PermissionAsk::default()
    };

    // `build` asks for `.env` files: the plugin answers instead of the user.
    ctx.ask(ask("dev.env")).await.unwrap();
    let err = ctx.ask(ask("secret.env")).await.unwrap_err();
    assert!(matches!(err, ToolError::Permission { kind: PermissionFailure::Denied, .. }), "{err:?}");
    assert!(ctx.permissions.pending(None).is_empty());
    let seen = plugin.permissions.lock().unwrap()[0].clone();
    assert_eq!(
        serde_json::to_value(seen).unwrap(),
        json!({
            "sessionID": "ses_1", "permission": "read", "patterns": ["dev.env"], "always": ["*.env"],
            "metadata": {}, "agent": "build", "messageID": "msg_1", "callID": "call_1"
        })
    );
}

#[tokio::test]
async fn shell_env_is_asked_per_call_and_costs_nothing_without_plugins() {
    let project = Project::new();
    let ctx = project.ctx();
    let overlay = PluginShellEnv::new(host(Arc::new(Everything::default()), None).await);
    assert_eq!(overlay.env(&ctx, &project.dir()).await, vec![("CALL".to_owned(), "call_1".to_owned())]);
    let none = PluginShellEnv::new(PluginHost::default());
    assert_eq!(none.env(&ctx, &project.dir()).await, vec![]);
}

#[tokio::test]
async fn tool_definitions_chat_message_and_compacting_reach_their_outputs() {
    let host = host(Arc::new(Everything::default()), None).await;
    let schema = json!({"type": "object", "properties": {"command": {"type": "string"}}});
    let mut tools =
        vec![ToolDefinition::new("bash", "Runs a command.", schema), ToolDefinition::new("read", "Reads.", json!({}))];
    assert_eq!(host.apply_tool_definitions(&mut tools).await, vec![]);
    assert_eq!(tools[0].description, "Runs a command. Prefer `rg` over `grep`.");
    assert_eq!(tools[0].input_schema["properties"]["command"]["description"], "A POSIX command.");
    assert_eq!((tools[1].description.as_str(), &tools[1].input_schema), ("Reads.", &json!({})));

    let input = ChatMessageInput { session_id: "ses_1".into(), agent: Some("build".into()), ..Default::default() };
    let mut parts = vec![ContentPart::text("hi")];
    host.apply_chat_message(&input, &mut parts).await;
    assert_eq!(parts, vec![ContentPart::text("hi"), ContentPart::text("(sent to build)")]);

    let (compacting, failures) = host.compacting(&SessionInput { session_id: "ses_1".into() }).await;
    assert_eq!(
        (compacting.context, compacting.prompt, failures),
        (vec!["Keep the ticket number.".to_owned()], None, vec![])
    );
}
