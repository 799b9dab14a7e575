//! The canonical, provider-neutral request.
//!
//! A request says *what* to ask (system parts, chronological messages, tools, generation controls,
//! provider-semantic options, cache policy); a [`Route`](crate::Route) says *where and how*. Only the
//! protocol adapter selected by the route turns a request into wire fields.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::LlmError;

/// Opaque, provider-namespaced metadata carried on parts and events (for example
/// `{"google": {"thought_signature": "..."}}`). Protocol adapters read back only their own namespace.
pub type ProviderMetadata = serde_json::Map<String, Value>;

/// One provider-neutral request: exactly one provider turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LlmRequest {
    /// The model id as the provider knows it (for example `gpt-5.5` or `claude-opus-4-7`).
    pub model: String,
    /// The baseline system context, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub system: Vec<SystemPart>,
    /// Chronological conversation history.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Provider-neutral generation controls.
    #[serde(default, skip_serializing_if = "GenerationControls::is_empty")]
    pub generation: GenerationControls,
    /// Provider-semantic options, namespaced by protocol family (`openai`, `anthropic`, `google`,
    /// `bedrock`, `openai_compatible`). Each protocol adapter validates its own namespace.
    #[serde(default, skip_serializing_if = "ProviderOptions::is_empty")]
    pub options: ProviderOptions,
    /// Where automatic prompt-cache breakpoints go (for protocols with explicit breakpoints).
    #[serde(default, skip_serializing_if = "CachePolicy::is_auto")]
    pub cache: CachePolicy,
    /// Last-resort HTTP overlays. They may add fields but never overwrite protocol-owned ones.
    #[serde(default, skip_serializing_if = "HttpOverlay::is_empty")]
    pub http: HttpOverlay,
}

impl LlmRequest {
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            system: Vec::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: None,
            generation: GenerationControls::default(),
            options: ProviderOptions::default(),
            cache: CachePolicy::Auto,
            http: HttpOverlay::default(),
        }
    }

    pub fn system(mut self, text: impl Into<String>) -> Self {
        self.system.push(SystemPart::text(text));
        self
    }

    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    pub fn tool(mut self, tool: ToolDefinition) -> Self {
        self.tools.push(tool);
        self
    }

    /// Joined baseline system text, parts separated by a newline.
    pub fn system_text(&self) -> Option<String> {
        if self.system.is_empty() {
            return None;
        }
        let parts: Vec<&str> = self.system.iter().map(|part| part.text.as_str()).collect();
        Some(parts.join("\n"))
    }
}

/// One part of the baseline system context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemPart {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHint>,
}

impl SystemPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self { text: text.into(), cache: None }
    }
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    /// Results of local tool calls.
    Tool,
    /// A mid-conversation system update (text only), distinct from the baseline
    /// [`LlmRequest::system`]. Protocols lower it to a native role where the provider supports it
    /// and to a wrapped user-text fallback otherwise.
    System,
}

/// One chronological message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentPart>,
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: vec![ContentPart::text(text)] }
    }

    pub fn assistant(content: Vec<ContentPart>) -> Self {
        Self { role: Role::Assistant, content }
    }

    pub fn tool_result(id: impl Into<String>, name: impl Into<String>, result: ToolResultValue) -> Self {
        Self {
            role: Role::Tool,
            content: vec![ContentPart::ToolResult {
                id: id.into(),
                name: name.into(),
                result,
                provider_executed: false,
                cache: None,
                provider_metadata: None,
            }],
        }
    }

    /// A mid-conversation system update.
    pub fn system_update(text: impl Into<String>) -> Self {
        Self { role: Role::System, content: vec![ContentPart::text(text)] }
    }

    /// Concatenated text of the message's text parts.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text, .. } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContentPart {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache: Option<CacheHint>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// An image, PDF or other file.
    Media {
        media_type: String,
        data: MediaData,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// A tool call the assistant made.
    ToolCall {
        id: String,
        name: String,
        input: Value,
        /// True for tools the provider ran itself (web search and the like).
        #[serde(default, skip_serializing_if = "is_false")]
        provider_executed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// The result of a tool call.
    ToolResult {
        id: String,
        name: String,
        result: ToolResultValue,
        #[serde(default, skip_serializing_if = "is_false")]
        provider_executed: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache: Option<CacheHint>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
    /// Model reasoning. `signature` (Anthropic thinking, Bedrock reasoning) and `encrypted`
    /// (OpenAI encrypted reasoning, Anthropic redacted thinking) must be replayed byte-exact.
    Reasoning {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_metadata: Option<ProviderMetadata>,
    },
}

impl ContentPart {
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into(), cache: None, provider_metadata: None }
    }

    pub fn cache_hint(&self) -> Option<&CacheHint> {
        match self {
            Self::Text { cache, .. } | Self::ToolResult { cache, .. } => cache.as_ref(),
            _ => None,
        }
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

/// Media bytes: inline base64 or a URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MediaData {
    Base64(String),
    Url(String),
}

impl MediaData {
    /// The base64 bytes, whether inline or carried by a `data:…;base64,` URL; `None` for other URLs.
    pub fn inline_base64(&self) -> Option<&str> {
        match self {
            Self::Base64(data) => Some(data),
            Self::Url(url) => {
                url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,")).map(|(_, data)| data)
            }
        }
    }

    /// The data as a URL: the URL itself, or a `data:` URL for inline bytes.
    pub fn to_url(&self, media_type: &str) -> String {
        match self {
            Self::Base64(data) => format!("data:{media_type};base64,{data}"),
            Self::Url(url) => url.clone(),
        }
    }
}

/// What a tool returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolResultValue {
    Text(String),
    Json(Value),
    /// A failed call. The value keeps its structure across provider round-trips.
    Error(Value),
    /// Mixed text and media content.
    Content(Vec<ToolContent>),
}

impl ToolResultValue {
    pub fn is_error(&self) -> bool {
        matches!(self, Self::Error(_))
    }

    /// The result rendered as one string, for protocols that only take text.
    /// JSON is serialized compactly in its original key order.
    pub fn to_text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Json(value) | Self::Error(value) => match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            },
            Self::Content(parts) => {
                let texts: Vec<&str> = parts
                    .iter()
                    .filter_map(|part| match part {
                        ToolContent::Text { text } => Some(text.as_str()),
                        ToolContent::Media { .. } => None,
                    })
                    .collect();
                texts.join("\n")
            }
        }
    }
}

/// One item of rich tool output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    Text { text: String },
    Media { media_type: String, data: MediaData },
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHint>,
}

impl ToolDefinition {
    pub fn new(name: impl Into<String>, description: impl Into<String>, input_schema: Value) -> Self {
        Self { name: name.into(), description: description.into(), input_schema, cache: None }
    }
}

/// How the model may use tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    Tool { name: String },
}

/// Provider-neutral generation controls. Unset fields are left to the provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GenerationControls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
}

impl GenerationControls {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Field-by-field merge: values set in `over` win.
    pub fn merged(&self, over: &Self) -> Self {
        Self {
            max_tokens: over.max_tokens.or(self.max_tokens),
            temperature: over.temperature.or(self.temperature),
            top_p: over.top_p.or(self.top_p),
            top_k: over.top_k.or(self.top_k),
            frequency_penalty: over.frequency_penalty.or(self.frequency_penalty),
            presence_penalty: over.presence_penalty.or(self.presence_penalty),
            seed: over.seed.or(self.seed),
            stop: if over.stop.is_empty() { self.stop.clone() } else { over.stop.clone() },
        }
    }
}

/// Provider-semantic options, one JSON object per protocol family namespace. The protocol adapter
/// owning a namespace decodes it into its typed options and rejects unknown shapes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ProviderOptions(pub BTreeMap<String, Value>);

impl ProviderOptions {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn set(&mut self, namespace: &str, value: Value) {
        self.0.insert(namespace.to_owned(), value);
    }

    /// Decodes one namespace into `T` (`T::default()` when absent).
    pub fn get<T: serde::de::DeserializeOwned + Default>(&self, namespace: &str) -> Result<T, LlmError> {
        match self.0.get(namespace) {
            None => Ok(T::default()),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|err| LlmError::invalid_request(format!("invalid `options.{namespace}`: {err}"))),
        }
    }

    /// Deep merge: objects merge key by key, other values in `over` replace.
    pub fn merged(&self, over: &Self) -> Self {
        let mut out = self.0.clone();
        for (key, value) in &over.0 {
            match out.get_mut(key) {
                Some(existing) => deep_merge(existing, value),
                None => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        Self(out)
    }
}

fn deep_merge(into: &mut Value, over: &Value) {
    match (into, over) {
        (Value::Object(into), Value::Object(over)) => {
            for (key, value) in over {
                match into.get_mut(key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (into, over) => *into = over.clone(),
    }
}

/// A prompt-cache breakpoint request on a part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CacheHint {
    /// Requested lifetime; providers round to what they support (Anthropic: 5 minutes or 1 hour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u32>,
}

/// Automatic placement of prompt-cache breakpoints, for protocols that take explicit ones
/// (Anthropic Messages, Bedrock Converse). Hints already set on parts are always kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CachePolicy {
    /// Breakpoints on the last tool, the last system part and the latest user message.
    #[default]
    Auto,
    /// Only the hints set explicitly on parts.
    Manual,
}

impl CachePolicy {
    pub fn is_auto(&self) -> bool {
        *self == Self::Auto
    }
}

/// Last-resort HTTP overlays applied after protocol encoding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HttpOverlay {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub body: serde_json::Map<String, Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query: BTreeMap<String, String>,
}

impl HttpOverlay {
    pub fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.body.is_empty() && self.query.is_empty()
    }
}
