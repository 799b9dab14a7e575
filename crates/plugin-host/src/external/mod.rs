//! External plugins: programs in any language speaking JSON-RPC 2.0 over stdio (docs/PLUGINS.md).
//!
//! [`ExternalPlugin`] is a [`Plugin`]: `start` spawns the program and performs the `initialize`
//! handshake (namespace, hooks, tools, Context Sources); each hook is a `hook` request bounded by the
//! per-call timeout (a hung plugin costs at most that, then the hook is skipped with a diagnostic);
//! `event` is a notification; contributed tools are registry tools executed by `tool.execute`; each
//! contributed Context Source is loaded with `context.load`.

mod rpc;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_system_context::ContextSource;
use opencode_system_context::Loaded;
use opencode_system_context::SourceKey;
use opencode_system_context::SystemContext;
use opencode_tool_registry::Tool;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::ToolOutput;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::error::PluginError;
use crate::hooks::*;
use crate::host::Requirement;
use crate::plugin::Plugin;
use crate::plugin::PluginSource;
use crate::plugin::StartContext;
use rpc::Rpc;

/// The protocol version this host speaks.
pub const PROTOCOL_VERSION: u32 = 1;
/// Default limit for one hook call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Default limit for one tool call.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Default limit for the `initialize` handshake.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(10);

/// How to run one external plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalSpec {
    /// The name it was configured under; its namespace until the handshake declares one.
    pub name: String,
    /// Program and arguments.
    pub command: Vec<String>,
    /// Working directory; the project directory when `None`.
    pub cwd: Option<PathBuf>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Passed to the plugin in `initialize`.
    pub options: Value,
    pub requirement: Requirement,
    pub call_timeout: Duration,
    pub tool_timeout: Duration,
    pub initialize_timeout: Duration,
}

impl ExternalSpec {
    pub fn new(name: impl Into<String>, command: Vec<String>) -> Self {
        Self {
            name: name.into(),
            command,
            cwd: None,
            env: Vec::new(),
            options: Value::Object(Map::new()),
            requirement: Requirement::Optional,
            call_timeout: CALL_TIMEOUT,
            tool_timeout: TOOL_TIMEOUT,
            initialize_timeout: INITIALIZE_TIMEOUT,
        }
    }
}

/// What a plugin declares in its `initialize` answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub namespace: String,
    #[serde(default)]
    pub hooks: Vec<String>,
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    #[serde(default)]
    pub context_sources: Vec<SourceSpec>,
}

/// A tool an external plugin contributes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input; an empty object schema when absent.
    #[serde(default)]
    pub parameters: Option<Value>,
}

/// A Context Source an external plugin contributes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceSpec {
    pub name: String,
}

/// A plugin program.
pub struct ExternalPlugin {
    spec: ExternalSpec,
    rpc: OnceLock<Arc<Rpc>>,
    manifest: OnceLock<(Manifest, HookSet)>,
}

impl ExternalPlugin {
    pub fn new(spec: ExternalSpec) -> Self {
        Self { spec, rpc: OnceLock::new(), manifest: OnceLock::new() }
    }

    pub fn spec(&self) -> &ExternalSpec {
        &self.spec
    }

    /// The handshake's answer, once started.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.get().map(|(manifest, _)| manifest)
    }

    async fn handshake(&self, ctx: &StartContext) -> Result<(), PluginError> {
        let cwd = self.spec.cwd.clone().unwrap_or_else(|| ctx.directory.clone());
        let rpc = Arc::new(Rpc::spawn(&self.spec.name, &self.spec.command, &cwd, &self.spec.env)?);
        let _first = self.rpc.set(Arc::clone(&rpc));
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "name": self.spec.name,
            "directory": ctx.directory,
            "worktree": ctx.worktree,
            "options": self.spec.options,
        });
        let answer = rpc.request("initialize", params, self.spec.initialize_timeout).await?;
        let manifest: Manifest = serde_json::from_value(answer).map_err(|err| PluginError::Protocol {
            plugin: self.spec.name.clone(),
            reason: format!("invalid `initialize` answer: {err}"),
        })?;
        let mut hooks = HookSet::EMPTY;
        for name in &manifest.hooks {
            match HookName::parse(name) {
                Some(hook) => hooks = hooks.with(hook),
                None => tracing::warn!(plugin = %self.spec.name, hook = %name, "unknown hook ignored"),
            }
        }
        if !manifest.tools.is_empty() {
            hooks = hooks.with(HookName::Tool);
        }
        let _first = self.manifest.set((manifest, hooks));
        Ok(())
    }

    fn call_hook<'a, I: Serialize + Sync, O: Serialize + DeserializeOwned + Send>(
        &'a self,
        hook: HookName,
        input: &'a I,
        output: &'a mut O,
    ) -> HookFuture<'a> {
        Box::pin(async move {
            let rpc = self.rpc.get().ok_or_else(|| HookError::new("the plugin is not started"))?;
            let encode = |value: Result<Value, serde_json::Error>| value.map_err(|err| HookError(err.to_string()));
            let params = json!({
                "hook": hook.as_str(),
                "input": encode(serde_json::to_value(input))?,
                "output": encode(serde_json::to_value(&*output))?,
            });
            let answer =
                rpc.request("hook", params, self.spec.call_timeout).await.map_err(|err| HookError(err.to_string()))?;
            // An answer without `output` leaves it unchanged.
            if let Some(changed) = answer.get("output").filter(|value| !value.is_null()) {
                *output = serde_json::from_value(changed.clone())
                    .map_err(|err| HookError(format!("invalid `{hook}` output: {err}")))?;
            }
            Ok(())
        })
    }
}

macro_rules! forward {
    ($($method:ident: $name:ident, $input:ty, $output:ty;)*) => {
        $(
            fn $method<'a>(&'a self, input: &'a $input, output: &'a mut $output) -> HookFuture<'a> {
                self.call_hook(HookName::$name, input, output)
            }
        )*
    };
}

impl Plugin for ExternalPlugin {
    fn namespace(&self) -> &str {
        self.manifest().map_or(&self.spec.name, |manifest| &manifest.namespace)
    }

    fn hooks(&self) -> HookSet {
        self.manifest.get().map_or(HookSet::EMPTY, |(_, hooks)| *hooks)
    }

    fn start<'a>(&'a self, ctx: &'a StartContext) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { self.handshake(ctx).await.map_err(|err| err.to_string()) })
    }

    fn stop(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(rpc) = self.rpc.get() {
                rpc.shutdown().await;
            }
        })
    }

    fn event(&self, event: &PluginEvent) {
        if let (Some(rpc), Ok(event)) = (self.rpc.get(), serde_json::to_value(event)) {
            rpc.notify("event", json!({ "event": event }));
        }
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let (Some(rpc), Some(manifest)) = (self.rpc.get(), self.manifest()) else {
            return Vec::new();
        };
        let tools = manifest.tools.iter().map(|spec| ExternalTool {
            rpc: Arc::clone(rpc),
            spec: spec.clone(),
            timeout: self.spec.tool_timeout,
        });
        tools.map(|tool| Arc::new(tool) as Arc<dyn Tool>).collect()
    }

    fn context_sources(&self) -> Vec<PluginSource> {
        let (Some(rpc), Some(manifest)) = (self.rpc.get(), self.manifest()) else {
            return Vec::new();
        };
        let mut sources = Vec::new();
        for spec in &manifest.context_sources {
            let key = format!("plugin.{}/{}", manifest.namespace, spec.name);
            let Ok(key) = SourceKey::new(&key) else {
                tracing::warn!(plugin = %manifest.namespace, source = %key, "invalid Context Source name ignored");
                continue;
            };
            let source =
                ExternalSource { rpc: Arc::clone(rpc), key, name: spec.name.clone(), timeout: self.spec.call_timeout };
            let producer = move || {
                let source = source.clone();
                async move { SystemContext::make(source) }
            };
            sources.push(PluginSource { name: spec.name.clone(), producer: Arc::new(producer) });
        }
        sources
    }

    forward! {
        config: Config, (), opencode_config::Config;
        provider: Provider, ProviderInput, ProviderOutput;
        chat_message: ChatMessage, ChatMessageInput, ChatMessageOutput;
        chat_params: ChatParams, ChatInput, ChatParamsOutput;
        chat_headers: ChatHeaders, ChatInput, ChatHeadersOutput;
        permission_ask: PermissionAsk, PermissionInput, PermissionOutput;
        tool_execute_before: ToolExecuteBefore, ToolCallInput, ToolBeforeOutput;
        tool_execute_after: ToolExecuteAfter, ToolAfterInput, ToolAfterOutput;
        tool_definition: ToolDefinition, ToolDefinitionInput, ToolDefinitionOutput;
        shell_env: ShellEnv, ShellEnvInput, ShellEnvOutput;
        chat_messages_transform: ChatMessagesTransform, ChatInput, MessagesOutput;
        chat_system_transform: ChatSystemTransform, ChatInput, SystemOutput;
        session_compacting: SessionCompacting, SessionInput, CompactingOutput;
        text_complete: TextComplete, TextCompleteInput, TextCompleteOutput;
    }
}

impl std::fmt::Debug for ExternalPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalPlugin").field("name", &self.spec.name).field("command", &self.spec.command).finish()
    }
}

/// A tool executed by its plugin.
struct ExternalTool {
    rpc: Arc<Rpc>,
    spec: ToolSpec,
    timeout: Duration,
}

#[derive(Deserialize)]
struct ToolAnswer {
    #[serde(default)]
    output: String,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    metadata: Map<String, Value>,
}

impl Tool for ExternalTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> String {
        self.spec.description.clone()
    }

    fn parameters(&self) -> Value {
        self.spec.parameters.clone().unwrap_or_else(|| json!({"type": "object", "properties": {}}))
    }

    fn execute<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let params = json!({
                "tool": self.spec.name,
                "args": input,
                "context": {
                    "sessionID": ctx.session_id,
                    "messageID": ctx.message_id,
                    "callID": ctx.call_id,
                    "agent": ctx.agent.name,
                    "directory": ctx.location.root(),
                },
            });
            let call = self.rpc.request("tool.execute", params, self.timeout);
            let answer = tokio::select! {
                answer = call => answer,
                () = ctx.cancel.cancelled() => return Err(ToolError::Interrupted),
            };
            // Whatever the plugin did wrong, the model reads it and the session goes on.
            let answer = answer.map_err(|err| ToolError::model(err.to_string()))?;
            let answer: ToolAnswer = serde_json::from_value(answer).map_err(|err| {
                ToolError::model(format!("the plugin tool `{}` answered badly: {err}", self.spec.name))
            })?;
            let mut output = ToolOutput::text(answer.output);
            output.title = answer.title;
            output.metadata = answer.metadata;
            Ok(output)
        })
    }
}

/// A Context Source observed by asking its plugin.
#[derive(Clone)]
struct ExternalSource {
    rpc: Arc<Rpc>,
    key: SourceKey,
    name: String,
    timeout: Duration,
}

/// An external source's value: its baseline text, and optionally the text announcing a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceText {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
}

impl ContextSource for ExternalSource {
    type Value = SourceText;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<SourceText> {
        let answer = self.rpc.request("context.load", json!({"name": self.name}), self.timeout).await;
        match answer.map(serde_json::from_value::<Option<SourceText>>) {
            Ok(Ok(Some(value))) if !value.text.trim().is_empty() => Loaded::Value(value),
            Ok(Ok(_)) => Loaded::Unavailable,
            Ok(Err(err)) => {
                tracing::warn!(source = %self.key, %err, "invalid Context Source value");
                Loaded::Unavailable
            }
            Err(err) => {
                tracing::warn!(source = %self.key, %err, "Context Source unavailable");
                Loaded::Unavailable
            }
        }
    }

    fn baseline(&self, current: &SourceText) -> String {
        current.text.clone()
    }

    fn update(&self, _previous: &SourceText, current: &SourceText) -> String {
        current.update.clone().filter(|text| !text.trim().is_empty()).unwrap_or_else(|| current.text.clone())
    }

    fn removed(&self, _previous: &SourceText) -> Option<String> {
        Some(format!("The context `{}` no longer applies.", self.key))
    }
}
