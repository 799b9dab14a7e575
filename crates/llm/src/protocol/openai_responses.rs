//! OpenAI Responses API (`POST /responses`), as served by OpenAI, Azure OpenAI (v1 API), GitHub
//! Copilot and the ChatGPT Codex backend.
//!
//! Requests are encoded statelessly: the whole conversation goes into `input` on every turn.
//! Reasoning is replayed as a `reasoning` item carrying its `encrypted_content` when `store` is
//! `false` (ask for it with `include: ["reasoning.encrypted_content"]`), and as an
//! `item_reference` to the stored item otherwise. Mid-conversation system updates keep their
//! native `system` role at their chronological position.
//!
//! The decoder keys output items by `output_index`, never by `item_id`: GitHub Copilot gives every
//! event of the same item a fresh id. Usage arrives only with the terminal
//! `response.completed` / `response.incomplete`; `error` and `response.failed` end the stream with a
//! classified error.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::EventSink;
use super::Protocol;
use super::StreamDecoder;
use super::openai_options::OpenAiOptions;
use super::shared::number;
use super::shared::parse_tool_input;
use super::shared::system_update_text;
use super::sink::Finish;
use crate::ContentPart;
use crate::ErrorKind;
use crate::FinishReason;
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

/// The options namespace, and the provider-metadata namespace of reasoning parts.
const NAMESPACE: &str = "openai";

const PROTOCOL: &str = "openai-responses";

/// The OpenAI Responses protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenAiResponses;

impl Protocol for OpenAiResponses {
    fn id(&self) -> &'static str {
        PROTOCOL
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn path(&self, _request: &LlmRequest) -> String {
        "/responses".to_owned()
    }

    /// Generation controls the Responses API has no field for (`top_k`, penalties, `seed`,
    /// `stop`) are left out.
    fn encode(&self, request: &LlmRequest) -> Result<Value, LlmError> {
        let options: OpenAiOptions = request.options.get(NAMESPACE)?;
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        let mut input = Vec::new();
        if let Some(system) = request.system_text() {
            if options.system_as_instructions == Some(true) {
                body.insert("instructions".into(), json!(system));
            } else {
                input.push(json!({"role": "system", "content": system}));
            }
        }
        let replay = Replay::for_options(&options);
        for message in &request.messages {
            input_items(message, replay, &mut input)?;
        }
        body.insert("input".into(), Value::Array(input));
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function", "name": tool.name, "description": tool.description,
                        "parameters": tool.input_schema, "strict": false,
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = &request.tool_choice {
            body.insert("tool_choice".into(), tool_choice(choice));
        }
        insert_options(&options, &mut body);

        let generation = &request.generation;
        if let Some(max) = generation.max_tokens {
            body.insert("max_output_tokens".into(), json!(max));
        }
        if let Some(temperature) = generation.temperature {
            body.insert("temperature".into(), number(temperature));
        }
        if let Some(top_p) = generation.top_p {
            body.insert("top_p".into(), number(top_p));
        }
        body.insert("stream".into(), json!(true));
        Ok(Value::Object(body))
    }

    fn decoder(&self, _request: &LlmRequest) -> Box<dyn StreamDecoder> {
        Box::new(ResponsesDecoder::default())
    }
}

fn insert_options(options: &OpenAiOptions, body: &mut Map<String, Value>) {
    if let Some(parallel) = options.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }
    if let Some(store) = options.store {
        body.insert("store".into(), json!(store));
    }
    if let Some(tier) = &options.service_tier {
        body.insert("service_tier".into(), json!(tier));
    }
    if let Some(key) = &options.prompt_cache_key {
        body.insert("prompt_cache_key".into(), json!(key));
    }
    if !options.include.is_empty() {
        body.insert("include".into(), json!(options.include));
    }
    let mut reasoning = Map::new();
    if let Some(effort) = &options.reasoning_effort {
        reasoning.insert("effort".into(), json!(effort));
    }
    if let Some(summary) = &options.reasoning_summary {
        reasoning.insert("summary".into(), json!(summary));
    }
    if !reasoning.is_empty() {
        body.insert("reasoning".into(), Value::Object(reasoning));
    }
    if let Some(verbosity) = &options.text_verbosity {
        body.insert("text".into(), json!({"verbosity": verbosity}));
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool { name } => json!({"type": "function", "name": name}),
    }
}

/// How reasoning from earlier turns goes back to the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replay {
    /// `store: false`: the provider kept nothing, so the encrypted content is sent back.
    Stateless,
    /// The provider stored the items: refer to them by id.
    Stored,
}

impl Replay {
    fn for_options(options: &OpenAiOptions) -> Self {
        if options.store == Some(false) { Self::Stateless } else { Self::Stored }
    }
}

/// Appends the input items of one message.
fn input_items(message: &Message, replay: Replay, out: &mut Vec<Value>) -> Result<(), LlmError> {
    match message.role {
        Role::System => {
            out.push(json!({"role": "system", "content": system_update_text(message)?}));
        }
        Role::User => out.push(json!({"role": "user", "content": user_content(&message.content)?})),
        Role::Assistant => assistant_items(&message.content, replay, out)?,
        Role::Tool => tool_outputs(&message.content, out)?,
    }
    Ok(())
}

fn user_content(parts: &[ContentPart]) -> Result<Vec<Value>, LlmError> {
    parts
        .iter()
        .map(|part| match part {
            ContentPart::Text { text, .. } => Ok(json!({"type": "input_text", "text": text})),
            ContentPart::Media { media_type, data, filename } => Ok(media_part(media_type, data, filename.as_deref())),
            _ => Err(LlmError::invalid_request("a user message may contain only text and media parts")),
        })
        .collect()
}

fn media_part(media_type: &str, data: &MediaData, filename: Option<&str>) -> Value {
    if media_type.starts_with("image/") {
        return json!({"type": "input_image", "image_url": data.to_url(media_type)});
    }
    match data {
        MediaData::Url(url) => json!({"type": "input_file", "file_url": url}),
        MediaData::Base64(_) => json!({
            "type": "input_file", "filename": filename.unwrap_or("file"), "file_data": data.to_url(media_type),
        }),
    }
}

/// Assistant parts become items in order: consecutive text parts share one assistant message,
/// reasoning and tool calls are items of their own. Provider-executed tool history is not
/// replayed.
fn assistant_items(parts: &[ContentPart], replay: Replay, out: &mut Vec<Value>) -> Result<(), LlmError> {
    let mut texts = Vec::new();
    for part in parts {
        match part {
            ContentPart::Text { text, .. } => {
                if !text.is_empty() {
                    texts.push(json!({"type": "output_text", "text": text}));
                }
            }
            ContentPart::Reasoning { text, encrypted, provider_metadata, .. } => {
                flush_assistant_text(&mut texts, out);
                if let Some(item) = reasoning_item(text, encrypted.as_deref(), provider_metadata.as_ref(), replay) {
                    out.push(item);
                }
            }
            ContentPart::ToolCall { id, name, input, provider_executed: false, .. } => {
                flush_assistant_text(&mut texts, out);
                out.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": input.to_string()}));
            }
            ContentPart::ToolCall { .. } | ContentPart::ToolResult { .. } => {}
            ContentPart::Media { .. } => {
                return Err(LlmError::invalid_request("an assistant message may not contain media parts"));
            }
        }
    }
    flush_assistant_text(&mut texts, out);
    Ok(())
}

fn flush_assistant_text(texts: &mut Vec<Value>, out: &mut Vec<Value>) {
    if !texts.is_empty() {
        out.push(json!({"role": "assistant", "content": std::mem::take(texts)}));
    }
}

/// The replay item of a reasoning part, or `None` when it cannot be replayed (reasoning from
/// another provider, or stateless replay without encrypted content).
fn reasoning_item(
    text: &str,
    encrypted: Option<&str>,
    metadata: Option<&ProviderMetadata>,
    replay: Replay,
) -> Option<Value> {
    let openai = metadata.and_then(|metadata| metadata.get(NAMESPACE));
    let item_id = openai.and_then(|openai| openai.get("item_id")).and_then(Value::as_str);
    match (replay, item_id, encrypted) {
        (Replay::Stored, Some(id), _) => Some(json!({"type": "item_reference", "id": id})),
        (_, _, Some(encrypted)) => Some(json!({
            "type": "reasoning", "summary": summary_parts(text, openai), "encrypted_content": encrypted,
        })),
        _ => None,
    }
}

/// The summary parts as received when there were several, else the reasoning text as one part.
fn summary_parts(text: &str, openai: Option<&Value>) -> Value {
    let texts: Vec<&str> = match openai.and_then(|openai| openai.get("summary")).and_then(Value::as_array) {
        Some(parts) => parts.iter().filter_map(Value::as_str).collect(),
        None if text.is_empty() => Vec::new(),
        None => vec![text],
    };
    texts.iter().map(|text| json!({"type": "summary_text", "text": text})).collect()
}

fn tool_outputs(parts: &[ContentPart], out: &mut Vec<Value>) -> Result<(), LlmError> {
    for part in parts {
        let ContentPart::ToolResult { id, result, provider_executed, .. } = part else {
            return Err(LlmError::invalid_request("a tool message may contain only tool results"));
        };
        if !provider_executed {
            out.push(json!({"type": "function_call_output", "call_id": id, "output": tool_output(result)}));
        }
    }
    Ok(())
}

/// Rich results keep their media as input parts; everything else is sent as text.
fn tool_output(result: &ToolResultValue) -> Value {
    let ToolResultValue::Content(items) = result else {
        return json!(result.to_text());
    };
    items
        .iter()
        .map(|item| match item {
            ToolContent::Text { text } => json!({"type": "input_text", "text": text}),
            ToolContent::Media { media_type, data } => media_part(media_type, data, None),
        })
        .collect()
}

/// Decoder state for one Responses stream.
#[derive(Debug, Default)]
struct ResponsesDecoder {
    response_id: Option<String>,
    model: Option<String>,
    /// Output items by `output_index`.
    items: Vec<(u32, Item)>,
    saw_function_call: bool,
}

#[derive(Debug)]
enum Item {
    Message {
        block: String,
    },
    Reasoning {
        block: String,
        /// Encrypted content announced when the item was added; the one at `output_item.done` wins.
        encrypted: Option<String>,
        summary: Vec<String>,
        streamed: bool,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
        done: bool,
    },
    /// Hosted tools and anything else this client does not surface.
    Other,
}

/// One stream event. Every event type shares this shape; fields an event lacks stay `None`.
#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    output_index: Option<u32>,
    summary_index: Option<u32>,
    #[serde(borrow)]
    delta: Option<Cow<'a, str>>,
    arguments: Option<String>,
    item: Option<OutputItem>,
    response: Option<ResponseObject>,
    /// The `error` event nests its payload here in live traffic…
    error: Option<ErrorObject>,
    /// …while the published spec puts `code` and `message` at the top level.
    code: Option<Value>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct OutputItem {
    #[serde(rename = "type")]
    kind: String,
    id: Option<String>,
    call_id: Option<String>,
    name: Option<String>,
    arguments: Option<String>,
    encrypted_content: Option<String>,
    #[serde(default, deserialize_with = "text_parts")]
    summary: Option<Vec<TextPart>>,
    #[serde(default, deserialize_with = "text_parts")]
    content: Option<Vec<TextPart>>,
}

/// Items of types this client does not surface may shape `content` differently; that must not
/// fail the stream.
fn text_parts<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<TextPart>>, D::Error> {
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(value.and_then(|value| serde_json::from_value(value).ok()))
}

/// A summary part, a message content part or a raw reasoning part.
#[derive(Debug, Deserialize)]
struct TextPart {
    #[serde(rename = "type", default)]
    kind: String,
    text: Option<String>,
    refusal: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ResponseObject {
    id: Option<String>,
    model: Option<String>,
    service_tier: Option<String>,
    usage: Option<ResponseUsage>,
    incomplete_details: Option<IncompleteDetails>,
    error: Option<ErrorObject>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails {
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ErrorObject {
    #[serde(rename = "type")]
    kind: Option<String>,
    code: Option<Value>,
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ResponseUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    input_tokens_details: Option<InputDetails>,
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Debug, Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

impl ResponseUsage {
    /// `input_tokens` includes cached tokens and `output_tokens` includes reasoning.
    fn normalise(&self) -> Usage {
        let details = self.input_tokens_details.as_ref();
        let cache_read = details.and_then(|details| details.cached_tokens).unwrap_or(0);
        let cache_write = details.and_then(|details| details.cache_write_tokens).unwrap_or(0);
        let reasoning = self.output_tokens_details.as_ref().and_then(|details| details.reasoning_tokens).unwrap_or(0);
        Usage::from_inclusive(self.input_tokens, cache_read, cache_write, self.output_tokens, reasoning)
    }
}

impl StreamDecoder for ResponsesDecoder {
    fn decode(&mut self, frame: Frame, sink: &mut EventSink) -> Result<(), LlmError> {
        let Frame::Sse(event) = frame else {
            return Err(LlmError::invalid_output("Responses streams are SSE"));
        };
        let data = event.data.trim();
        // Some compatible servers end with a Chat Completions style terminator.
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let event: Event<'_> = serde_json::from_str(data).map_err(|err| {
            let snippet: String = data.chars().take(200).collect();
            LlmError::invalid_output(format!("invalid {PROTOCOL} stream event ({err}): {snippet}"))
        })?;
        let index = event.output_index.unwrap_or(0);
        match event.kind.as_ref() {
            "response.output_text.delta" | "response.refusal.delta" => {
                if let Some(delta) = &event.delta {
                    self.text_delta(index, delta, sink);
                }
            }
            "response.reasoning_summary_part.added" => {
                self.summary_delta(index, event.summary_index.unwrap_or(0), "", sink);
            }
            "response.reasoning_summary_text.delta" => {
                let delta = event.delta.as_deref().unwrap_or("");
                self.summary_delta(index, event.summary_index.unwrap_or(0), delta, sink);
            }
            "response.reasoning_text.delta" => {
                if let Some(delta) = &event.delta {
                    self.reasoning_delta(index, delta, sink);
                }
            }
            "response.function_call_arguments.delta" => {
                if let Some(delta) = &event.delta {
                    self.arguments_delta(index, delta, sink);
                }
            }
            "response.function_call_arguments.done" => {
                if let (Some(arguments), Some(Item::FunctionCall { arguments: current, .. })) =
                    (event.arguments, self.item_mut(index))
                {
                    *current = arguments;
                }
            }
            "response.output_item.added" => {
                if let Some(item) = event.item {
                    self.item_added(index, item, sink);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.item_done(index, item, sink)?;
                }
            }
            "response.created" | "response.in_progress" | "response.queued" => {
                if let Some(response) = event.response {
                    self.remember(&response);
                }
            }
            "response.completed" | "response.incomplete" => self.finish(event.response, sink)?,
            "response.failed" => return Err(failed_error(event.response)),
            "error" => return Err(stream_error(event.error, event.code, event.message)),
            _ => {}
        }
        Ok(())
    }

    fn end(&mut self, sink: &mut EventSink) -> Result<(), LlmError> {
        if sink.is_terminal() {
            return Ok(());
        }
        Err(LlmError::new(
            ErrorKind::Transport,
            "the Responses stream ended without `response.completed`, `response.incomplete` or `response.failed`",
        ))
    }
}

impl ResponsesDecoder {
    fn item_mut(&mut self, index: u32) -> Option<&mut Item> {
        self.items.iter_mut().find(|(at, _)| *at == index).map(|(_, item)| item)
    }

    fn insert(&mut self, index: u32, item: Item) -> &mut Item {
        self.items.retain(|(at, _)| *at != index);
        self.items.push((index, item));
        let last = self.items.len() - 1;
        &mut self.items[last].1
    }

    fn remember(&mut self, response: &ResponseObject) {
        if let Some(id) = &response.id {
            self.response_id = Some(id.clone());
        }
        if let Some(model) = &response.model {
            self.model = Some(model.clone());
        }
    }

    /// The item at `index` when `is_kind` accepts it, else a fresh one from `make`: deltas may
    /// arrive without `output_item.added`.
    fn item_or_insert(&mut self, index: u32, is_kind: fn(&Item) -> bool, make: impl FnOnce() -> Item) -> &mut Item {
        match self.items.iter().position(|(at, item)| *at == index && is_kind(item)) {
            Some(at) => &mut self.items[at].1,
            None => self.insert(index, make()),
        }
    }

    fn message(&mut self, index: u32) -> &mut Item {
        self.item_or_insert(index, |item| matches!(item, Item::Message { .. }), || message_item_state(index))
    }

    fn reasoning(&mut self, index: u32) -> &mut Item {
        self.item_or_insert(index, |item| matches!(item, Item::Reasoning { .. }), || reasoning_item_state(index, None))
    }

    fn text_delta(&mut self, index: u32, delta: &str, sink: &mut EventSink) {
        if let Item::Message { block } = self.message(index) {
            sink.text_delta(block, delta);
        }
    }

    /// A summary delta for part `summary_index`. Parts are separated by a blank line in the
    /// reasoning text and kept apart in metadata for replay.
    fn summary_delta(&mut self, index: u32, summary_index: u32, delta: &str, sink: &mut EventSink) {
        let Item::Reasoning { block, summary, streamed, .. } = self.reasoning(index) else {
            return;
        };
        let part = summary_index as usize;
        while summary.len() <= part {
            if !summary.is_empty() {
                sink.reasoning_delta(block, "\n\n");
            }
            summary.push(String::new());
        }
        summary[part].push_str(delta);
        *streamed |= !delta.is_empty();
        sink.reasoning_delta(block, delta);
    }

    fn reasoning_delta(&mut self, index: u32, delta: &str, sink: &mut EventSink) {
        if let Item::Reasoning { block, streamed, .. } = self.reasoning(index) {
            *streamed = true;
            sink.reasoning_delta(block, delta);
        }
    }

    fn arguments_delta(&mut self, index: u32, delta: &str, sink: &mut EventSink) {
        if let Some(Item::FunctionCall { call_id, arguments, .. }) = self.item_mut(index) {
            arguments.push_str(delta);
            sink.tool_input_delta(call_id, delta);
        }
    }

    fn item_added(&mut self, index: u32, item: OutputItem, sink: &mut EventSink) {
        match item.kind.as_str() {
            "message" => {
                self.insert(index, message_item_state(index));
            }
            "reasoning" => {
                let state = self.insert(index, reasoning_item_state(index, item.encrypted_content));
                // Open the block now so that reasoning keeps its place before later items.
                if let Item::Reasoning { block, .. } = state {
                    sink.reasoning_delta(block, "");
                }
            }
            "function_call" => {
                let call_id = item.call_id.or(item.id).unwrap_or_else(|| format!("call-{index}"));
                let name = item.name.unwrap_or_default();
                sink.tool_input_start(&call_id, &name);
                let arguments = item.arguments.unwrap_or_default();
                self.insert(index, Item::FunctionCall { call_id, name, arguments, done: false });
            }
            _ => {
                self.insert(index, Item::Other);
            }
        }
    }

    fn item_done(&mut self, index: u32, item: OutputItem, sink: &mut EventSink) -> Result<(), LlmError> {
        match item.kind.as_str() {
            "message" => self.message_done(index, &item, sink),
            "reasoning" => self.reasoning_done(index, item, sink),
            "function_call" => self.function_call_done(index, item, sink)?,
            _ => {}
        }
        Ok(())
    }

    fn message_done(&mut self, index: u32, item: &OutputItem, sink: &mut EventSink) {
        let Item::Message { block } = self.message(index) else {
            return;
        };
        if !sink.is_text_open(block) {
            // Nothing was streamed: take the text from the finished item.
            let text: String = item
                .content
                .iter()
                .flatten()
                .filter_map(|part| part.text.as_deref().or(part.refusal.as_deref()))
                .collect();
            if !text.is_empty() {
                sink.text_delta(block, &text);
            }
        }
        if sink.is_text_open(block) {
            sink.text_end(block, None);
        }
    }

    fn reasoning_done(&mut self, index: u32, item: OutputItem, sink: &mut EventSink) {
        if !matches!(self.item_mut(index), Some(Item::Reasoning { streamed: true, .. })) {
            // Nothing was streamed: take the summary (or raw reasoning) from the finished item.
            let summary: Vec<&TextPart> = item.summary.iter().flatten().collect();
            for (at, part) in summary.iter().enumerate() {
                self.summary_delta(index, at as u32, part.text.as_deref().unwrap_or(""), sink);
            }
            if summary.is_empty() {
                let raw: String = item
                    .content
                    .iter()
                    .flatten()
                    .filter(|part| part.kind == "reasoning_text")
                    .filter_map(|part| part.text.as_deref())
                    .collect();
                if !raw.is_empty() {
                    self.reasoning_delta(index, &raw, sink);
                }
            }
        }
        let Item::Reasoning { block, encrypted, summary, .. } = self.reasoning(index) else {
            return;
        };
        let mut openai = Map::new();
        if let Some(id) = item.id {
            openai.insert("item_id".into(), json!(id));
        }
        if summary.len() > 1 {
            openai.insert("summary".into(), json!(summary));
        }
        let metadata = (!openai.is_empty()).then(|| {
            let mut metadata = ProviderMetadata::new();
            metadata.insert(NAMESPACE.into(), Value::Object(openai));
            metadata
        });
        let encrypted = item.encrypted_content.or_else(|| encrypted.take());
        sink.reasoning_end(block, None, encrypted, metadata);
        self.insert(index, Item::Other);
    }

    fn function_call_done(&mut self, index: u32, item: OutputItem, sink: &mut EventSink) -> Result<(), LlmError> {
        let (mut call_id, mut name, mut arguments) = match self.item_mut(index) {
            Some(Item::FunctionCall { call_id, name, arguments, done: false }) => {
                (std::mem::take(call_id), std::mem::take(name), std::mem::take(arguments))
            }
            Some(Item::FunctionCall { done: true, .. }) => return Ok(()),
            _ => (String::new(), String::new(), String::new()),
        };
        // The finished item is authoritative.
        if let Some(id) = item.call_id {
            call_id = id;
        } else if call_id.is_empty() {
            call_id = item.id.unwrap_or_else(|| format!("call-{index}"));
        }
        if let Some(item_name) = item.name {
            name = item_name;
        }
        if let Some(item_arguments) = item.arguments {
            arguments = item_arguments;
        }
        self.emit_call(&call_id, &name, &arguments, sink)?;
        self.insert(index, Item::FunctionCall { call_id, name, arguments, done: true });
        Ok(())
    }

    fn emit_call(&mut self, call_id: &str, name: &str, arguments: &str, sink: &mut EventSink) -> Result<(), LlmError> {
        let input = parse_tool_input(PROTOCOL, name, arguments)?;
        self.saw_function_call = true;
        sink.tool_call(call_id, name, input, None);
        Ok(())
    }

    /// `response.completed` or `response.incomplete`: emits calls whose item never finished, then
    /// the finish with usage.
    fn finish(&mut self, response: Option<ResponseObject>, sink: &mut EventSink) -> Result<(), LlmError> {
        let pending: Vec<(String, String, String)> = self
            .items
            .iter_mut()
            .filter_map(|(_, item)| match item {
                Item::FunctionCall { call_id, name, arguments, done: false } => {
                    Some((call_id.clone(), name.clone(), std::mem::take(arguments)))
                }
                _ => None,
            })
            .collect();
        for (call_id, name, arguments) in pending {
            self.emit_call(&call_id, &name, &arguments, sink)?;
        }
        if let Some(response) = &response {
            self.remember(response);
        }
        let incomplete = response.as_ref().and_then(|response| response.incomplete_details.as_ref());
        let reason = match incomplete.map(|details| details.reason.as_deref()) {
            Some(Some("max_output_tokens")) => FinishReason::Length,
            Some(Some("content_filter")) => FinishReason::ContentFilter,
            Some(_) => FinishReason::Unknown,
            None if self.saw_function_call => FinishReason::ToolCalls,
            None => FinishReason::Stop,
        };
        let mut finish = Finish::new(reason);
        finish.usage = response.as_ref().and_then(|response| response.usage.as_ref()).map(ResponseUsage::normalise);
        finish.response_id = self.response_id.take();
        finish.model = self.model.take();
        if let Some(tier) = response.and_then(|response| response.service_tier) {
            let mut metadata = ProviderMetadata::new();
            metadata.insert(NAMESPACE.into(), json!({"service_tier": tier}));
            finish.provider_metadata = Some(metadata);
        }
        sink.finish(finish);
        Ok(())
    }
}

fn message_item_state(index: u32) -> Item {
    Item::Message { block: format!("text-{index}") }
}

fn reasoning_item_state(index: u32, encrypted: Option<String>) -> Item {
    Item::Reasoning { block: format!("reasoning-{index}"), encrypted, summary: Vec::new(), streamed: false }
}

/// An `error` event, in either the nested (live) or the top-level (spec) shape.
fn stream_error(nested: Option<ErrorObject>, code: Option<Value>, message: Option<String>) -> LlmError {
    let (code, message) = match nested {
        Some(error) => (error_code(error.code.as_ref()).or(error.kind), error.message.or(message)),
        None => (error_code(code.as_ref()), message),
    };
    classify(code, message)
}

/// `response.failed`: the reason is in `response.error`.
fn failed_error(response: Option<ResponseObject>) -> LlmError {
    match response.and_then(|response| response.error) {
        Some(error) => classify(error_code(error.code.as_ref()).or(error.kind), error.message),
        None => classify(None, None),
    }
}

fn classify(code: Option<String>, message: Option<String>) -> LlmError {
    let message = message.unwrap_or_else(|| "the provider reported the response as failed".to_owned());
    crate::classify_stream_error(code.as_deref(), &message)
}

fn error_code(code: Option<&Value>) -> Option<String> {
    match code? {
        Value::String(code) if !code.is_empty() => Some(code.clone()),
        Value::Number(code) => Some(code.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::LlmEvent;

    fn request(value: Value) -> LlmRequest {
        serde_json::from_value(value).unwrap()
    }

    fn decode(lines: &[Value]) -> Vec<LlmEvent> {
        crate::protocol::decode_json_frames(&mut ResponsesDecoder::default(), lines)
    }

    fn error_of(events: &[LlmEvent]) -> LlmError {
        match events.last() {
            Some(LlmEvent::Error { error }) => error.clone(),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn system_updates_keep_their_native_role_and_place() {
        let body = OpenAiResponses
            .encode(&request(json!({
                "model": "m",
                "system": [{"text": "a"}, {"text": "b"}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "system", "content": [{"type": "text", "text": "now terse"}]},
                    {"role": "user", "content": [{"type": "text", "text": "go"}]}
                ]
            })))
            .unwrap();
        assert_eq!(
            body["input"],
            json!([
                {"role": "system", "content": "a\nb"},
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"role": "system", "content": "now terse"},
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]}
            ])
        );
    }

    #[test]
    fn baseline_system_can_go_into_instructions() {
        let body = OpenAiResponses
            .encode(&request(json!({
                "model": "m",
                "system": [{"text": "be brief"}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                "options": {"openai": {"system_as_instructions": true}}
            })))
            .unwrap();
        assert_eq!(body["instructions"], json!("be brief"));
        assert_eq!(body["input"], json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]));
    }

    #[test]
    fn unknown_options_are_rejected() {
        let error = OpenAiResponses
            .encode(&request(json!({"model": "m", "options": {"openai": {"reasoningEffort": "high"}}})))
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidRequest);
    }

    #[test]
    fn reasoning_replays_encrypted_when_stateless_and_by_reference_when_stored() {
        let assistant = json!({"role": "assistant", "content": [
            {"type": "reasoning", "text": "one\n\ntwo", "encrypted": "gAAA",
             "provider_metadata": {"openai": {"item_id": "rs_1", "summary": ["one", "two"]}}},
            {"type": "reasoning", "text": "thinking", "signature": "anthropic-only"},
            {"type": "text", "text": "Hi"},
            {"type": "tool-call", "id": "call_1", "name": "read", "input": {"path": "a"}}
        ]});
        let stateless = OpenAiResponses
            .encode(&request(json!({"model": "m", "messages": [assistant], "options": {"openai": {"store": false}}})))
            .unwrap();
        assert_eq!(
            stateless["input"],
            json!([
                {"type": "reasoning", "encrypted_content": "gAAA", "summary": [
                    {"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}]},
                {"role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]},
                {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}"}
            ])
        );
        let stored = OpenAiResponses.encode(&request(json!({"model": "m", "messages": [assistant]}))).unwrap();
        assert_eq!(stored["input"][0], json!({"type": "item_reference", "id": "rs_1"}));
        assert_eq!(stored["input"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn summary_parts_are_joined_and_kept_for_replay() {
        let events = decode(&[
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "one"}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 1}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 1, "delta": "two"}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA", "summary": []}}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {"input_tokens": 5, "output_tokens": 3}}}),
        ]);
        let response = crate::LlmResponse::from_events(&events);
        assert_eq!(
            response.message.content,
            vec![ContentPart::Reasoning {
                text: "one\n\ntwo".into(),
                signature: None,
                encrypted: Some("gAAA".into()),
                provider_metadata: Some(
                    json!({"openai": {"item_id": "rs_1", "summary": ["one", "two"]}}).as_object().unwrap().clone()
                ),
            }]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::Stop));
        assert_eq!(response.response_id.as_deref(), Some("resp_1"));
    }

    #[test]
    fn finished_items_without_deltas_still_produce_text_and_calls() {
        let events = decode(&[
            json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-x"}}),
            json!({"type": "response.output_item.done", "output_index": 0, "item": {
                "type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "Hi"}]}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {
                "type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.done", "output_index": 1, "arguments": "{\"path\":\"a\"}"}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "incomplete_details": null}}),
            json!({"type": "ping"}),
        ]);
        let response = crate::LlmResponse::from_events(&events);
        assert_eq!(response.text(), "Hi");
        assert_eq!(
            response.tool_calls(),
            vec![crate::ToolCall { id: "call_1".into(), name: "read".into(), input: json!({"path": "a"}) }]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(response.model.as_deref(), Some("gpt-x"));
    }

    #[test]
    fn nested_error_without_code_uses_its_type() {
        let events = decode(&[json!({
            "type": "error", "sequence_number": 2,
            "error": {"type": "rate_limit_exceeded", "code": null, "message": "Slow down", "param": null}
        })]);
        let error = error_of(&events);
        assert_eq!((error.kind, error.retryable), (ErrorKind::RateLimit, true));
        assert_eq!(error.code.as_deref(), Some("rate_limit_exceeded"));
        assert_eq!(error.message, "Slow down");
    }

    #[test]
    fn unsurfaced_item_shapes_do_not_fail_the_stream() {
        let events = decode(&[
            json!({"type": "response.output_item.done", "output_index": 0, "item": {
                "type": "mcp_call", "id": "mcp_1", "content": "plain text", "summary": {"odd": true}}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "delta": "ok"}),
            json!({"type": "response.completed", "response": {}}),
        ]);
        let response = crate::LlmResponse::from_events(&events);
        assert_eq!((response.text().as_str(), response.error), ("ok", None));
    }

    #[test]
    fn incomplete_for_max_output_tokens_is_length() {
        let events = decode(&[
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"}),
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        ]);
        let response = crate::LlmResponse::from_events(&events);
        assert_eq!((response.text().as_str(), response.finish_reason), ("Hel", Some(FinishReason::Length)));
    }

    #[test]
    fn top_level_error_shape_is_classified() {
        let events = decode(&[json!({
            "type": "error", "code": "context_length_exceeded",
            "message": "Your input exceeds the context window of this model.", "param": null
        })]);
        let error = error_of(&events);
        assert_eq!((error.kind, error.retryable), (ErrorKind::ContextOverflow, false));
        assert_eq!(error.code.as_deref(), Some("context_length_exceeded"));
    }

    #[test]
    fn failed_response_with_server_error_is_retryable() {
        let events = decode(&[json!({
            "type": "response.failed",
            "response": {"status": "failed", "error": {"code": "server_error", "message": "An error occurred."}}
        })]);
        let error = error_of(&events);
        assert_eq!((error.kind, error.retryable), (ErrorKind::ProviderInternal, true));
    }

    #[test]
    fn stream_without_terminal_event_is_an_error() {
        let events = decode(&[json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hi"})]);
        assert_eq!(error_of(&events).kind, ErrorKind::Transport);
    }
}
