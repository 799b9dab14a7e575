//! AWS Bedrock ConverseStream (`POST /model/{modelId}/converse-stream`), framed as a binary AWS
//! event stream.
//!
//! Requests lower to Converse content blocks (`text`, `image`, `document`, `toolUse`,
//! `toolResult`, `reasoningContent`) with prompt-cache breakpoints as positional `cachePoint`
//! blocks. Each response frame is one ConverseStream union member named by its `:event-type`
//! header; modeled failures arrive as `:message-type: exception` frames and become classified
//! errors. Bedrock reports the stop reason (`messageStop`) before the usage (`metadata`), so the
//! finish is held until the usage arrives, or until the body ends.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::EventSink;
use super::Protocol;
use super::StreamDecoder;
use super::cache::CachePlan;
use super::shared::PendingCall;
use super::shared::ToolInputs;
use super::shared::lower_system_updates;
use super::shared::number;
use super::shared::parse_payload;
use super::shared::parse_tool_input;
use super::sink::Finish;
use crate::CacheHint;
use crate::ContentPart;
use crate::ErrorKind;
use crate::FinishReason;
use crate::LlmError;
use crate::LlmRequest;
use crate::MediaData;
use crate::Message;
use crate::Role;
use crate::ToolChoice;
use crate::ToolContent;
use crate::ToolResultValue;
use crate::Usage;
use crate::framing::EventStreamMessage;
use crate::framing::Frame;
use crate::framing::Framing;
use crate::percent::URI_COMPONENT;
use crate::percent::percent_encode;

const PROTOCOL: &str = "bedrock-converse";

/// Output budget used under an extended-thinking budget when the request sets no `max_tokens`
/// (Claude requires `maxTokens` to exceed the thinking budget).
const DEFAULT_MAX_TOKENS_WITH_THINKING: u32 = 4096;

/// The Bedrock Converse protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BedrockConverse;

/// Options read from the `bedrock` namespace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BedrockOptions {
    /// Enables Claude extended thinking with this token budget
    /// (`additionalModelRequestFields.thinking`). The budget is added to `maxTokens`, as the
    /// Vercel AI SDK does, so the visible answer keeps its own budget.
    pub thinking_budget_tokens: Option<u32>,
    /// Model-specific request fields sent as `additionalModelRequestFields` (for example Nova's
    /// `reasoningConfig` or Claude's `top_k`). `thinking_budget_tokens` wins over a `thinking` key.
    pub additional_model_request_fields: Option<Map<String, Value>>,
    /// JSON pointers of model-specific response fields to return in `messageStop`.
    pub additional_model_response_field_paths: Option<Vec<String>>,
    /// A guardrail to apply (`guardrailConfig`).
    pub guardrail: Option<GuardrailOptions>,
    /// `standard` or `optimized` (`performanceConfig.latency`).
    pub performance_latency: Option<String>,
    /// `priority`, `default` or `flex` (`serviceTier.type`).
    pub service_tier: Option<String>,
    /// Key-value pairs recorded with the invocation logs (`requestMetadata`).
    pub request_metadata: Option<Map<String, Value>>,
}

/// A Bedrock guardrail reference.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GuardrailOptions {
    pub identifier: String,
    pub version: String,
    /// `enabled`, `disabled` or `enabled_full`.
    pub trace: Option<String>,
    /// `sync` or `async`.
    pub stream_processing_mode: Option<String>,
}

impl Protocol for BedrockConverse {
    fn id(&self) -> &'static str {
        PROTOCOL
    }

    fn framing(&self) -> Framing {
        Framing::AwsEventStream
    }

    fn path(&self, request: &LlmRequest) -> String {
        format!("/model/{}/converse-stream", percent_encode(&request.model, URI_COMPONENT))
    }

    fn encode(&self, request: &LlmRequest) -> Result<Value, LlmError> {
        let options: BedrockOptions = request.options.get("bedrock")?;
        // Cache breakpoints are planned on the lowered conversation so message indices line up.
        let mut lowered = request.clone();
        lowered.messages = lower_system_updates(&request.messages)?;
        let plan = CachePlan::for_request(&lowered);

        let mut body = Map::new();
        body.insert("modelId".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(messages(&lowered.messages, &plan)?));
        if !request.system.is_empty() {
            let mut system = Vec::new();
            for (index, part) in request.system.iter().enumerate() {
                system.push(json!({"text": part.text}));
                push_cache_point(&mut system, plan.system(index));
            }
            body.insert("system".into(), Value::Array(system));
        }
        if let Some(config) = inference_config(request, &options) {
            body.insert("inferenceConfig".into(), config);
        }
        if let Some(config) = tool_config(request, &plan) {
            body.insert("toolConfig".into(), config);
        }
        insert_options(&mut body, &options);
        Ok(Value::Object(body))
    }

    fn decoder(&self, _request: &LlmRequest) -> Box<dyn StreamDecoder> {
        Box::new(ConverseDecoder::default())
    }
}

fn inference_config(request: &LlmRequest, options: &BedrockOptions) -> Option<Value> {
    let generation = &request.generation;
    let mut config = Map::new();
    let max_tokens = match options.thinking_budget_tokens {
        Some(budget) => Some(generation.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS_WITH_THINKING).saturating_add(budget)),
        None => generation.max_tokens,
    };
    if let Some(max) = max_tokens {
        config.insert("maxTokens".into(), json!(max));
    }
    if let Some(temperature) = generation.temperature {
        config.insert("temperature".into(), number(temperature));
    }
    if let Some(top_p) = generation.top_p {
        config.insert("topP".into(), number(top_p));
    }
    if !generation.stop.is_empty() {
        config.insert("stopSequences".into(), json!(generation.stop));
    }
    (!config.is_empty()).then_some(Value::Object(config))
}

/// Tools with their cache points; omitted for `tool_choice: none`, which Converse cannot express.
fn tool_config(request: &LlmRequest, plan: &CachePlan) -> Option<Value> {
    if request.tools.is_empty() || request.tool_choice == Some(ToolChoice::None) {
        return None;
    }
    let mut tools = Vec::new();
    for (index, tool) in request.tools.iter().enumerate() {
        tools.push(json!({"toolSpec": {
            "name": tool.name, "description": tool.description, "inputSchema": {"json": tool.input_schema},
        }}));
        push_cache_point(&mut tools, plan.tool(index));
    }
    let mut config = Map::new();
    config.insert("tools".into(), Value::Array(tools));
    let choice = match &request.tool_choice {
        None | Some(ToolChoice::None) => None,
        Some(ToolChoice::Auto) => Some(json!({"auto": {}})),
        Some(ToolChoice::Required) => Some(json!({"any": {}})),
        Some(ToolChoice::Tool { name }) => Some(json!({"tool": {"name": name}})),
    };
    if let Some(choice) = choice {
        config.insert("toolChoice".into(), choice);
    }
    Some(Value::Object(config))
}

fn insert_options(body: &mut Map<String, Value>, options: &BedrockOptions) {
    let mut additional = options.additional_model_request_fields.clone().unwrap_or_default();
    if let Some(budget) = options.thinking_budget_tokens {
        additional.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
    }
    if !additional.is_empty() {
        body.insert("additionalModelRequestFields".into(), Value::Object(additional));
    }
    if let Some(paths) = &options.additional_model_response_field_paths {
        body.insert("additionalModelResponseFieldPaths".into(), json!(paths));
    }
    if let Some(guardrail) = &options.guardrail {
        let mut config = Map::new();
        config.insert("guardrailIdentifier".into(), json!(guardrail.identifier));
        config.insert("guardrailVersion".into(), json!(guardrail.version));
        if let Some(trace) = &guardrail.trace {
            config.insert("trace".into(), json!(trace));
        }
        if let Some(mode) = &guardrail.stream_processing_mode {
            config.insert("streamProcessingMode".into(), json!(mode));
        }
        body.insert("guardrailConfig".into(), Value::Object(config));
    }
    if let Some(latency) = &options.performance_latency {
        body.insert("performanceConfig".into(), json!({"latency": latency}));
    }
    if let Some(tier) = &options.service_tier {
        body.insert("serviceTier".into(), json!({"type": tier}));
    }
    if let Some(metadata) = &options.request_metadata {
        body.insert("requestMetadata".into(), Value::Object(metadata.clone()));
    }
}

/// A `cachePoint` block after the hinted block; never as the first block of a list.
fn push_cache_point(blocks: &mut Vec<Value>, hint: Option<&CacheHint>) {
    let Some(hint) = hint else { return };
    if blocks.is_empty() {
        return;
    }
    let mut point = Map::new();
    point.insert("type".into(), json!("default"));
    if hint.ttl_seconds.is_some_and(|ttl| ttl >= 3600) {
        point.insert("ttl".into(), json!("1h"));
    }
    blocks.push(json!({"cachePoint": point}));
}

/// Lowers the conversation. Tool results travel in user messages, and Converse rejects two
/// consecutive messages of one role (or an empty one), so adjacent same-role messages merge.
fn messages(messages: &[Message], plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let (role, content) = match message.role {
            // System updates were lowered to user text already; any left over is user text too.
            Role::User | Role::System => ("user", user_blocks(message, index, plan)?),
            Role::Tool => ("user", tool_blocks(message, index, plan)?),
            Role::Assistant => ("assistant", assistant_blocks(message, index, plan)?),
        };
        if content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((previous, blocks)) if *previous == role => blocks.extend(content),
            _ => out.push((role, content)),
        }
    }
    Ok(out.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect())
}

fn user_blocks(message: &Message, index: usize, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut blocks = Vec::new();
    for (at, part) in message.content.iter().enumerate() {
        match part {
            ContentPart::Text { text, .. } => push_text(&mut blocks, text),
            ContentPart::Media { media_type, data, filename } => {
                blocks.push(media_block(media_type, data, filename.as_deref())?);
            }
            ContentPart::ToolResult { id, result, .. } => {
                blocks.push(tool_result_block(id, result)?);
            }
            _ => {
                return Err(LlmError::invalid_request("a user message may contain only text, media and tool results"));
            }
        }
        push_cache_point(&mut blocks, plan.part(index, at));
    }
    Ok(blocks)
}

fn tool_blocks(message: &Message, index: usize, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut blocks = Vec::new();
    for (at, part) in message.content.iter().enumerate() {
        let ContentPart::ToolResult { id, result, .. } = part else {
            return Err(LlmError::invalid_request("a tool message may contain only tool results"));
        };
        blocks.push(tool_result_block(id, result)?);
        push_cache_point(&mut blocks, plan.part(index, at));
    }
    Ok(blocks)
}

fn assistant_blocks(message: &Message, index: usize, plan: &CachePlan) -> Result<Vec<Value>, LlmError> {
    let mut blocks = Vec::new();
    for (at, part) in message.content.iter().enumerate() {
        match part {
            ContentPart::Text { text, .. } => push_text(&mut blocks, text),
            ContentPart::Reasoning { text, signature, encrypted, .. } => {
                if let Some(block) = reasoning_block(text, signature.as_deref(), encrypted.as_deref()) {
                    blocks.push(block);
                }
            }
            ContentPart::ToolCall { id, name, input, provider_executed: false, .. } => {
                blocks.push(json!({"toolUse": {"toolUseId": id, "name": name, "input": input}}));
            }
            // Bedrock runs no tools itself; another provider's hosted calls cannot be replayed.
            ContentPart::ToolCall { provider_executed: true, .. } | ContentPart::ToolResult { .. } => {}
            ContentPart::Media { .. } => {
                return Err(LlmError::invalid_request("Bedrock Converse assistant messages cannot contain media"));
            }
        }
        push_cache_point(&mut blocks, plan.part(index, at));
    }
    Ok(blocks)
}

/// Converse rejects blank text blocks.
fn push_text(blocks: &mut Vec<Value>, text: &str) {
    if !text.is_empty() {
        blocks.push(json!({"text": text}));
    }
}

/// Reasoning replays byte-exact: redacted reasoning as `redactedContent`, readable reasoning with
/// its signature. Empty reasoning without either is dropped.
fn reasoning_block(text: &str, signature: Option<&str>, encrypted: Option<&str>) -> Option<Value> {
    if let (Some(redacted), true, None) = (encrypted, text.is_empty(), signature) {
        return Some(json!({"reasoningContent": {"redactedContent": redacted}}));
    }
    if text.is_empty() && signature.is_none() {
        return None;
    }
    let mut reasoning = Map::new();
    reasoning.insert("text".into(), json!(text));
    if let Some(signature) = signature {
        reasoning.insert("signature".into(), json!(signature));
    }
    Some(json!({"reasoningContent": {"reasoningText": reasoning}}))
}

fn tool_result_block(id: &str, result: &ToolResultValue) -> Result<Value, LlmError> {
    let content = match result {
        // Converse takes only objects as `json` tool output; other values go as text.
        ToolResultValue::Json(value @ Value::Object(_)) => vec![json!({"json": value})],
        ToolResultValue::Content(items) => {
            let mut content = Vec::new();
            for item in items {
                match item {
                    ToolContent::Text { text } => content.push(json!({"text": text})),
                    ToolContent::Media { media_type, data } => {
                        content.push(media_block(media_type, data, None)?);
                    }
                }
            }
            content
        }
        other => vec![json!({"text": other.to_text()})],
    };
    let status = if result.is_error() { "error" } else { "success" };
    Ok(json!({"toolResult": {"toolUseId": id, "content": content, "status": status}}))
}

/// An `image` block for images, a `document` block for the document types Converse reads.
fn media_block(media_type: &str, data: &MediaData, filename: Option<&str>) -> Result<Value, LlmError> {
    let mime = media_type.to_ascii_lowercase();
    let source = media_source(data)?;
    if mime.starts_with("image/") {
        let format = match mime.as_str() {
            "image/png" => "png",
            "image/jpeg" | "image/jpg" => "jpeg",
            "image/gif" => "gif",
            "image/webp" => "webp",
            _ => return Err(unsupported_media(media_type)),
        };
        return Ok(json!({"image": {"format": format, "source": source}}));
    }
    let format = match mime.as_str() {
        "application/pdf" => "pdf",
        "text/csv" => "csv",
        "application/msword" => "doc",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.ms-excel" => "xls",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        "text/html" => "html",
        "text/plain" => "txt",
        "text/markdown" => "md",
        _ => return Err(unsupported_media(media_type)),
    };
    Ok(json!({"document": {"format": format, "name": document_name(filename), "source": source}}))
}

fn unsupported_media(media_type: &str) -> LlmError {
    LlmError::invalid_request(format!("Bedrock Converse does not support media of type `{media_type}`"))
}

/// Inline bytes (base64 in JSON) or an S3 object; Converse cannot fetch other URLs.
fn media_source(data: &MediaData) -> Result<Value, LlmError> {
    match (data.inline_base64(), data) {
        (Some(bytes), _) => Ok(json!({"bytes": bytes})),
        (None, MediaData::Url(url)) if url.starts_with("s3://") => Ok(json!({"s3Location": {"uri": url}})),
        (None, _) => Err(LlmError::invalid_request(
            "Bedrock Converse takes media as inline base64 or an s3:// URL, not a web URL",
        )),
    }
}

/// Document names may hold only letters, digits, single spaces, hyphens, parentheses and square
/// brackets, so the extension is dropped and anything else becomes a hyphen.
fn document_name(filename: Option<&str>) -> String {
    let stem = filename.map(|name| name.rsplit_once('.').map_or(name, |(stem, _)| stem)).unwrap_or_default();
    let mut name = String::with_capacity(stem.len());
    for ch in stem.chars() {
        let ch = if ch.is_alphanumeric() || "-()[]".contains(ch) {
            ch
        } else if ch.is_whitespace() {
            ' '
        } else {
            '-'
        };
        if !(ch == ' ' && name.ends_with(' ')) {
            name.push(ch);
        }
    }
    let name = name.trim();
    if name.is_empty() { "document".to_owned() } else { name.to_owned() }
}

/// Decoder state for one ConverseStream response.
#[derive(Debug, Default)]
struct ConverseDecoder {
    /// Open text and reasoning blocks by `contentBlockIndex`.
    blocks: Vec<OpenBlock>,
    /// Tool calls by `contentBlockIndex`.
    calls: ToolInputs,
    tool_calls: usize,
    stop_reason: Option<FinishReason>,
    usage: Option<Usage>,
    latency_ms: Option<u64>,
}

#[derive(Debug)]
struct OpenBlock {
    index: u32,
    id: String,
    kind: BlockKind,
}

#[derive(Debug)]
enum BlockKind {
    Text,
    Reasoning { signature: String, redacted: String },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    content_block_index: u32,
    start: Option<StartBlock>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartBlock {
    tool_use: Option<ToolUseStart>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    tool_use_id: String,
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    content_block_index: u32,
    delta: Option<Delta>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Delta {
    text: Option<String>,
    tool_use: Option<ToolUseDelta>,
    reasoning_content: Option<ReasoningDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolUseDelta {
    #[serde(default)]
    input: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReasoningDelta {
    text: Option<String>,
    signature: Option<String>,
    redacted_content: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStop {
    content_block_index: u32,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    stop_reason: String,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    usage: Option<ConverseUsage>,
    metrics: Option<Metrics>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    cache_read_input_tokens: Option<u64>,
    cache_write_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Metrics {
    latency_ms: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct ExceptionBody {
    #[serde(alias = "Message")]
    message: Option<String>,
}

impl StreamDecoder for ConverseDecoder {
    fn decode(&mut self, frame: Frame, sink: &mut EventSink) -> Result<(), LlmError> {
        let Frame::EventStream(message) = frame else {
            return Err(LlmError::invalid_output("Bedrock ConverseStream responses are AWS event streams"));
        };
        match message.header_str(":message-type").unwrap_or("event") {
            "event" => self.event(&message, sink),
            "exception" => Err(exception(&message)),
            "error" => Err(unmodeled_error(&message)),
            _ => Ok(()),
        }
    }

    fn end(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        // The usage never came; the stop reason alone still ends the response.
        if self.stop_reason.is_some() {
            return self.finish(sink);
        }
        Ok(())
    }
}

impl ConverseDecoder {
    fn event(&mut self, message: &EventStreamMessage, sink: &mut EventSink) -> Result<(), LlmError> {
        let payload = &message.payload;
        match message.header_str(":event-type").unwrap_or_default() {
            "contentBlockStart" => self.block_start(parse(payload)?, sink),
            "contentBlockDelta" => self.block_delta(parse(payload)?, sink),
            "contentBlockStop" => {
                let stop: BlockStop = parse(payload)?;
                self.close_block(stop.content_block_index, sink)
            }
            "messageStop" => {
                let stop: MessageStop = parse(payload)?;
                self.stop_reason = Some(finish_reason(&stop.stop_reason));
                if self.usage.is_some() {
                    return self.finish(sink);
                }
                Ok(())
            }
            "metadata" => {
                let metadata: Metadata = parse(payload)?;
                self.latency_ms = metadata.metrics.and_then(|metrics| metrics.latency_ms);
                self.usage = metadata.usage.map(|usage| {
                    Usage::from_exclusive(
                        usage.input_tokens,
                        usage.cache_read_input_tokens.unwrap_or(0),
                        usage.cache_write_input_tokens.unwrap_or(0),
                        usage.output_tokens,
                        0,
                    )
                });
                if self.stop_reason.is_some() {
                    return self.finish(sink);
                }
                Ok(())
            }
            // `messageStart` carries only the role; unknown members are skipped.
            _ => Ok(()),
        }
    }

    fn block_start(&mut self, start: BlockStart, sink: &mut EventSink) -> Result<(), LlmError> {
        if let Some(tool) = start.start.and_then(|start| start.tool_use) {
            let key = start.content_block_index.to_string();
            if self.calls.start(&key, &tool.tool_use_id, &tool.name) {
                sink.tool_input_start(&tool.tool_use_id, &tool.name);
            }
        }
        Ok(())
    }

    fn block_delta(&mut self, delta: BlockDelta, sink: &mut EventSink) -> Result<(), LlmError> {
        let index = delta.content_block_index;
        let Some(delta) = delta.delta else {
            return Ok(());
        };
        if let Some(text) = delta.text {
            let at = self.open_block(index, BlockKind::Text, sink)?;
            sink.text_delta(&self.blocks[at].id, &text);
        }
        if let Some(tool) = delta.tool_use {
            let Some(call) = self.calls.get_mut(&index.to_string()) else {
                return Err(LlmError::invalid_output(format!(
                    "Bedrock sent tool input for content block {index}, which started no tool call"
                )));
            };
            call.input.push_str(&tool.input);
            sink.tool_input_delta(&call.id, &tool.input);
        }
        if let Some(reasoning) = delta.reasoning_content {
            let kind = BlockKind::Reasoning { signature: String::new(), redacted: String::new() };
            let at = self.open_block(index, kind, sink)?;
            let block = &mut self.blocks[at];
            sink.reasoning_delta(&block.id, reasoning.text.as_deref().unwrap_or_default());
            if let BlockKind::Reasoning { signature, redacted } = &mut block.kind {
                signature.push_str(reasoning.signature.as_deref().unwrap_or_default());
                redacted.push_str(reasoning.redacted_content.as_deref().unwrap_or_default());
            }
        }
        Ok(())
    }

    /// The position in `blocks` of the open block at `index`, opening it (and closing a block of
    /// another kind at the same index) when needed.
    fn open_block(&mut self, index: u32, kind: BlockKind, sink: &mut EventSink) -> Result<usize, LlmError> {
        if let Some(at) = self.blocks.iter().position(|open| open.index == index) {
            if std::mem::discriminant(&self.blocks[at].kind) == std::mem::discriminant(&kind) {
                return Ok(at);
            }
            self.close_block(index, sink)?;
        }
        let id = match kind {
            BlockKind::Text => format!("text-{index}"),
            BlockKind::Reasoning { .. } => format!("reasoning-{index}"),
        };
        // Open the block now, so that it keeps its place even if its first delta is empty.
        match kind {
            BlockKind::Text => sink.text_delta(&id, ""),
            BlockKind::Reasoning { .. } => sink.reasoning_delta(&id, ""),
        }
        self.blocks.push(OpenBlock { index, id, kind });
        Ok(self.blocks.len() - 1)
    }

    /// Ends the block at `index`: a text or reasoning block (with its signature or redacted
    /// content), or a tool call whose accumulated input is now complete.
    fn close_block(&mut self, index: u32, sink: &mut EventSink) -> Result<(), LlmError> {
        if let Some(call) = self.calls.take(&index.to_string()) {
            self.emit_call(call, sink)?;
        }
        if let Some(at) = self.blocks.iter().position(|open| open.index == index) {
            let block = self.blocks.remove(at);
            match block.kind {
                BlockKind::Text => sink.text_end(&block.id, None),
                BlockKind::Reasoning { signature, redacted } => {
                    let signature = (!signature.is_empty()).then_some(signature);
                    let redacted = (!redacted.is_empty()).then_some(redacted);
                    sink.reasoning_end(&block.id, signature, redacted, None);
                }
            }
        }
        Ok(())
    }

    fn emit_call(&mut self, call: PendingCall, sink: &mut EventSink) -> Result<(), LlmError> {
        let input = parse_tool_input(PROTOCOL, &call.name, &call.input)?;
        sink.tool_call(&call.id, &call.name, input, None);
        self.tool_calls += 1;
        Ok(())
    }

    /// Completes what is still open (a stream may skip `contentBlockStop`), then finishes.
    fn finish(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        for call in self.calls.take_all() {
            self.emit_call(call, sink)?;
        }
        let open: Vec<u32> = self.blocks.iter().map(|block| block.index).collect();
        for index in open {
            self.close_block(index, sink)?;
        }
        let mut reason = self.stop_reason.unwrap_or(FinishReason::Unknown);
        if reason == FinishReason::Stop && self.tool_calls > 0 {
            reason = FinishReason::ToolCalls;
        }
        let mut finish = Finish::new(reason);
        finish.usage = self.usage.take();
        finish.provider_metadata = self.latency_ms.map(|latency| {
            let mut meta = Map::new();
            meta.insert("bedrock".into(), json!({"latency_ms": latency}));
            meta
        });
        sink.finish(finish);
        Ok(())
    }
}

fn parse<T: serde::de::DeserializeOwned>(payload: &[u8]) -> Result<T, LlmError> {
    let text = std::str::from_utf8(payload)
        .map_err(|_| LlmError::invalid_output("a Bedrock ConverseStream event payload is not UTF-8"))?;
    parse_payload(PROTOCOL, text)
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolCalls,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "guardrail_intervened" | "content_filtered" => FinishReason::ContentFilter,
        "malformed_model_output" | "malformed_tool_use" => FinishReason::Error,
        _ => FinishReason::Unknown,
    }
}

/// A modeled stream exception (`:exception-type`), with its message from the JSON payload.
fn exception(message: &EventStreamMessage) -> LlmError {
    let kind = message.header_str(":exception-type").unwrap_or("exception");
    let body: ExceptionBody = serde_json::from_slice(&message.payload).unwrap_or_default();
    let text = body.message.unwrap_or_else(|| format!("Bedrock reported {kind} mid-stream"));
    classify(kind, &text)
}

/// An unmodeled stream error (`:error-code` and `:error-message` headers).
fn unmodeled_error(message: &EventStreamMessage) -> LlmError {
    let code = message.header_str(":error-code").unwrap_or("error");
    let text = message.header_str(":error-message").unwrap_or("Bedrock reported an unmodeled stream error");
    classify(code, text)
}

/// Maps Bedrock's exception names (either case of the first letter) to error kinds; anything
/// else is classified from its name and message.
fn classify(code: &str, message: &str) -> LlmError {
    let kind = match code.to_ascii_lowercase().as_str() {
        "throttlingexception" => Some(ErrorKind::RateLimit),
        "internalserverexception"
        | "serviceunavailableexception"
        | "modelstreamerrorexception"
        | "modelnotreadyexception" => Some(ErrorKind::ProviderInternal),
        "modeltimeoutexception" => Some(ErrorKind::Timeout),
        "validationexception" if crate::is_context_overflow(message) => Some(ErrorKind::ContextOverflow),
        "validationexception" | "resourcenotfoundexception" => Some(ErrorKind::InvalidRequest),
        "accessdeniedexception" => Some(ErrorKind::Authentication),
        _ => None,
    };
    match kind {
        Some(kind) => LlmError::new(kind, message).with_code(code),
        None => crate::classify_stream_error(Some(code), message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::HeaderValue;

    fn frame(headers: &[(&str, &str)], payload: &str) -> Frame {
        Frame::EventStream(EventStreamMessage {
            headers: headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), HeaderValue::String((*value).to_owned())))
                .collect(),
            payload: bytes::Bytes::copy_from_slice(payload.as_bytes()),
        })
    }

    fn event(event_type: &str, payload: &str) -> Frame {
        frame(
            &[(":message-type", "event"), (":event-type", event_type), (":content-type", "application/json")],
            payload,
        )
    }

    fn run(frames: Vec<Frame>) -> Vec<crate::LlmEvent> {
        let mut decoder = ConverseDecoder::default();
        let mut sink = EventSink::new();
        for frame in frames {
            if let Err(error) = decoder.decode(frame, &mut sink) {
                sink.error(error);
            }
        }
        if !sink.is_terminal() {
            decoder.end(&mut sink).unwrap();
        }
        sink.drain().collect()
    }

    #[test]
    fn model_ids_are_encoded_like_encode_uri_component() {
        assert_eq!(
            BedrockConverse.path(&LlmRequest::new("us.amazon.nova-micro-v1:0")),
            "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
        );
        assert_eq!(
            percent_encode("arn:aws:bedrock:x/y (1)*!'~", URI_COMPONENT),
            "arn%3Aaws%3Abedrock%3Ax%2Fy%20(1)*!'~"
        );
    }

    #[test]
    fn cache_hints_become_cache_points_after_the_hinted_blocks() {
        let mut request = LlmRequest::new("m")
            .system("sys")
            .tool(crate::ToolDefinition::new("t", "d", json!({"type": "object"})))
            .message(Message::user("hi"));
        request.system[0].cache = Some(CacheHint { ttl_seconds: Some(3600) });
        let body = BedrockConverse.encode(&request).unwrap();
        assert_eq!(body["system"], json!([{"text": "sys"}, {"cachePoint": {"type": "default", "ttl": "1h"}}]));
        // The tools come before the system prompt, so their breakpoint takes its longer lifetime.
        assert_eq!(body["toolConfig"]["tools"][1], json!({"cachePoint": {"type": "default", "ttl": "1h"}}));
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [{"text": "hi"}, {"cachePoint": {"type": "default"}}]}])
        );
    }

    #[test]
    fn tool_results_and_system_updates_merge_into_one_user_turn() {
        let mut request = LlmRequest::new("m")
            .message(Message::user("hi"))
            .message(Message::assistant(vec![
                ContentPart::Reasoning {
                    text: String::new(),
                    signature: None,
                    encrypted: Some("blob".into()),
                    provider_metadata: None,
                },
                ContentPart::Reasoning {
                    text: "think".into(),
                    signature: Some("sig".into()),
                    encrypted: None,
                    provider_metadata: None,
                },
                ContentPart::text(""),
                ContentPart::ToolCall {
                    id: "c1".into(),
                    name: "t".into(),
                    input: json!({}),
                    provider_executed: false,
                    provider_metadata: None,
                },
            ]))
            .message(Message::tool_result("c1", "t", ToolResultValue::Error(json!("boom"))))
            .message(Message::system_update("note"));
        request.cache = crate::CachePolicy::Manual;
        let body = BedrockConverse.encode(&request).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"text": "hi"}]},
                {"role": "assistant", "content": [
                    {"reasoningContent": {"redactedContent": "blob"}},
                    {"reasoningContent": {"reasoningText": {"text": "think", "signature": "sig"}}},
                    {"toolUse": {"toolUseId": "c1", "name": "t", "input": {}}},
                ]},
                {"role": "user", "content": [
                    {"toolResult": {"toolUseId": "c1", "content": [{"text": "boom"}], "status": "error"}},
                    {"text": "<system-update>\nnote\n</system-update>"},
                ]},
            ])
        );
    }

    #[test]
    fn thinking_budget_is_added_to_the_output_budget() {
        let mut request = LlmRequest::new("m").message(Message::user("hi"));
        request.generation.max_tokens = Some(1000);
        request
            .options
            .set("bedrock", json!({"thinking_budget_tokens": 2000, "additional_model_request_fields": {"top_k": 5}}));
        let body = BedrockConverse.encode(&request).unwrap();
        assert_eq!(body["inferenceConfig"], json!({"maxTokens": 3000}));
        assert_eq!(
            body["additionalModelRequestFields"],
            json!({"top_k": 5, "thinking": {"type": "enabled", "budget_tokens": 2000}})
        );
        request.options.set("bedrock", json!({"thinking": true}));
        assert_eq!(BedrockConverse.encode(&request).unwrap_err().kind, ErrorKind::InvalidRequest);
    }

    #[test]
    fn documents_get_a_valid_name() {
        assert_eq!(document_name(Some("my report.v2.pdf")), "my report-v2");
        assert_eq!(document_name(None), "document");
    }

    #[test]
    fn finish_waits_for_usage_and_is_flushed_at_end_without_it() {
        let with_usage = run(vec![
            event("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"ab"}"#),
            event("messageStop", r#"{"stopReason":"max_tokens"}"#),
            event(
                "metadata",
                r#"{"usage":{"inputTokens":3,"outputTokens":1,"cacheReadInputTokens":10,"cacheWriteInputTokens":2},"metrics":{"latencyMs":7}}"#,
            ),
        ]);
        let Some(crate::LlmEvent::Finish { reason, usage, provider_metadata, .. }) = with_usage.last() else {
            panic!()
        };
        assert_eq!(*reason, FinishReason::Length);
        assert_eq!(usage.clone().unwrap(), Usage::from_exclusive(3, 10, 2, 1, 0));
        assert_eq!(provider_metadata.clone().unwrap()["bedrock"], json!({"latency_ms": 7}));

        let without = run(vec![event("messageStop", r#"{"stopReason":"end_turn"}"#)]);
        assert!(matches!(
            without.last(),
            Some(crate::LlmEvent::Finish { reason: FinishReason::Stop, usage: None, .. })
        ));
    }

    #[test]
    fn exceptions_are_classified() {
        let cases = [
            ("throttlingException", "Too many tokens, please wait.", ErrorKind::RateLimit, true),
            ("modelStreamErrorException", "model failed", ErrorKind::ProviderInternal, true),
            ("validationException", "Input is too long for requested model.", ErrorKind::ContextOverflow, false),
            ("validationException", "bad field", ErrorKind::InvalidRequest, false),
        ];
        for (kind, message, expected, retryable) in cases {
            let events = run(vec![frame(
                &[(":message-type", "exception"), (":exception-type", kind)],
                &format!(r#"{{"message":"{message}"}}"#),
            )]);
            let Some(crate::LlmEvent::Error { error }) = events.last() else { panic!("{events:?}") };
            assert_eq!(
                (error.kind, error.retryable, error.message.as_str(), error.code.as_deref()),
                (expected, retryable, message, Some(kind))
            );
        }
        let events = run(vec![frame(
            &[(":message-type", "error"), (":error-code", "InternalFailure"), (":error-message", "oops")],
            "",
        )]);
        let Some(crate::LlmEvent::Error { error }) = events.last() else { panic!("{events:?}") };
        assert_eq!((error.kind, error.message.as_str()), (ErrorKind::ProviderInternal, "oops"));
    }

    #[test]
    fn tool_input_without_a_start_is_invalid_output() {
        let events =
            run(vec![event("contentBlockDelta", r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{}"}}}"#)]);
        let Some(crate::LlmEvent::Error { error }) = events.last() else { panic!("{events:?}") };
        assert_eq!(error.kind, ErrorKind::InvalidProviderOutput);
    }
}
