//! Anthropic Messages (`POST /messages`), the native Claude API.
//!
//! Encoding turns the canonical request into content blocks: tool results travel as user messages
//! of `tool_result` blocks, reasoning replays as signed `thinking` (or `redacted_thinking`) blocks,
//! prompt-cache breakpoints become `cache_control` markers placed by [`CachePlan`], and
//! mid-conversation system updates use the wrapped user-text fallback. By default an assistant
//! message whose tool calls are followed by other content is split in two, because the API rejects
//! a `tool_use` block that is not the last thing in its turn.
//!
//! Decoding follows the block-indexed event stream (`message_start`, `content_block_*`,
//! `message_delta`, `message_stop`). Usage is exclusive (`input_tokens` leaves out cached tokens)
//! and is merged field by field, later values winning.

use std::borrow::Cow;

use base64::Engine;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::EventSink;
use super::Protocol;
use super::StreamDecoder;
use super::cache::CachePlan;
use super::shared::lower_system_updates;
use super::shared::number;
use super::shared::parse_payload;
use super::shared::parse_tool_input;
use super::sink::Finish;
use crate::CacheHint;
use crate::ContentPart;
use crate::FinishReason;
use crate::GenerationControls;
use crate::LlmError;
use crate::LlmRequest;
use crate::MediaData;
use crate::Message;
use crate::ProviderMetadata;
use crate::Role;
use crate::ToolChoice;
use crate::ToolContent;
use crate::ToolResultValue;
use crate::Usage;
use crate::framing::Frame;
use crate::framing::Framing;

const ID: &str = "anthropic-messages";

/// Output limit sent when neither the request nor the route sets one (the API requires it).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic Messages protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnthropicMessages;

/// Options read from the `anthropic` namespace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnthropicOptions {
    /// Extended thinking: `{"type": "enabled", "budget_tokens": n}`, `{"type": "adaptive"}` or
    /// `{"type": "disabled"}`.
    pub thinking: Option<ThinkingConfig>,
    /// `low`, `medium`, `high`, `xhigh` or `max`, sent as `output_config.effort`.
    pub effort: Option<String>,
    /// Split assistant messages whose tool calls are followed by other content, so that every
    /// `tool_use` block ends its turn (default `true`).
    pub repair_tool_use_order: Option<bool>,
    /// Allow at most one tool call per turn.
    pub disable_parallel_tool_use: Option<bool>,
    /// Sent as `metadata.user_id`.
    pub user_id: Option<String>,
    /// `auto` or `standard_only`.
    pub service_tier: Option<String>,
}

/// Extended-thinking configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ThinkingConfig {
    /// Thinking with a fixed budget; it must be at least 1024 and below `max_tokens`.
    Enabled {
        #[serde(alias = "budgetTokens")]
        budget_tokens: u32,
        /// `summarized` or `omitted`.
        #[serde(default)]
        display: Option<String>,
    },
    /// The model decides how much to think (Opus 4.7 and later).
    Adaptive {
        #[serde(default)]
        display: Option<String>,
    },
    Disabled,
}

impl Protocol for AnthropicMessages {
    fn id(&self) -> &'static str {
        ID
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn path(&self, _request: &LlmRequest) -> String {
        "/messages".to_owned()
    }

    fn encode(&self, request: &LlmRequest) -> Result<Value, LlmError> {
        let options: AnthropicOptions = request.options.get("anthropic")?;
        let request = normalise(request, &options)?;
        let plan = CachePlan::for_request(&request);

        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        let system = system_blocks(&request, &plan);
        if !system.is_empty() {
            body.insert("system".into(), Value::Array(system));
        }
        body.insert("messages".into(), Value::Array(messages(&request, &plan)?));
        if !request.tools.is_empty() {
            body.insert("tools".into(), Value::Array(tool_blocks(&request, &plan)));
            let choice = tool_choice(request.tool_choice.as_ref(), options.disable_parallel_tool_use);
            if let Some(choice) = choice {
                body.insert("tool_choice".into(), choice);
            }
        }
        body.insert("stream".into(), json!(true));
        generation_fields(&request.generation, &mut body);
        option_fields(&options, &mut body);
        Ok(Value::Object(body))
    }

    fn decoder(&self, _request: &LlmRequest) -> Box<dyn StreamDecoder> {
        Box::new(MessagesDecoder::default())
    }
}

/// Empty text blocks are rejected by the API, in the system prompt as anywhere else.
fn system_blocks(request: &LlmRequest, plan: &CachePlan) -> Vec<Value> {
    let parts = request.system.iter().enumerate();
    parts
        .filter(|(_, part)| !part.text.is_empty())
        .map(|(index, part)| with_cache(json!({"type": "text", "text": part.text}), plan.system(index)))
        .collect()
}

fn tool_blocks(request: &LlmRequest, plan: &CachePlan) -> Vec<Value> {
    let tools = request.tools.iter().enumerate();
    tools
        .map(|(index, tool)| {
            let block = json!({
                "name": tool.name, "description": tool.description, "input_schema": tool.input_schema,
            });
            with_cache(block, plan.tool(index))
        })
        .collect()
}

/// `max_tokens` is required; the other controls are sent only when set. Penalties and seed have
/// no Anthropic equivalent.
fn generation_fields(generation: &GenerationControls, body: &mut Map<String, Value>) {
    let max_tokens = generation.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(temperature) = generation.temperature {
        body.insert("temperature".into(), number(temperature));
    }
    if let Some(top_p) = generation.top_p {
        body.insert("top_p".into(), number(top_p));
    }
    if let Some(top_k) = generation.top_k {
        body.insert("top_k".into(), json!(top_k));
    }
    if !generation.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(generation.stop));
    }
}

fn option_fields(options: &AnthropicOptions, body: &mut Map<String, Value>) {
    if let Some(thinking) = &options.thinking {
        body.insert("thinking".into(), thinking.to_wire());
    }
    if let Some(effort) = &options.effort {
        body.insert("output_config".into(), json!({"effort": effort}));
    }
    if let Some(user_id) = &options.user_id {
        body.insert("metadata".into(), json!({"user_id": user_id}));
    }
    if let Some(tier) = &options.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
}

impl ThinkingConfig {
    fn to_wire(&self) -> Value {
        let (mut wire, display) = match self {
            Self::Enabled { budget_tokens, display } => {
                (json!({"type": "enabled", "budget_tokens": budget_tokens}), display)
            }
            Self::Adaptive { display } => (json!({"type": "adaptive"}), display),
            Self::Disabled => return json!({"type": "disabled"}),
        };
        if let (Some(display), Value::Object(wire)) = (display, &mut wire) {
            wire.insert("display".into(), json!(display));
        }
        wire
    }
}

/// The request as the wire needs it: system updates lowered to wrapped user text and, unless
/// disabled, tool calls moved to the end of their turn. Borrowed when nothing changes.
fn normalise<'a>(request: &'a LlmRequest, options: &AnthropicOptions) -> Result<Cow<'a, LlmRequest>, LlmError> {
    let repair = options.repair_tool_use_order != Some(false) && request.messages.iter().any(has_misplaced_tool_call);
    let has_updates = request.messages.iter().any(|message| message.role == Role::System);
    if !repair && !has_updates {
        return Ok(Cow::Borrowed(request));
    }
    let mut messages = if has_updates { lower_system_updates(&request.messages)? } else { request.messages.clone() };
    if repair {
        messages = repair_tool_use_order(messages);
    }
    Ok(Cow::Owned(LlmRequest {
        model: request.model.clone(),
        system: request.system.clone(),
        messages,
        tools: request.tools.clone(),
        tool_choice: request.tool_choice.clone(),
        generation: request.generation.clone(),
        options: request.options.clone(),
        cache: request.cache,
        http: request.http.clone(),
    }))
}

/// An assistant message where something other than a local tool call follows the first local
/// tool call. (Provider-executed calls are followed by their results and text by design.)
fn has_misplaced_tool_call(message: &Message) -> bool {
    if message.role != Role::Assistant {
        return false;
    }
    let Some(first) = message.content.iter().position(is_tool_call) else {
        return false;
    };
    message.content[first..].iter().any(|part| !is_tool_call(part))
}

fn is_tool_call(part: &ContentPart) -> bool {
    matches!(part, ContentPart::ToolCall { provider_executed: false, .. })
}

/// Splits each misplaced assistant message into its other content followed by its tool calls, as
/// two consecutive assistant messages (the API joins consecutive same-role turns).
fn repair_tool_use_order(messages: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        if !has_misplaced_tool_call(&message) {
            out.push(message);
            continue;
        }
        let (calls, rest): (Vec<_>, Vec<_>) = message.content.into_iter().partition(is_tool_call);
        out.push(Message { role: Role::Assistant, content: rest });
        out.push(Message { role: Role::Assistant, content: calls });
    }
    out
}

/// `none` is sent as such (rather than dropping the tools) because a history holding `tool_use`
/// blocks still needs their definitions.
fn tool_choice(choice: Option<&ToolChoice>, disable_parallel: Option<bool>) -> Option<Value> {
    let mut wire = match choice {
        None if disable_parallel == Some(true) => json!({"type": "auto"}),
        None => return None,
        Some(ToolChoice::None) => return Some(json!({"type": "none"})),
        Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Tool { name }) => json!({"type": "tool", "name": name}),
    };
    if let (Some(disable), Value::Object(wire)) = (disable_parallel, &mut wire) {
        wire.insert("disable_parallel_tool_use".into(), json!(disable));
    }
    Some(wire)
}

/// `{"type": "ephemeral"}`, with a one-hour lifetime when at least an hour is asked for.
fn cache_control(hint: &CacheHint) -> Value {
    match hint.ttl_seconds {
        Some(ttl) if ttl >= 3600 => json!({"type": "ephemeral", "ttl": "1h"}),
        _ => json!({"type": "ephemeral"}),
    }
}

fn with_cache(mut block: Value, hint: Option<&CacheHint>) -> Value {
    if let (Some(hint), Value::Object(fields)) = (hint, &mut block) {
        fields.insert("cache_control".into(), cache_control(hint));
    }
    block
}

/// Wire messages; messages left without blocks (only empty text, say) are dropped, since the API
/// rejects empty content.
fn messages(request: &LlmRequest, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut out = Vec::with_capacity(request.messages.len());
    for (index, message) in request.messages.iter().enumerate() {
        let (role, content) = match message.role {
            Role::User => ("user", user_blocks(message, index, plan)?),
            Role::Assistant => ("assistant", assistant_blocks(message, index, plan)?),
            Role::Tool => ("user", tool_result_blocks(message, index, plan)?),
            Role::System => {
                return Err(LlmError::invalid_request("unlowered system update message"));
            }
        };
        if !content.is_empty() {
            out.push(json!({"role": role, "content": content}));
        }
    }
    Ok(out)
}

fn user_blocks(message: &Message, index: usize, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut out = Vec::with_capacity(message.content.len());
    for (part_index, part) in message.content.iter().enumerate() {
        let block = match part {
            ContentPart::Text { text, .. } if text.is_empty() => continue,
            ContentPart::Text { text, .. } => json!({"type": "text", "text": text}),
            ContentPart::Media { media_type, data, .. } => media_block(media_type, data)?,
            _ => {
                return Err(LlmError::invalid_request(
                    "an Anthropic user message may contain only text and media parts",
                ));
            }
        };
        out.push(with_cache(block, plan.part(index, part_index)));
    }
    Ok(out)
}

fn assistant_blocks(message: &Message, index: usize, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut out = Vec::with_capacity(message.content.len());
    for (part_index, part) in message.content.iter().enumerate() {
        let block = match part {
            ContentPart::Text { text, .. } if text.is_empty() => continue,
            ContentPart::Text { text, .. } => json!({"type": "text", "text": text}),
            ContentPart::Reasoning { text, signature, encrypted, .. } => match (signature, encrypted) {
                (_, Some(data)) if text.is_empty() => {
                    json!({"type": "redacted_thinking", "data": data})
                }
                (Some(signature), _) => {
                    json!({"type": "thinking", "thinking": text, "signature": signature})
                }
                // The API rejects unsigned thinking (for example reasoning from another provider).
                _ => continue,
            },
            ContentPart::ToolCall { id, name, input, provider_executed, .. } => {
                let kind = if *provider_executed { "server_tool_use" } else { "tool_use" };
                json!({"type": kind, "id": tool_use_id(id), "name": name, "input": input})
            }
            ContentPart::ToolResult { id, name, result, provider_executed: true, .. } => {
                server_tool_result(id, name, result)?
            }
            _ => {
                return Err(LlmError::invalid_request(
                    "an Anthropic assistant message may contain only text, reasoning, tool calls and provider tool results",
                ));
            }
        };
        out.push(with_cache(block, plan.part(index, part_index)));
    }
    Ok(out)
}

/// The result of a tool the provider ran itself, echoed back verbatim.
fn server_tool_result(id: &str, name: &str, result: &ToolResultValue) -> Result<Value, LlmError> {
    let kind = match name {
        "web_search" => "web_search_tool_result",
        "code_execution" => "code_execution_tool_result",
        "web_fetch" => "web_fetch_tool_result",
        _ => {
            return Err(LlmError::invalid_request(format!(
                "cannot replay the result of Anthropic server tool `{name}`"
            )));
        }
    };
    let content = match result {
        ToolResultValue::Json(value) | ToolResultValue::Error(value) => value.clone(),
        ToolResultValue::Text(text) => json!(text),
        ToolResultValue::Content(_) => {
            return Err(LlmError::invalid_request("server tool results carry JSON content"));
        }
    };
    Ok(json!({"type": kind, "tool_use_id": tool_use_id(id), "content": content}))
}

fn tool_result_blocks(message: &Message, index: usize, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut out = Vec::with_capacity(message.content.len());
    for (part_index, part) in message.content.iter().enumerate() {
        let ContentPart::ToolResult { id, result, .. } = part else {
            return Err(LlmError::invalid_request("a tool message may contain only tool results"));
        };
        let content = match result {
            // Rich results keep their images as native blocks instead of text.
            ToolResultValue::Content(items) => {
                Value::Array(items.iter().map(tool_content_block).collect::<Result<Vec<_>, _>>()?)
            }
            other => json!(other.to_text()),
        };
        let mut block = json!({"type": "tool_result", "tool_use_id": tool_use_id(id), "content": content});
        if result.is_error()
            && let Value::Object(fields) = &mut block
        {
            fields.insert("is_error".into(), json!(true));
        }
        out.push(with_cache(block, plan.part(index, part_index)));
    }
    Ok(out)
}

/// Tool-use ids must match `[a-zA-Z0-9_-]+`; ids minted by other providers are made to fit, the
/// same way on the call and on its result so the two still pair up.
fn tool_use_id(id: &str) -> Cow<'_, str> {
    let valid = |ch: char| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-';
    if id.chars().all(valid) {
        return Cow::Borrowed(id);
    }
    Cow::Owned(id.chars().map(|ch| if valid(ch) { ch } else { '_' }).collect())
}

fn tool_content_block(item: &ToolContent) -> Result<Value, LlmError> {
    match item {
        ToolContent::Text { text } => Ok(json!({"type": "text", "text": text})),
        ToolContent::Media { media_type, data } => media_block(media_type, data),
    }
}

/// An `image` block for images, a `document` block for PDFs and plain text.
fn media_block(media_type: &str, data: &MediaData) -> Result<Value, LlmError> {
    let kind = if media_type.starts_with("image/") {
        "image"
    } else if media_type == "application/pdf" || media_type == "text/plain" {
        "document"
    } else {
        return Err(LlmError::invalid_request(format!("Anthropic Messages does not accept `{media_type}` media")));
    };
    // `data:` URLs are inline bytes, not URLs Anthropic can fetch.
    let source = match (data.inline_base64(), data) {
        (Some(text), _) if media_type == "text/plain" => {
            json!({"type": "text", "media_type": media_type, "data": decode_text(text)?})
        }
        (Some(data), _) => json!({"type": "base64", "media_type": media_type, "data": data}),
        (None, MediaData::Url(url) | MediaData::Base64(url)) => json!({"type": "url", "url": url}),
    };
    Ok(json!({"type": kind, "source": source}))
}

/// Plain-text documents travel as text, not base64.
fn decode_text(data: &str) -> Result<String, LlmError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|err| LlmError::invalid_request(format!("invalid base64 text document: {err}")))?;
    String::from_utf8(bytes).map_err(|_| LlmError::invalid_request("a text/plain document must be UTF-8"))
}

/// Decoder state for one Messages stream. Per-message state is reset by every `message_start`,
/// so a proxy that splices a restarted generation into the stream does not merge the two.
#[derive(Debug, Default)]
struct MessagesDecoder {
    /// Open content blocks by stream index.
    blocks: Vec<(u32, Block)>,
    /// Block ids stay unique across restarted messages.
    next_block: u32,
    response_id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
    stop_reason: Option<String>,
    metadata: Option<ProviderMetadata>,
}

#[derive(Debug)]
enum Block {
    Text { id: String },
    Thinking { id: String, signature: String },
    Tool { id: String, name: String, input: String, start_input: Option<Value>, provider_executed: bool },
    Other,
}

/// One stream event; the event name is repeated in `type`, and unknown types are ignored.
#[derive(Debug, Deserialize)]
struct StreamEvent {
    #[serde(rename = "type")]
    kind: EventKind,
    index: Option<u32>,
    message: Option<MessageInfo>,
    content_block: Option<ContentBlock>,
    delta: Option<Delta>,
    usage: Option<WireUsage>,
    error: Option<WireError>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum EventKind {
    MessageStart,
    ContentBlockStart,
    ContentBlockDelta,
    ContentBlockStop,
    MessageDelta,
    MessageStop,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageInfo {
    id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct ContentBlock {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    name: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    data: Option<String>,
    input: Option<Value>,
    tool_use_id: Option<String>,
    content: Option<Value>,
}

/// A `content_block_delta` delta, or the `message_delta` delta (`stop_reason` and friends).
#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(rename = "type")]
    kind: Option<DeltaKind>,
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    partial_json: Option<String>,
    stop_reason: Option<String>,
    stop_sequence: Option<String>,
    stop_details: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum DeltaKind {
    TextDelta,
    ThinkingDelta,
    SignatureDelta,
    InputJsonDelta,
    #[serde(other)]
    Other,
}

/// Usage as reported; every field may be missing (or `null`) in either event.
#[derive(Debug, Clone, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Right-biased merge: fields present in `later` win.
    fn merge(&mut self, later: Self) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = later.cache_creation_input_tokens.or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = later.cache_read_input_tokens.or(self.cache_read_input_tokens);
    }

    fn normalise(&self) -> Usage {
        Usage::from_exclusive(
            self.input_tokens.unwrap_or(0),
            self.cache_read_input_tokens.unwrap_or(0),
            self.cache_creation_input_tokens.unwrap_or(0),
            self.output_tokens.unwrap_or(0),
            0,
        )
    }
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<String>,
}

impl StreamDecoder for MessagesDecoder {
    fn decode(&mut self, frame: Frame, sink: &mut EventSink) -> Result<(), LlmError> {
        let Frame::Sse(event) = frame else {
            return Err(LlmError::invalid_output("Anthropic Messages streams are SSE"));
        };
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let event: StreamEvent = parse_payload(ID, &event.data)?;
        match event.kind {
            EventKind::MessageStart => self.message_start(event.message),
            EventKind::ContentBlockStart => {
                self.block_start(event.index, event.content_block, sink)?;
            }
            EventKind::ContentBlockDelta => self.block_delta(event.index, event.delta, sink),
            EventKind::ContentBlockStop => self.block_stop(event.index, sink)?,
            EventKind::MessageDelta => self.message_delta(event.delta, event.usage),
            EventKind::MessageStop => self.finish(sink)?,
            EventKind::Error => return Err(stream_error(event.error)),
            EventKind::Other => {}
        }
        Ok(())
    }

    fn end(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        // `message_delta` carries the stop reason; a stream cut before `message_stop` but after it
        // is complete. Anything shorter is left to the client to report as truncated.
        if self.stop_reason.is_some() {
            return self.finish(sink);
        }
        Ok(())
    }
}

impl MessagesDecoder {
    fn message_start(&mut self, message: Option<MessageInfo>) {
        self.blocks.clear();
        self.usage = None;
        self.stop_reason = None;
        self.metadata = None;
        let Some(message) = message else { return };
        self.response_id = message.id.or(self.response_id.take());
        self.model = message.model.or(self.model.take());
        self.usage = message.usage;
    }

    fn block_start(
        &mut self,
        index: Option<u32>,
        block: Option<ContentBlock>,
        sink: &mut EventSink,
    ) -> Result<(), LlmError> {
        let (Some(index), Some(block)) = (index, block) else {
            return Ok(());
        };
        let state = match block.kind.as_str() {
            "text" => {
                let id = self.next_id("text");
                if let Some(text) = block.text.filter(|text| !text.is_empty()) {
                    sink.text_delta(&id, &text);
                }
                Block::Text { id }
            }
            "thinking" => {
                let id = self.next_id("reasoning");
                if let Some(thinking) = block.thinking.filter(|text| !text.is_empty()) {
                    sink.reasoning_delta(&id, &thinking);
                }
                Block::Thinking { id, signature: block.signature.unwrap_or_default() }
            }
            // Redacted thinking arrives whole; its data must be echoed back verbatim.
            "redacted_thinking" => {
                let id = self.next_id("reasoning");
                sink.reasoning_end(&id, None, block.data, None);
                Block::Other
            }
            kind @ ("tool_use" | "server_tool_use") => {
                let id = block.id.unwrap_or_else(|| index.to_string());
                let name = block.name.unwrap_or_default();
                sink.tool_input_start(&id, &name);
                let start_input =
                    block.input.filter(|input| input.as_object().is_some_and(|object| !object.is_empty()));
                Block::Tool {
                    id,
                    name,
                    input: String::new(),
                    start_input,
                    provider_executed: kind == "server_tool_use",
                }
            }
            kind => {
                if let Some(name) = kind.strip_suffix("_tool_result") {
                    server_tool_result_event(name, block.tool_use_id, block.content, sink);
                }
                Block::Other
            }
        };
        self.blocks.retain(|(open, _)| *open != index);
        self.blocks.push((index, state));
        Ok(())
    }

    fn block_delta(&mut self, index: Option<u32>, delta: Option<Delta>, sink: &mut EventSink) {
        let (Some(index), Some(delta)) = (index, delta) else {
            return;
        };
        let Some(block) = self.block_mut(index) else {
            return;
        };
        match (block, delta.kind) {
            (Block::Text { id }, Some(DeltaKind::TextDelta)) => {
                if let Some(text) = delta.text.filter(|text| !text.is_empty()) {
                    sink.text_delta(id, &text);
                }
            }
            (Block::Thinking { id, .. }, Some(DeltaKind::ThinkingDelta)) => {
                if let Some(thinking) = delta.thinking.filter(|text| !text.is_empty()) {
                    sink.reasoning_delta(id, &thinking);
                }
            }
            (Block::Thinking { signature, .. }, Some(DeltaKind::SignatureDelta)) => {
                signature.push_str(delta.signature.as_deref().unwrap_or_default());
            }
            (Block::Tool { id, input, .. }, Some(DeltaKind::InputJsonDelta)) => {
                if let Some(partial) = delta.partial_json.filter(|partial| !partial.is_empty()) {
                    sink.tool_input_delta(id, &partial);
                    input.push_str(&partial);
                }
            }
            _ => {}
        }
    }

    fn block_stop(&mut self, index: Option<u32>, sink: &mut EventSink) -> Result<(), LlmError> {
        let Some(index) = index else { return Ok(()) };
        let Some(at) = self.blocks.iter().position(|(open, _)| *open == index) else {
            return Ok(());
        };
        let (_, block) = self.blocks.remove(at);
        close_block(block, sink)
    }

    fn message_delta(&mut self, delta: Option<Delta>, usage: Option<WireUsage>) {
        if let Some(usage) = usage {
            self.usage.get_or_insert_with(WireUsage::default).merge(usage);
        }
        let Some(delta) = delta else { return };
        if delta.stop_reason.is_some() {
            self.stop_reason = delta.stop_reason;
        }
        let mut anthropic = Map::new();
        if let Some(sequence) = delta.stop_sequence {
            anthropic.insert("stop_sequence".into(), json!(sequence));
        }
        if let Some(details) = delta.stop_details.filter(|details| !details.is_null()) {
            anthropic.insert("stop_details".into(), details);
        }
        if !anthropic.is_empty() {
            let mut metadata = Map::new();
            metadata.insert("anthropic".into(), Value::Object(anthropic));
            self.metadata = Some(metadata);
        }
    }

    fn finish(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        // Blocks never stopped (a cut-short proxy stream) still yield their content.
        for (_, block) in std::mem::take(&mut self.blocks) {
            close_block(block, sink)?;
        }
        let mut finish = Finish::new(finish_reason(self.stop_reason.as_deref()));
        finish.usage = self.usage.as_ref().map(WireUsage::normalise);
        finish.response_id = self.response_id.take();
        finish.model = self.model.take();
        finish.provider_metadata = self.metadata.take();
        sink.finish(finish);
        Ok(())
    }

    fn block_mut(&mut self, index: u32) -> Option<&mut Block> {
        self.blocks.iter_mut().find(|(open, _)| *open == index).map(|(_, block)| block)
    }

    fn next_id(&mut self, kind: &str) -> String {
        let id = format!("{kind}-{}", self.next_block);
        self.next_block += 1;
        id
    }
}

fn close_block(block: Block, sink: &mut EventSink) -> Result<(), LlmError> {
    match block {
        Block::Text { id } => {
            if sink.is_text_open(&id) {
                sink.text_end(&id, None);
            }
        }
        Block::Thinking { id, signature } => {
            // A signature alone (thinking display `omitted`) is still a part to replay.
            if sink.is_reasoning_open(&id) || !signature.is_empty() {
                sink.reasoning_end(&id, (!signature.is_empty()).then_some(signature), None, None);
            }
        }
        Block::Tool { id, name, input, start_input, provider_executed } => {
            let input = match start_input {
                Some(start) if input.trim().is_empty() => start,
                _ => parse_tool_input(ID, &name, &input)?,
            };
            if provider_executed {
                sink.provider_tool_call(&id, &name, input);
            } else {
                sink.tool_call(&id, &name, input, None);
            }
        }
        Block::Other => {}
    }
    Ok(())
}

/// `web_search_tool_result` and friends arrive whole; an `*_error` payload is a failed call.
fn server_tool_result_event(name: &str, id: Option<String>, content: Option<Value>, sink: &mut EventSink) {
    let content = content.unwrap_or(Value::Null);
    let failed = content.get("type").and_then(Value::as_str).is_some_and(|kind| kind.ends_with("_error"));
    let result = if failed { ToolResultValue::Error(content) } else { ToolResultValue::Json(content) };
    sink.provider_tool_result(&id.unwrap_or_default(), name, result);
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn" | "stop_sequence" | "pause_turn") => FinishReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        _ => FinishReason::Unknown,
    }
}

/// An `error` event inside a 200 stream, such as `overloaded_error` (HTTP 529 outside a stream).
fn stream_error(error: Option<WireError>) -> LlmError {
    let (code, message) = match error {
        Some(error) => (error.kind, error.message),
        None => (None, None),
    };
    let message = message.filter(|message| !message.is_empty());
    let message = message.as_deref().or(code.as_deref()).unwrap_or("Anthropic Messages stream error");
    crate::classify_stream_error(code.as_deref(), message)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::CachePolicy;
    use crate::ErrorKind;
    use crate::LlmEvent;
    use crate::LlmResponse;
    use crate::ToolDefinition;
    use crate::framing::SseEvent;

    fn request(messages: Vec<Message>) -> LlmRequest {
        let mut request = LlmRequest::new("claude-test");
        request.messages = messages;
        request.cache = CachePolicy::Manual;
        request
    }

    fn tool_call(id: &str) -> ContentPart {
        ContentPart::ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            input: json!({"city": "Paris"}),
            provider_executed: false,
            provider_metadata: None,
        }
    }

    fn reasoning(text: &str, signature: Option<&str>, encrypted: Option<&str>) -> ContentPart {
        ContentPart::Reasoning {
            text: text.into(),
            signature: signature.map(str::to_owned),
            encrypted: encrypted.map(str::to_owned),
            provider_metadata: None,
        }
    }

    fn decode(payloads: &[&str]) -> (Vec<LlmEvent>, LlmResponse) {
        let payloads: Vec<Value> = payloads.iter().map(|data| serde_json::from_str(data).unwrap()).collect();
        let events = crate::protocol::decode_json_frames(&mut MessagesDecoder::default(), &payloads);
        let response = LlmResponse::from_events(&events);
        (events, response)
    }

    #[test]
    fn tool_calls_followed_by_text_are_split_into_two_assistant_turns() {
        let messages = vec![Message::assistant(vec![tool_call("call_1"), ContentPart::text("I will check.")])];
        let body = AnthropicMessages.encode(&request(messages.clone())).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "assistant", "content": [{"type": "text", "text": "I will check."}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                ]},
            ])
        );

        let mut unrepaired = request(messages);
        unrepaired.options.set("anthropic", json!({"repair_tool_use_order": false}));
        let body = AnthropicMessages.encode(&unrepaired).unwrap();
        assert_eq!(body["messages"].as_array().map(Vec::len), Some(1));
        assert_eq!(body["messages"][0]["content"][0]["type"], "tool_use");
    }

    #[test]
    fn foreign_tool_ids_are_scrubbed_alike_on_call_and_result() {
        let body = AnthropicMessages
            .encode(&request(vec![
                Message::assistant(vec![tool_call("functions.read:0")]),
                Message::tool_result("functions.read:0", "read", ToolResultValue::Text("x".into())),
            ]))
            .unwrap();
        assert_eq!(body["messages"][0]["content"][0]["id"], "functions_read_0");
        assert_eq!(body["messages"][1]["content"][0]["tool_use_id"], "functions_read_0");
    }

    #[test]
    fn well_ordered_assistant_turns_are_left_alone() {
        let message = Message::assistant(vec![ContentPart::text("Checking."), tool_call("a"), tool_call("b")]);
        assert!(!has_misplaced_tool_call(&message));
        let body = AnthropicMessages.encode(&request(vec![message])).unwrap();
        assert_eq!(body["messages"][0]["content"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn reasoning_replays_signed_or_redacted_and_drops_unsigned() {
        let message = Message::assistant(vec![
            reasoning("think", Some("sig=="), None),
            reasoning("", None, Some("opaque")),
            reasoning("from another provider", None, None),
            ContentPart::text("Done."),
        ]);
        let body = AnthropicMessages.encode(&request(vec![message])).unwrap();
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "thinking", "thinking": "think", "signature": "sig=="},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Done."},
            ])
        );
    }

    #[test]
    fn tool_results_become_user_blocks_with_error_flag_and_rich_content() {
        let image = ToolContent::Media { media_type: "image/png".into(), data: MediaData::Base64("iVBO".into()) };
        let mut message = Message::tool_result("c1", "read", ToolResultValue::Error(json!("boom")));
        message.content.push(ContentPart::ToolResult {
            id: "c2".into(),
            name: "shot".into(),
            result: ToolResultValue::Content(vec![ToolContent::Text { text: "ok".into() }, image]),
            provider_executed: false,
            cache: Some(CacheHint { ttl_seconds: Some(3600) }),
            provider_metadata: None,
        });
        let body = AnthropicMessages.encode(&request(vec![message])).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": true},
                {"type": "tool_result", "tool_use_id": "c2", "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                ], "cache_control": {"type": "ephemeral", "ttl": "1h"}},
            ]}])
        );
    }

    #[test]
    fn auto_cache_policy_marks_last_tool_system_and_latest_user_turn() {
        let mut request = request(vec![Message::user("first"), Message::user("second")])
            .system("sys")
            .tool(ToolDefinition::new("t", "d", json!({"type": "object"})));
        request.cache = CachePolicy::Auto;
        let body = AnthropicMessages.encode(&request).unwrap();
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(body["tools"][0]["cache_control"], ephemeral);
        assert_eq!(body["system"][0]["cache_control"], ephemeral);
        assert_eq!(body["messages"][0]["content"][0].get("cache_control"), None);
        assert_eq!(body["messages"][1]["content"][0]["cache_control"], ephemeral);
    }

    #[test]
    fn system_updates_use_the_wrapped_fallback() {
        let body = AnthropicMessages
            .encode(&request(vec![Message::user("hi"), Message::system_update("be <brief>")]))
            .unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "<system-update>\nbe &lt;brief&gt;\n</system-update>"},
            ]}])
        );
    }

    #[test]
    fn options_map_to_thinking_effort_and_tool_choice() {
        let mut request = request(vec![Message::user("hi")]).tool(ToolDefinition::new("t", "d", json!({})));
        request.tool_choice = Some(ToolChoice::Required);
        request.generation.max_tokens = Some(8000);
        request.generation.stop = vec!["END".into()];
        request.options.set(
            "anthropic",
            json!({"thinking": {"type": "enabled", "budgetTokens": 2048}, "effort": "high", "disable_parallel_tool_use": true}),
        );
        let body = AnthropicMessages.encode(&request).unwrap();
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 2048}));
        assert_eq!(body["output_config"], json!({"effort": "high"}));
        assert_eq!(body["tool_choice"], json!({"type": "any", "disable_parallel_tool_use": true}));
        assert_eq!((body["max_tokens"].clone(), body["stop_sequences"].clone()), (json!(8000), json!(["END"])));

        request.options.set("anthropic", json!({"thinking": {"type": "adaptive"}}));
        assert_eq!(AnthropicMessages.encode(&request).unwrap()["thinking"], json!({"type": "adaptive"}));

        request.options.set("anthropic", json!({"thinking": {"type": "enabled"}}));
        assert_eq!(AnthropicMessages.encode(&request).unwrap_err().kind, ErrorKind::InvalidRequest);
        request.options.set("anthropic", json!({"reasoning_effort": "high"}));
        assert_eq!(AnthropicMessages.encode(&request).unwrap_err().kind, ErrorKind::InvalidRequest);
    }

    #[test]
    fn max_tokens_defaults_to_4096() {
        let body = AnthropicMessages.encode(&request(vec![Message::user("hi")])).unwrap();
        assert_eq!(body["max_tokens"], json!(4096));
    }

    #[test]
    fn a_second_message_start_discards_the_first_messages_blocks_and_usage() {
        let (_, response) = decode(&[
            r#"{"type":"message_start","message":{"id":"msg_a","model":"m","usage":{"input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t_a","name":"x","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"message_start","message":{"id":"msg_b","model":"m","usage":{"input_tokens":7,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(response.text(), "ok");
        assert!(response.tool_calls().is_empty());
        assert_eq!(response.response_id.as_deref(), Some("msg_b"));
        assert_eq!(response.usage, Some(Usage::from_exclusive(7, 0, 0, 3, 0)));
    }

    #[test]
    fn signature_only_thinking_and_redacted_thinking_become_replayable_parts() {
        let (_, response) = decode(&[
            r#"{"type":"message_start","message":{"id":"msg","usage":{"input_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert_eq!(
            response.message.content,
            vec![reasoning("", Some("sig"), None), reasoning("", None, Some("opaque"))]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::Length));
        // Replaying the folded message gives back exactly what was received.
        let body = AnthropicMessages.encode(&request(vec![response.message])).unwrap();
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "thinking", "thinking": "", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
            ])
        );
    }

    #[test]
    fn an_error_event_is_a_classified_terminal_error() {
        let (events, response) = decode(&[
            r#"{"type":"message_start","message":{"id":"msg","usage":{"input_tokens":1}}}"#,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        ]);
        let error = response.error.unwrap();
        assert_eq!(
            (error.kind, error.retryable, error.code.as_deref()),
            (ErrorKind::ProviderInternal, true, Some("overloaded_error"))
        );
        assert!(matches!(events.last(), Some(LlmEvent::Error { .. })));

        let (_, response) = decode(&[
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#,
        ]);
        assert_eq!(response.error.map(|error| error.kind), Some(ErrorKind::ContextOverflow));
    }

    #[test]
    fn invalid_tool_input_is_an_invalid_output_error() {
        let (_, response) = decode(&[
            r#"{"type":"message_start","message":{"id":"msg"}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"x","input":{}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
        ]);
        assert_eq!(response.error.map(|error| error.kind), Some(ErrorKind::InvalidProviderOutput));
    }

    #[test]
    fn a_stream_without_message_delta_is_not_finished_by_the_decoder() {
        let mut decoder = MessagesDecoder::default();
        let mut sink = EventSink::new();
        let frame = Frame::Sse(SseEvent { event: None, data: r#"{"type":"message_start","message":{}}"#.into() });
        decoder.decode(frame, &mut sink).unwrap();
        decoder.end(&mut sink).unwrap();
        assert!(!sink.is_terminal());
    }

    #[test]
    fn data_urls_are_sent_inline_not_as_fetchable_urls() {
        let data = MediaData::Url("data:image/png;base64,iVBOR".to_owned());
        assert_eq!(
            media_block("image/png", &data).unwrap(),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}})
        );
        let url = MediaData::Url("https://example.com/a.png".to_owned());
        assert_eq!(
            media_block("image/png", &url).unwrap(),
            json!({"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}})
        );
    }
}
