//! Hook names, their typed inputs and outputs, and the [`Hook`] marker types that tie a name to its
//! types and to the [`Plugin`] method implementing it.
//!
//! Every transforming hook follows OpenCode's `(input, output)` shape: the input is read-only, the
//! output is mutable and threads through the plugins in order, each seeing what the previous wrote.
//! Field names on the wire follow OpenCode (`sessionID`, `callID`, `providerID`, ...), so external
//! plugins see the JSON a TypeScript plugin author would expect.

use std::collections::BTreeMap;
use std::path::PathBuf;

use futures_util::future::BoxFuture;
use indexmap::IndexMap;
use opencode_config::AuthInfo;
use opencode_llm::ContentPart;
use opencode_llm::Message;
use serde::Deserialize;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Map;
use serde_json::Value;

use crate::plugin::Plugin;

/// What a hook implementation returns: `Err` is a failure the host reports and skips.
pub type HookFuture<'a> = BoxFuture<'a, Result<(), HookError>>;

/// A hook implementation's failure, in the plugin's own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

impl HookError {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// OpenCode's hook names. The discriminant indexes the host's per-hook dispatch tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookName {
    Event,
    Config,
    Tool,
    Auth,
    Provider,
    ChatMessage,
    ChatParams,
    ChatHeaders,
    PermissionAsk,
    ToolExecuteBefore,
    ToolExecuteAfter,
    ToolDefinition,
    ShellEnv,
    ChatMessagesTransform,
    ChatSystemTransform,
    SessionCompacting,
    TextComplete,
}

impl HookName {
    pub const ALL: [HookName; 17] = [
        Self::Event,
        Self::Config,
        Self::Tool,
        Self::Auth,
        Self::Provider,
        Self::ChatMessage,
        Self::ChatParams,
        Self::ChatHeaders,
        Self::PermissionAsk,
        Self::ToolExecuteBefore,
        Self::ToolExecuteAfter,
        Self::ToolDefinition,
        Self::ShellEnv,
        Self::ChatMessagesTransform,
        Self::ChatSystemTransform,
        Self::SessionCompacting,
        Self::TextComplete,
    ];

    /// The name as OpenCode spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Event => "event",
            Self::Config => "config",
            Self::Tool => "tool",
            Self::Auth => "auth",
            Self::Provider => "provider",
            Self::ChatMessage => "chat.message",
            Self::ChatParams => "chat.params",
            Self::ChatHeaders => "chat.headers",
            Self::PermissionAsk => "permission.ask",
            Self::ToolExecuteBefore => "tool.execute.before",
            Self::ToolExecuteAfter => "tool.execute.after",
            Self::ToolDefinition => "tool.definition",
            Self::ShellEnv => "shell.env",
            Self::ChatMessagesTransform => "experimental.chat.messages.transform",
            Self::ChatSystemTransform => "experimental.chat.system.transform",
            Self::SessionCompacting => "experimental.session.compacting",
            Self::TextComplete => "experimental.text.complete",
        }
    }

    /// Parses OpenCode's spelling.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|hook| hook.as_str() == name)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    pub(crate) fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl std::fmt::Display for HookName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of hook names (which hooks a plugin implements).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HookSet(u32);

impl HookSet {
    pub const EMPTY: HookSet = HookSet(0);

    pub fn of(hooks: impl IntoIterator<Item = HookName>) -> Self {
        hooks.into_iter().fold(Self::EMPTY, Self::with)
    }

    #[must_use]
    pub fn with(self, hook: HookName) -> Self {
        Self(self.0 | hook.bit())
    }

    pub fn contains(self, hook: HookName) -> bool {
        self.0 & hook.bit() != 0
    }

    pub fn iter(self) -> impl Iterator<Item = HookName> {
        HookName::ALL.into_iter().filter(move |hook| self.contains(*hook))
    }

    pub(crate) fn bits(self) -> u32 {
        self.0
    }
}

/// Ties a hook name to its input and output types and to the [`Plugin`] method implementing it;
/// [`crate::PluginHost::trigger`] dispatches any of them.
pub trait Hook: Send + Sync + 'static {
    const NAME: HookName;
    type Input: Serialize + Send + Sync;
    type Output: Serialize + DeserializeOwned + Send + Sync;
    fn call<'a>(plugin: &'a dyn Plugin, input: &'a Self::Input, output: &'a mut Self::Output) -> HookFuture<'a>;
}

/// Marker types, one per transforming hook.
pub mod hook {
    use super::*;

    macro_rules! hook {
        ($(#[$doc:meta])* $marker:ident, $name:ident, $input:ty, $output:ty, $method:ident) => {
            $(#[$doc])*
            #[derive(Debug, Clone, Copy)]
            pub struct $marker;

            impl Hook for $marker {
                const NAME: HookName = HookName::$name;
                type Input = $input;
                type Output = $output;
                fn call<'a>(plugin: &'a dyn Plugin, input: &'a $input, output: &'a mut $output) -> HookFuture<'a> {
                    plugin.$method(input, output)
                }
            }
        };
    }

    hook!(
        /// `config`: the merged configuration, which plugins may amend.
        Config, Config, (), opencode_config::Config, config
    );
    hook!(
        /// `provider`: models a plugin offers for a provider.
        Provider, Provider, ProviderInput, ProviderOutput, provider
    );
    hook!(
        /// `chat.message`: a new user message's parts.
        ChatMessage, ChatMessage, ChatMessageInput, ChatMessageOutput, chat_message
    );
    hook!(
        /// `chat.params`: generation controls and provider options of a provider turn.
        ChatParams, ChatParams, ChatInput, ChatParamsOutput, chat_params
    );
    hook!(
        /// `chat.headers`: extra HTTP headers of a provider turn.
        ChatHeaders, ChatHeaders, ChatInput, ChatHeadersOutput, chat_headers
    );
    hook!(
        /// `permission.ask`: decide a permission request before the user is asked.
        PermissionAsk, PermissionAsk, PermissionInput, PermissionOutput, permission_ask
    );
    hook!(
        /// `tool.execute.before`: rewrite a tool call's arguments.
        ToolExecuteBefore, ToolExecuteBefore, ToolCallInput, ToolBeforeOutput, tool_execute_before
    );
    hook!(
        /// `tool.execute.after`: rewrite a settled tool call's result.
        ToolExecuteAfter, ToolExecuteAfter, ToolAfterInput, ToolAfterOutput, tool_execute_after
    );
    hook!(
        /// `tool.definition`: rewrite a tool's description and parameters as the model sees them.
        ToolDefinition, ToolDefinition, ToolDefinitionInput, ToolDefinitionOutput, tool_definition
    );
    hook!(
        /// `shell.env`: the environment overlay of a shell/PTY in a Location.
        ShellEnv, ShellEnv, ShellEnvInput, ShellEnvOutput, shell_env
    );
    hook!(
        /// `experimental.chat.messages.transform`: the projected history of a provider turn.
        ChatMessagesTransform, ChatMessagesTransform, ChatInput, MessagesOutput, chat_messages_transform
    );
    hook!(
        /// `experimental.chat.system.transform`: extra system text appended AFTER the baseline
        /// (see the crate docs: the baseline itself is never handed out).
        ChatSystemTransform, ChatSystemTransform, ChatInput, SystemOutput, chat_system_transform
    );
    hook!(
        /// `experimental.session.compacting`: extra context and an optional replacement prompt.
        SessionCompacting, SessionCompacting, SessionInput, CompactingOutput, session_compacting
    );
    hook!(
        /// `experimental.text.complete`: an assistant text part, once the model finished it and
        /// before it is stored for good.
        TextComplete, TextComplete, TextCompleteInput, TextCompleteOutput, text_complete
    );
}

/// A model as OpenCode names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelRef {
    #[serde(rename = "providerID")]
    pub provider_id: String,
    #[serde(rename = "modelID")]
    pub model_id: String,
}

/// A model's token limits as the catalog knows them (OpenCode's `model.limit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelLimit {
    /// The context window.
    pub context: u64,
    /// The most the model may write in one turn.
    pub output: u64,
}

/// The provider turn a chat hook runs for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatInput {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The assistant message the turn writes.
    #[serde(rename = "messageID")]
    pub message_id: String,
    pub agent: String,
    pub model: ModelRef,
    /// The model's limits, when the catalog knows them: what a plugin managing the context
    /// window sizes it by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<ModelLimit>,
}

/// `chat.params` output: `None` leaves the control as it was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatParamsOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Provider options, namespaced by protocol family (`openai`, `anthropic`, ...).
    #[serde(default)]
    pub options: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatHeadersOutput {
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessageInput {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelRef>,
    #[serde(rename = "messageID", default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

/// `chat.message` output: the user message's parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatMessageOutput {
    #[serde(default)]
    pub parts: Vec<ContentPart>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionInput {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The permission asked (`bash`, `edit`, `external_directory`, ...).
    pub permission: String,
    #[serde(default)]
    pub patterns: Vec<String>,
    /// The patterns an `always` reply would approve.
    #[serde(default)]
    pub always: Vec<String>,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The effective agent of the provider turn that issued the call.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub agent: String,
    #[serde(rename = "messageID", default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(rename = "callID", default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// What a `permission.ask` hook decides; `Ask` defers to the configured rules and the user.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionStatus {
    #[default]
    Ask,
    Deny,
    Allow,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionOutput {
    pub status: PermissionStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallInput {
    pub tool: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    #[serde(rename = "callID")]
    pub call_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolBeforeOutput {
    pub args: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolAfterInput {
    pub tool: String,
    #[serde(rename = "sessionID")]
    pub session_id: String,
    #[serde(rename = "callID")]
    pub call_id: String,
    pub args: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolAfterOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub output: String,
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDefinitionInput {
    #[serde(rename = "toolID")]
    pub tool_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinitionOutput {
    pub description: String,
    pub parameters: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellEnvInput {
    /// The resolved working directory inside the Location.
    pub cwd: PathBuf,
    #[serde(rename = "sessionID", default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(rename = "callID", default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShellEnvOutput {
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessagesOutput {
    #[serde(default)]
    pub messages: Vec<Message>,
}

/// `experimental.chat.system.transform` output: text appended after the baseline, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemOutput {
    #[serde(default)]
    pub system: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInput {
    #[serde(rename = "sessionID")]
    pub session_id: String,
}

/// The assistant text part `experimental.text.complete` runs for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextCompleteInput {
    #[serde(rename = "sessionID")]
    pub session_id: String,
    #[serde(rename = "messageID")]
    pub message_id: String,
    #[serde(rename = "partID")]
    pub part_id: String,
}

/// `experimental.text.complete` output: the part's text as it will be stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TextCompleteOutput {
    pub text: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactingOutput {
    /// Extra context for the compaction prompt.
    #[serde(default)]
    pub context: Vec<String>,
    /// Replaces the compaction prompt entirely when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderInput {
    #[serde(rename = "providerID")]
    pub provider_id: String,
    /// The provider's stored credentials, when there are any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<AuthInfo>,
}

/// `provider` output: model id -> a models.dev-shaped model entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProviderOutput {
    #[serde(default)]
    pub models: IndexMap<String, Value>,
}

/// A bus event as plugins see it (`event` hook).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PluginEvent {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub properties: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hook_name_round_trips() {
        for hook in HookName::ALL {
            assert_eq!(HookName::parse(hook.as_str()), Some(hook));
            assert_eq!(HookName::ALL[hook.index()], hook);
        }
        assert_eq!(HookName::parse("chat.unknown"), None);
    }

    #[test]
    fn hook_sets_hold_exactly_their_members() {
        let set = HookSet::of([HookName::ChatParams, HookName::Event]);
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![HookName::Event, HookName::ChatParams]);
        assert!(!set.contains(HookName::Tool));
    }

    #[test]
    fn wire_names_follow_opencode() {
        let input = ToolCallInput { tool: "bash".into(), session_id: "ses_1".into(), call_id: "call_1".into() };
        assert_eq!(
            serde_json::to_value(&input).unwrap_or_default(),
            serde_json::json!({"tool": "bash", "sessionID": "ses_1", "callID": "call_1"})
        );
    }
}
