//! OpenAI Chat Completions (`POST /chat/completions`), and the OpenAI-compatible dialect that
//! OpenRouter, Groq, DeepSeek, xAI, Together, Fireworks, Cerebras, DeepInfra, Ollama, LM Studio
//! and many gateways speak.
//!
//! The dialects differ in two ways: options come from the `openai` or `openai_compatible`
//! namespace, and mid-conversation system updates use the native `system` role on OpenAI but the
//! wrapped user-text fallback elsewhere (several compatible servers reject a system message after
//! the first turn).

use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::EventSink;
use super::Protocol;
use super::StreamDecoder;
use super::openai_options::OpenAiOptions;
use super::shared::ToolInputs;
use super::shared::lower_system_updates;
use super::shared::parse_payload;
use super::shared::parse_tool_input;
use super::shared::system_update_text;
use super::sink::Finish;
use crate::ContentPart;
use crate::FinishReason;
use crate::LlmError;
use crate::LlmRequest;
use crate::Message;
use crate::Role;
use crate::ToolChoice;
use crate::ToolContent;
use crate::Usage;
use crate::framing::Frame;
use crate::framing::Framing;
use crate::protocol::shared::number;

/// The Chat Completions protocol in one of its dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenAiChat {
    dialect: Dialect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    OpenAi,
    Compatible,
}

impl OpenAiChat {
    pub fn openai() -> Self {
        Self { dialect: Dialect::OpenAi }
    }

    pub fn compatible() -> Self {
        Self { dialect: Dialect::Compatible }
    }

    fn namespace(self) -> &'static str {
        match self.dialect {
            Dialect::OpenAi => "openai",
            Dialect::Compatible => "openai_compatible",
        }
    }
}

impl Protocol for OpenAiChat {
    fn id(&self) -> &'static str {
        match self.dialect {
            Dialect::OpenAi => "openai-chat",
            Dialect::Compatible => "openai-compatible-chat",
        }
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn path(&self, _request: &LlmRequest) -> String {
        "/chat/completions".to_owned()
    }

    fn encode(&self, request: &LlmRequest) -> Result<Value, LlmError> {
        let options: OpenAiOptions = request.options.get(self.namespace())?;
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(self.messages(request, &options)?));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name, "description": tool.description, "parameters": tool.input_schema,
                    }})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = &request.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
        if let Some(parallel) = options.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));

        let generation = &request.generation;
        if let Some(max) = generation.max_tokens {
            let field = if options.reasoning_effort.is_some() { "max_completion_tokens" } else { "max_tokens" };
            body.insert(field.into(), json!(max));
        }
        let floats = [
            ("temperature", generation.temperature),
            ("top_p", generation.top_p),
            ("frequency_penalty", generation.frequency_penalty),
            ("presence_penalty", generation.presence_penalty),
        ];
        for (field, value) in floats {
            if let Some(value) = value {
                body.insert(field.into(), number(value));
            }
        }
        if let Some(seed) = generation.seed {
            body.insert("seed".into(), json!(seed));
        }
        if !generation.stop.is_empty() {
            body.insert("stop".into(), json!(generation.stop));
        }
        if let Some(effort) = &options.reasoning_effort {
            body.insert("reasoning_effort".into(), json!(effort));
        }
        if let Some(key) = &options.prompt_cache_key {
            body.insert("prompt_cache_key".into(), json!(key));
        }
        if let Some(store) = options.store {
            body.insert("store".into(), json!(store));
        }
        if let Some(tier) = &options.service_tier {
            body.insert("service_tier".into(), json!(tier));
        }
        Ok(Value::Object(body))
    }

    fn decoder(&self, _request: &LlmRequest) -> Box<dyn StreamDecoder> {
        Box::new(ChatDecoder { protocol: self.id(), ..ChatDecoder::default() })
    }
}

impl OpenAiChat {
    fn messages(&self, request: &LlmRequest, options: &OpenAiOptions) -> Result<Vec<Value>, LlmError> {
        let mut out = Vec::new();
        let system_role = options.system_role.as_deref().unwrap_or("system");
        if let Some(system) = request.system_text() {
            out.push(json!({"role": system_role, "content": system}));
        }
        let lowered;
        let messages = match self.dialect {
            Dialect::OpenAi => &request.messages,
            Dialect::Compatible => {
                lowered = lower_system_updates(&request.messages)?;
                &lowered
            }
        };
        for message in messages {
            match message.role {
                Role::System => out.push(json!({"role": system_role, "content": system_update_text(message)?})),
                Role::User => out.push(json!({"role": "user", "content": user_content(&message.content)?})),
                Role::Assistant => out.push(assistant_message(message, options)),
                Role::Tool => tool_messages(message, &mut out)?,
            }
        }
        Ok(out)
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool { name } => json!({"type": "function", "function": {"name": name}}),
    }
}

/// A plain string for a single text part, typed parts otherwise.
fn user_content(parts: &[ContentPart]) -> Result<Value, LlmError> {
    if let [ContentPart::Text { text, .. }] = parts {
        return Ok(json!(text));
    }
    let mut out = Vec::new();
    for part in parts {
        match part {
            ContentPart::Text { text, .. } => out.push(json!({"type": "text", "text": text})),
            ContentPart::Media { media_type, data, filename } => {
                out.push(media_part(media_type, data, filename.as_deref()))
            }
            _ => {
                return Err(LlmError::invalid_request("a user message may contain only text and media parts"));
            }
        }
    }
    Ok(Value::Array(out))
}

fn media_part(media_type: &str, data: &crate::MediaData, filename: Option<&str>) -> Value {
    if media_type.starts_with("image/") {
        json!({"type": "image_url", "image_url": {"url": data.to_url(media_type)}})
    } else {
        json!({"type": "file", "file": {"filename": filename.unwrap_or("file"), "file_data": data.to_url(media_type)}})
    }
}

fn assistant_message(message: &Message, options: &OpenAiOptions) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut reasoning_details = Vec::new();
    let mut tool_calls = Vec::new();
    for part in &message.content {
        match part {
            ContentPart::Text { text: part, .. } => text.push_str(part),
            ContentPart::Reasoning { text: part, provider_metadata, .. } => {
                reasoning.push_str(part);
                if let Some(details) = provider_metadata
                    .as_ref()
                    .and_then(|meta| meta.get("openai_compatible"))
                    .and_then(|meta| meta.get("reasoning_details"))
                    .and_then(Value::as_array)
                {
                    reasoning_details.extend(details.iter().cloned());
                }
            }
            ContentPart::ToolCall { id, name, input, provider_executed: false, .. } => tool_calls.push(json!({
                "id": id, "type": "function", "function": {"name": name, "arguments": input.to_string()},
            })),
            _ => {}
        }
    }
    let mut out = Map::new();
    out.insert("role".into(), json!("assistant"));
    out.insert("content".into(), if text.is_empty() { Value::Null } else { json!(text) });
    if !tool_calls.is_empty() {
        out.insert("tool_calls".into(), Value::Array(tool_calls));
    }
    match options.reasoning_field.as_deref() {
        Some("reasoning_details") if !reasoning_details.is_empty() => {
            out.insert("reasoning_details".into(), Value::Array(reasoning_details));
        }
        Some(field @ ("reasoning_content" | "reasoning")) => {
            out.insert(field.into(), json!(reasoning));
        }
        _ => {}
    }
    Value::Object(out)
}

/// One `tool` message per result; media in results follows as a user message, since Chat
/// Completions tool messages carry text only.
fn tool_messages(message: &Message, out: &mut Vec<Value>) -> Result<(), LlmError> {
    let mut media = Vec::new();
    for part in &message.content {
        let ContentPart::ToolResult { id, result, .. } = part else {
            return Err(LlmError::invalid_request("a tool message may contain only tool results"));
        };
        out.push(json!({"role": "tool", "tool_call_id": id, "content": result.to_text()}));
        if let crate::ToolResultValue::Content(items) = result {
            for item in items {
                if let ToolContent::Media { media_type, data } = item {
                    media.push(media_part(media_type, data, None));
                }
            }
        }
    }
    if !media.is_empty() {
        out.push(json!({"role": "user", "content": media}));
    }
    Ok(())
}

/// Decoder state for one Chat Completions stream.
#[derive(Debug, Default)]
struct ChatDecoder {
    protocol: &'static str,
    response_id: Option<String>,
    model: Option<String>,
    text_block: Option<String>,
    reasoning_block: Option<String>,
    reasoning_details: Vec<Value>,
    blocks: u32,
    calls: ToolInputs,
    finished_call_ids: Vec<String>,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct Chunk {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<ChatUsage>,
    error: Option<Value>,
    x_groq: Option<XGroq>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    content: Option<String>,
    reasoning_content: Option<String>,
    reasoning: Option<String>,
    reasoning_details: Option<Vec<Value>>,
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    name: Option<String>,
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct XGroq {
    usage: Option<ChatUsage>,
}

#[derive(Debug, Clone, Deserialize)]
struct ChatUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    total_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek reports cache hits here.
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl ChatUsage {
    fn normalise(&self) -> Usage {
        let cache_read = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|details| details.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        let cache_write =
            self.prompt_tokens_details.as_ref().and_then(|details| details.cache_write_tokens).unwrap_or(0);
        let reasoning =
            self.completion_tokens_details.as_ref().and_then(|details| details.reasoning_tokens).unwrap_or(0);
        // Some providers (xAI) count reasoning outside `completion_tokens`; their total says so.
        let output = match self.total_tokens {
            Some(total) if total > self.prompt_tokens + self.completion_tokens => total - self.prompt_tokens,
            _ => self.completion_tokens,
        };
        Usage::from_inclusive(self.prompt_tokens, cache_read, cache_write, output, reasoning)
    }
}

impl StreamDecoder for ChatDecoder {
    fn decode(&mut self, frame: Frame, sink: &mut EventSink) -> Result<(), LlmError> {
        let Frame::Sse(event) = frame else {
            return Err(LlmError::invalid_output("Chat Completions streams are SSE"));
        };
        let data = event.data.trim();
        if data == "[DONE]" {
            return self.finish(sink);
        }
        let chunk: Chunk = parse_payload(self.protocol, data)?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.id;
        }
        if self.model.is_none() {
            self.model = chunk.model;
        }
        if let Some(usage) = chunk.usage.as_ref().or(chunk.x_groq.as_ref().and_then(|groq| groq.usage.as_ref())) {
            self.usage = Some(usage.normalise());
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta {
                self.delta(delta, sink)?;
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(finish_reason(&reason));
                self.flush_tool_calls(sink)?;
            }
        }
        Ok(())
    }

    fn end(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        // Some compatible servers close without `[DONE]`; a finish reason is enough.
        if self.finish_reason.is_some() {
            return self.finish(sink);
        }
        Ok(())
    }
}

impl ChatDecoder {
    fn delta(&mut self, delta: Delta, sink: &mut EventSink) -> Result<(), LlmError> {
        for detail in delta.reasoning_details.unwrap_or_default() {
            merge_reasoning_detail(&mut self.reasoning_details, detail);
        }
        if let Some(reasoning) = delta.reasoning_content.or(delta.reasoning).filter(|text| !text.is_empty()) {
            let id = match &self.reasoning_block {
                Some(id) => id.clone(),
                None => {
                    let id = self.next_block_id("reasoning");
                    self.reasoning_block = Some(id.clone());
                    id
                }
            };
            sink.reasoning_delta(&id, &reasoning);
        }
        if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
            self.end_reasoning(sink);
            let id = match &self.text_block {
                Some(id) => id.clone(),
                None => {
                    let id = self.next_block_id("text");
                    self.text_block = Some(id.clone());
                    id
                }
            };
            sink.text_delta(&id, &text);
        }
        for call in delta.tool_calls.unwrap_or_default() {
            self.end_reasoning(sink);
            self.tool_call_delta(call, sink);
        }
        Ok(())
    }

    fn tool_call_delta(&mut self, call: ToolCallDelta, sink: &mut EventSink) {
        let key = call.index.unwrap_or(0).to_string();
        let (name, arguments) = match call.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        if let Some(id) = &call.id {
            // Some providers re-send a finished call verbatim.
            if self.finished_call_ids.contains(id) {
                return;
            }
            let pending_id = self.calls.get_mut(&key).map(|pending| pending.id.clone());
            if pending_id.is_some_and(|pending| pending != *id) {
                // A new call reusing the index: the previous one is complete.
                if let Some(previous) = self.calls.take(&key) {
                    self.emit_call(previous.id, previous.name, previous.input, sink);
                }
            }
            let name = name.clone().unwrap_or_default();
            if self.calls.start(&key, id, &name) {
                sink.tool_input_start(id, &name);
            }
        }
        if let Some(pending) = self.calls.get_mut(&key) {
            if pending.name.is_empty()
                && let Some(name) = name
            {
                pending.name = name;
            }
            if let Some(arguments) = arguments.filter(|arguments| !arguments.is_empty()) {
                pending.input.push_str(&arguments);
                sink.tool_input_delta(&pending.id, &arguments);
            }
        }
    }

    fn flush_tool_calls(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        for call in self.calls.take_all() {
            let input = parse_tool_input(self.protocol, &call.name, &call.input)?;
            self.finished_call_ids.push(call.id.clone());
            sink.tool_call(&call.id, &call.name, input, None);
        }
        Ok(())
    }

    fn emit_call(&mut self, id: String, name: String, input: String, sink: &mut EventSink) {
        match parse_tool_input(self.protocol, &name, &input) {
            Ok(input) => sink.tool_call(&id, &name, input, None),
            Err(error) => sink.error(error),
        }
        self.finished_call_ids.push(id);
    }

    fn end_reasoning(&mut self, sink: &mut EventSink) {
        if let Some(id) = self.reasoning_block.take() {
            let metadata = (!self.reasoning_details.is_empty()).then(|| {
                let details = Value::Array(std::mem::take(&mut self.reasoning_details));
                let mut meta = Map::new();
                meta.insert("openai_compatible".into(), json!({"reasoning_details": details}));
                meta
            });
            sink.reasoning_end(&id, None, None, metadata);
        }
    }

    fn next_block_id(&mut self, kind: &str) -> String {
        let id = format!("{kind}-{}", self.blocks);
        self.blocks += 1;
        id
    }

    fn finish(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        self.flush_tool_calls(sink)?;
        self.end_reasoning(sink);
        let mut reason = self.finish_reason.unwrap_or(FinishReason::Unknown);
        if reason == FinishReason::Stop && !self.finished_call_ids.is_empty() {
            reason = FinishReason::ToolCalls;
        }
        let mut finish = Finish::new(reason);
        finish.usage = self.usage.take();
        finish.response_id = self.response_id.take();
        finish.model = self.model.take();
        sink.finish(finish);
        Ok(())
    }
}

/// OpenRouter streams `reasoning_details` as fragments of one entry per `index`; they are echoed
/// back whole, so fragments of the same entry are joined (text appended, signature kept).
fn merge_reasoning_detail(details: &mut Vec<Value>, detail: Value) {
    let same_entry = details.last().is_some_and(|last| {
        last.get("index") == detail.get("index")
            && last.get("type") == detail.get("type")
            && detail.get("index").is_some()
    });
    match details.last_mut().and_then(Value::as_object_mut) {
        Some(last) if same_entry => {
            for (key, value) in detail.as_object().into_iter().flatten() {
                match (key.as_str(), value) {
                    ("text", Value::String(more)) => {
                        let text = last.entry("text").or_insert_with(|| json!(""));
                        if let Value::String(text) = text {
                            text.push_str(more);
                        }
                    }
                    (_, Value::String(empty)) if empty.is_empty() => {}
                    _ => {
                        last.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        _ => details.push(detail),
    }
}

fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Unknown,
    }
}

/// An `error` object inside a 200 stream (OpenAI, OpenRouter).
fn stream_error(error: &Value) -> LlmError {
    let message = error.get("message").and_then(Value::as_str).or(error.as_str()).unwrap_or("unknown stream error");
    match error.get("code") {
        Some(Value::Number(code)) if code.as_u64().is_some_and(|code| (400..600).contains(&code)) => {
            let status = code.as_u64().unwrap_or(500) as u16;
            let body = json!({"error": error}).to_string();
            crate::classify_http(status, &[], body.as_bytes())
        }
        code => {
            let code = code.and_then(Value::as_str).or_else(|| error.get("type").and_then(Value::as_str));
            crate::classify_stream_error(code, message)
        }
    }
}
