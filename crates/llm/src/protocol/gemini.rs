//! Google Gemini API `streamGenerateContent` over SSE (`POST /models/{model}:streamGenerateContent?alt=sse`).
//!
//! Every SSE event is a whole `GenerateContentResponse` holding the next parts of candidate 0:
//! text and thought deltas, function calls (whole, or assembled from Vertex `partialArgs`), and a
//! cumulative `usageMetadata`. There is no terminator event: the response ends at the chunk
//! carrying `finishReason`.
//!
//! Gemini ties opaque `thoughtSignature`s to the part they came on, and rejects a later turn whose
//! function calls lost theirs. Every signature is therefore kept on its canonical part as
//! `provider_metadata.google.thought_signature` and sent back on the same part.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use super::EventSink;
use super::Protocol;
use super::StreamDecoder;
use super::shared::number;
use super::shared::parse_payload;
use super::shared::system_update_text;
use super::shared::wrap_system_update;
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
use crate::ToolDefinition;
use crate::ToolResultValue;
use crate::Usage;
use crate::framing::Frame;
use crate::framing::Framing;

/// The options namespace, and the provider-metadata namespace of parts and events.
const NAMESPACE: &str = "google";
const PROTOCOL: &str = "gemini";

/// Documented stand-in for a lost thought signature: Gemini 3 rejects a function call without
/// one (for example history written by another provider) unless it carries this value.
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// The Gemini `streamGenerateContent` protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gemini;

/// Options read from the `google` namespace.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoogleOptions {
    /// Thinking token budget (Gemini 2.5): `0` turns thinking off, `-1` lets the model decide.
    pub thinking_budget: Option<i64>,
    /// Thinking level (Gemini 3): `minimal`, `low`, `medium` or `high`.
    pub thinking_level: Option<String>,
    /// Stream thought summaries as reasoning.
    pub include_thoughts: Option<bool>,
    /// An explicit context cache (`cachedContents/...`).
    pub cached_content: Option<String>,
    /// `safetySettings` entries, sent as given.
    pub safety_settings: Option<Vec<Value>>,
    /// `responseModalities`, for example `["TEXT", "IMAGE"]` on image-output models.
    pub response_modalities: Option<Vec<String>>,
    /// Send tool input schemas unchanged as `parametersJsonSchema` instead of projecting them onto
    /// the OpenAPI subset accepted by `parameters` (the default, as the TypeScript client does).
    pub parameters_json_schema: Option<bool>,
}

impl Protocol for Gemini {
    fn id(&self) -> &'static str {
        PROTOCOL
    }

    fn framing(&self) -> Framing {
        Framing::Sse
    }

    fn path(&self, request: &LlmRequest) -> String {
        // Accept both `gemini-2.5-flash` and the resource form `models/gemini-2.5-flash`.
        let model = request.model.strip_prefix("models/").unwrap_or(&request.model);
        format!("/models/{model}:streamGenerateContent?alt=sse")
    }

    fn encode(&self, request: &LlmRequest) -> Result<Value, LlmError> {
        let options: GoogleOptions = request.options.get(NAMESPACE)?;
        let mut body = Map::new();
        body.insert("contents".into(), Value::Array(contents(request)?));
        if let Some(system) = request.system_text() {
            body.insert("systemInstruction".into(), json!({"parts": [{"text": system}]}));
        }
        if !request.tools.is_empty() {
            let json_schema = options.parameters_json_schema.unwrap_or(false);
            let declarations: Vec<Value> = request.tools.iter().map(|tool| declaration(tool, json_schema)).collect();
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
            if let Some(choice) = &request.tool_choice {
                body.insert("toolConfig".into(), json!({"functionCallingConfig": tool_choice(choice)}));
            }
        }
        if let Some(config) = generation_config(request, &options) {
            body.insert("generationConfig".into(), Value::Object(config));
        }
        if let Some(settings) = &options.safety_settings {
            body.insert("safetySettings".into(), json!(settings));
        }
        if let Some(cache) = &options.cached_content {
            body.insert("cachedContent".into(), json!(cache));
        }
        Ok(Value::Object(body))
    }

    fn decoder(&self, _request: &LlmRequest) -> Box<dyn StreamDecoder> {
        Box::new(GeminiDecoder::default())
    }
}

/// The thought signature kept on a part, if any (`thoughtSignature` is read too, as written by the
/// TypeScript client).
fn thought_signature(metadata: Option<&ProviderMetadata>) -> Option<&str> {
    let google = metadata?.get(NAMESPACE)?;
    google.get("thought_signature").or_else(|| google.get("thoughtSignature")).and_then(Value::as_str)
}

/// `{"google": {...}}` metadata, or `None` when there is nothing to keep.
fn google_metadata(fields: Map<String, Value>) -> Option<ProviderMetadata> {
    if fields.is_empty() {
        return None;
    }
    let mut metadata = ProviderMetadata::new();
    metadata.insert(NAMESPACE.into(), Value::Object(fields));
    Some(metadata)
}

fn signature_metadata(signature: Option<&str>) -> Option<ProviderMetadata> {
    let mut fields = Map::new();
    if let Some(signature) = signature {
        fields.insert("thought_signature".into(), json!(signature));
    }
    google_metadata(fields)
}

/// Adds `thoughtSignature` to a wire part.
fn signed(mut part: Value, signature: Option<&str>) -> Value {
    if let (Some(signature), Value::Object(fields)) = (signature, &mut part) {
        fields.insert("thoughtSignature".into(), json!(signature));
    }
    part
}

fn contents(request: &LlmRequest) -> Result<Vec<Value>, LlmError> {
    let native_ids = native_call_ids(&request.messages);
    // Gemini 3 validates the signature of the first function call of every model turn.
    let needs_signature = request.model.contains("gemini-3");
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        match message.role {
            Role::System => {
                // Wrapped user text, merged into the previous user turn (tool results included) as
                // the TypeScript client does.
                let part = json!({"text": wrap_system_update(&system_update_text(message)?)});
                match out.last_mut() {
                    Some(("user", parts)) => parts.push(part),
                    _ => out.push(("user", vec![part])),
                }
            }
            Role::User => out.push(("user", user_parts(&message.content)?)),
            Role::Assistant => out.push(("model", model_parts(&message.content, needs_signature))),
            Role::Tool => out.push(("user", tool_result_parts(&message.content, &native_ids)?)),
        }
    }
    // Gemini rejects a content without parts.
    Ok(out
        .into_iter()
        .filter(|(_, parts)| !parts.is_empty())
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect())
}

/// Ids of function calls whose id came from Gemini itself: only those are sent back.
fn native_call_ids(messages: &[Message]) -> HashSet<&str> {
    let mut ids = HashSet::new();
    for message in messages.iter().filter(|message| message.role == Role::Assistant) {
        for part in &message.content {
            if let ContentPart::ToolCall { provider_metadata, .. } = part
                && let Some(id) = provider_metadata
                    .as_ref()
                    .and_then(|meta| meta.get(NAMESPACE))
                    .and_then(|google| google.get("function_call_id"))
                    .and_then(Value::as_str)
            {
                ids.insert(id);
            }
        }
    }
    ids
}

fn user_parts(content: &[ContentPart]) -> Result<Vec<Value>, LlmError> {
    content
        .iter()
        .map(|part| match part {
            ContentPart::Text { text, .. } => Ok(json!({"text": text})),
            ContentPart::Media { media_type, data, .. } => Ok(media_part(media_type, data)),
            _ => Err(LlmError::invalid_request("a Gemini user message may contain only text and media parts")),
        })
        .collect()
}

/// Inline bytes (`data:` URLs included) as `inlineData`, other URLs as `fileData`.
fn media_part(media_type: &str, data: &MediaData) -> Value {
    match (data.inline_base64(), data) {
        (Some(data), _) => json!({"inlineData": {"mimeType": media_type, "data": data}}),
        (None, MediaData::Url(url) | MediaData::Base64(url)) => {
            json!({"fileData": {"mimeType": media_type, "fileUri": url}})
        }
    }
}

fn model_parts(content: &[ContentPart], needs_signature: bool) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut first_call = true;
    for part in content {
        match part {
            ContentPart::Text { text, provider_metadata, .. } => {
                let signature = thought_signature(provider_metadata.as_ref());
                if let Some(inline) = inline_data(provider_metadata.as_ref()) {
                    parts.push(signed(json!({"inlineData": inline}), signature));
                } else if !text.is_empty() || signature.is_some() {
                    parts.push(signed(json!({"text": text}), signature));
                }
            }
            ContentPart::Reasoning { text, provider_metadata, .. } => {
                // Only our own namespace: a `signature` from another provider would be rejected.
                let signature = thought_signature(provider_metadata.as_ref());
                if !text.is_empty() || signature.is_some() {
                    parts.push(signed(json!({"text": text, "thought": true}), signature));
                }
            }
            ContentPart::ToolCall { id, name, input, provider_executed: false, provider_metadata } => {
                let google = provider_metadata.as_ref().and_then(|meta| meta.get(NAMESPACE));
                let mut call = json!({"name": name, "args": input});
                if google.and_then(|google| google.get("function_call_id")).is_some() {
                    call["id"] = json!(id);
                }
                let mut signature = thought_signature(provider_metadata.as_ref());
                if signature.is_none() && first_call && needs_signature {
                    signature = Some(SKIP_SIGNATURE);
                }
                first_call = false;
                parts.push(signed(json!({"functionCall": call}), signature));
            }
            ContentPart::Media { media_type, data, .. } => parts.push(media_part(media_type, data)),
            // Provider-executed tools are not replayed: this protocol runs no Gemini server tools.
            ContentPart::ToolCall { .. } | ContentPart::ToolResult { .. } => {}
        }
    }
    parts
}

/// An image (or other media) the model generated, kept on an empty text part by the decoder.
fn inline_data(metadata: Option<&ProviderMetadata>) -> Option<Value> {
    let inline = metadata?.get(NAMESPACE)?.get("inline_data")?;
    Some(json!({"mimeType": inline.get("mime_type")?, "data": inline.get("data")?}))
}

/// `functionResponse{name, response: {name, content}}` per result (the TypeScript client's shape),
/// followed by the media of rich results as `inlineData` parts in the same user turn.
fn tool_result_parts(content: &[ContentPart], native_ids: &HashSet<&str>) -> Result<Vec<Value>, LlmError> {
    let mut parts = Vec::new();
    let mut media = Vec::new();
    for part in content {
        let ContentPart::ToolResult { id, name, result, .. } = part else {
            return Err(LlmError::invalid_request("a tool message may contain only tool results"));
        };
        let mut response = json!({"name": name, "response": {"name": name, "content": tool_result_text(result)}});
        if native_ids.contains(id.as_str()) {
            response["id"] = json!(id);
        }
        parts.push(json!({"functionResponse": response}));
        if let ToolResultValue::Content(items) = result {
            for item in items {
                if let ToolContent::Media { media_type, data } = item {
                    media.push(media_part(media_type, data));
                }
            }
        }
    }
    parts.extend(media);
    Ok(parts)
}

/// The result as text, as the TypeScript client renders it: JSON values are always serialized (a
/// JSON string keeps its quotes); an error string is sent as is.
fn tool_result_text(result: &ToolResultValue) -> String {
    match result {
        ToolResultValue::Text(text) | ToolResultValue::Error(Value::String(text)) => text.clone(),
        ToolResultValue::Json(value) | ToolResultValue::Error(value) => value.to_string(),
        ToolResultValue::Content(_) => result.to_text(),
    }
}

fn declaration(tool: &ToolDefinition, json_schema: bool) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(tool.name));
    out.insert("description".into(), json!(tool.description));
    if json_schema {
        out.insert("parametersJsonSchema".into(), tool.input_schema.clone());
    } else if let Some(parameters) = tool_schema::convert(&tool.input_schema) {
        out.insert("parameters".into(), parameters);
    }
    Value::Object(out)
}

/// Unlike the TypeScript client, `none` keeps the declarations and sends mode `NONE`: the
/// request prefix stays the same for implicit caching, and the model still knows its tools.
fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool { name } => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    }
}

fn generation_config(request: &LlmRequest, options: &GoogleOptions) -> Option<Map<String, Value>> {
    let generation = &request.generation;
    let mut config = Map::new();
    if let Some(max) = generation.max_tokens {
        config.insert("maxOutputTokens".into(), json!(max));
    }
    let floats = [
        ("temperature", generation.temperature),
        ("topP", generation.top_p),
        ("presencePenalty", generation.presence_penalty),
        ("frequencyPenalty", generation.frequency_penalty),
    ];
    for (field, value) in floats {
        if let Some(value) = value {
            config.insert(field.into(), number(value));
        }
    }
    if let Some(top_k) = generation.top_k {
        config.insert("topK".into(), json!(top_k));
    }
    if let Some(seed) = generation.seed {
        config.insert("seed".into(), json!(seed));
    }
    if !generation.stop.is_empty() {
        config.insert("stopSequences".into(), json!(generation.stop));
    }
    if let Some(modalities) = &options.response_modalities {
        config.insert("responseModalities".into(), json!(modalities));
    }
    let mut thinking = Map::new();
    if let Some(budget) = options.thinking_budget {
        thinking.insert("thinkingBudget".into(), json!(budget));
    }
    if let Some(level) = &options.thinking_level {
        thinking.insert("thinkingLevel".into(), json!(level));
    }
    if let Some(include) = options.include_thoughts {
        thinking.insert("includeThoughts".into(), json!(include));
    }
    if !thinking.is_empty() {
        config.insert("thinkingConfig".into(), Value::Object(thinking));
    }
    (!config.is_empty()).then_some(config)
}

/// Projection of JSON Schema onto the OpenAPI subset Gemini accepts in `parameters`, as the
/// TypeScript client does (`gemini-tool-schema.ts`): first sanitize shapes Gemini rejects, then keep
/// only the keys it understands.
mod tool_schema {
    use serde_json::Map;
    use serde_json::Value;

    const INTENT_KEYS: &[&str] = &[
        "type",
        "properties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "$ref",
        "additionalProperties",
        "patternProperties",
        "required",
        "not",
        "if",
        "then",
        "else",
    ];

    /// The `parameters` value, or `None` for a schema without properties (Gemini wants the field
    /// omitted for argument-less tools).
    pub fn convert(schema: &Value) -> Option<Value> {
        project(&sanitize(schema))
    }

    fn has_combiner(schema: &Map<String, Value>) -> bool {
        ["anyOf", "oneOf", "allOf"].iter().any(|key| schema.get(*key).is_some_and(Value::is_array))
    }

    fn has_intent(schema: &Map<String, Value>) -> bool {
        has_combiner(schema) || INTENT_KEYS.iter().any(|key| schema.contains_key(*key))
    }

    fn sanitize(schema: &Value) -> Value {
        let fields = match schema {
            Value::Object(fields) => fields,
            Value::Array(items) => return Value::Array(items.iter().map(sanitize).collect()),
            other => return other.clone(),
        };
        let mut out = Map::new();
        for (key, value) in fields {
            let value = match (key.as_str(), value) {
                // Gemini takes string enum members only, and none may be empty.
                ("enum", Value::Array(members)) => Value::Array(
                    members
                        .iter()
                        .map(|member| match member {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        })
                        .filter(|member| !member.is_empty())
                        .map(Value::String)
                        .collect(),
                ),
                _ => sanitize(value),
            };
            out.insert(key.clone(), value);
        }
        if out.get("enum").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            out.remove("enum");
        }
        let type_name = out.get("type").and_then(Value::as_str).map(str::to_owned);
        if out.contains_key("enum") && matches!(type_name.as_deref(), Some("integer" | "number")) {
            out.insert("type".into(), Value::String("string".into()));
        }
        // Required entries must name a property.
        if type_name.as_deref() == Some("object")
            && let (Some(Value::Object(properties)), Some(Value::Array(required))) =
                (out.get("properties"), out.get("required"))
        {
            let kept: Vec<Value> = required
                .iter()
                .filter(|field| field.as_str().is_some_and(|field| properties.contains_key(field)))
                .cloned()
                .collect();
            out.insert("required".into(), Value::Array(kept));
        }
        // Arrays need a typed `items`.
        if type_name.as_deref() == Some("array") && !has_combiner(&out) {
            let mut items = out.remove("items").unwrap_or_else(|| Value::Object(Map::new()));
            if let Value::Object(fields) = &mut items
                && !has_intent(fields)
            {
                fields.insert("type".into(), Value::String("string".into()));
            }
            out.insert("items".into(), items);
        }
        // Scalars cannot carry object keys.
        if type_name.as_deref().is_some_and(|name| name != "object") && !has_combiner(&out) {
            out.remove("properties");
            out.remove("required");
        }
        Value::Object(out)
    }

    fn is_empty_object(schema: &Map<String, Value>) -> bool {
        schema.get("type").and_then(Value::as_str) == Some("object")
            && schema.get("properties").and_then(Value::as_object).is_none_or(Map::is_empty)
            && schema.get("additionalProperties").is_none_or(|value| matches!(value, Value::Bool(false) | Value::Null))
    }

    fn project(schema: &Value) -> Option<Value> {
        let schema = schema.as_object()?;
        if is_empty_object(schema) {
            return None;
        }
        let mut out = Map::new();
        let mut keep = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                out.insert(key.into(), value);
            }
        };
        keep("description", schema.get("description").cloned());
        keep("required", schema.get("required").cloned());
        keep("format", schema.get("format").cloned());
        match schema.get("type") {
            Some(Value::Array(types)) => {
                keep("type", types.iter().find(|name| name.as_str() != Some("null")).cloned());
                if types.iter().any(|name| name.as_str() == Some("null")) {
                    keep("nullable", Some(Value::Bool(true)));
                }
            }
            other => keep("type", other.cloned()),
        }
        keep(
            "enum",
            schema.get("const").map(|value| Value::Array(vec![value.clone()])).or_else(|| schema.get("enum").cloned()),
        );
        keep(
            "properties",
            schema.get("properties").and_then(Value::as_object).map(|properties| {
                // Properties whose schema projects to nothing are left out.
                Value::Object(
                    properties
                        .iter()
                        .filter_map(|(name, value)| project(value).map(|value| (name.clone(), value)))
                        .collect(),
                )
            }),
        );
        keep(
            "items",
            match schema.get("items") {
                Some(Value::Array(items)) => {
                    Some(Value::Array(items.iter().map(|item| project(item).unwrap_or(Value::Null)).collect()))
                }
                Some(items) => Some(project(items).unwrap_or(Value::Null)),
                None => None,
            },
        );
        for combiner in ["allOf", "anyOf", "oneOf"] {
            keep(
                combiner,
                schema.get(combiner).and_then(Value::as_array).map(|variants| {
                    Value::Array(variants.iter().map(|variant| project(variant).unwrap_or(Value::Null)).collect())
                }),
            );
        }
        keep("minLength", schema.get("minLength").cloned());
        Some(Value::Object(out))
    }
}

/// Decoder state for one Gemini stream.
#[derive(Debug, Default)]
struct GeminiDecoder {
    response_id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
    blocks: u32,
    text: Option<Block>,
    reasoning: Option<Block>,
    /// A function call still receiving Vertex `partialArgs`.
    streaming_call: Option<StreamingCall>,
    /// Function calls emitted so far.
    calls: u32,
}

/// An open text or reasoning block and the signature that arrived on it.
#[derive(Debug)]
struct Block {
    id: String,
    signature: Option<String>,
}

#[derive(Debug)]
struct StreamingCall {
    id: String,
    name: String,
    native_id: Option<String>,
    args: Value,
    signature: Option<String>,
    /// JSON path of a string argument whose next `stringValue` continues it.
    open_string: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    usage_metadata: Option<UsageMetadata>,
    model_version: Option<String>,
    response_id: Option<String>,
    prompt_feedback: Option<PromptFeedback>,
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    index: Option<u32>,
}

#[derive(Debug, Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    thought_signature: Option<String>,
    function_call: Option<FunctionCall>,
    inline_data: Option<InlineData>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCall {
    id: Option<String>,
    name: Option<String>,
    args: Option<Value>,
    #[serde(default)]
    partial_args: Vec<PartialArg>,
    #[serde(default)]
    will_continue: bool,
}

/// One Vertex streamed argument: a value at a JSON path.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartialArg {
    json_path: String,
    string_value: Option<String>,
    number_value: Option<Value>,
    bool_value: Option<bool>,
    #[serde(default)]
    will_continue: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct InlineData {
    mime_type: String,
    data: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
    block_reason_message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: Option<u64>,
    candidates_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    tool_use_prompt_token_count: Option<u64>,
    total_token_count: Option<u64>,
}

impl UsageMetadata {
    /// `promptTokenCount` includes cached tokens; `candidatesTokenCount` excludes thoughts, so
    /// output = candidates + thoughts. Tool-use prompt tokens are billed as input.
    fn normalise(&self) -> Option<Usage> {
        if self.prompt_token_count.is_none()
            && self.candidates_token_count.is_none()
            && self.total_token_count.is_none()
        {
            // Vertex sends `{"trafficType": ...}` alone on early chunks.
            return None;
        }
        let input = self.prompt_token_count.unwrap_or(0) + self.tool_use_prompt_token_count.unwrap_or(0);
        let thoughts = self.thoughts_token_count.unwrap_or(0);
        let output = self.candidates_token_count.unwrap_or(0) + thoughts;
        Some(Usage::from_inclusive(input, self.cached_content_token_count.unwrap_or(0), 0, output, thoughts))
    }
}

impl StreamDecoder for GeminiDecoder {
    fn decode(&mut self, frame: Frame, sink: &mut EventSink) -> Result<(), LlmError> {
        let Frame::Sse(event) = frame else {
            return Err(LlmError::invalid_output("Gemini streams are SSE"));
        };
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = parse_payload(PROTOCOL, data)?;
        if let Some(error) = chunk.error {
            return Err(stream_error(&error));
        }
        if self.response_id.is_none() {
            self.response_id = chunk.response_id;
        }
        if self.model.is_none() {
            self.model = chunk.model_version;
        }
        // Cumulative: the last report wins.
        if let Some(usage) = chunk.usage_metadata.as_ref().and_then(UsageMetadata::normalise) {
            self.usage = Some(usage);
        }
        // Only candidate 0 is decoded; requests never ask for more.
        let Some(candidate) = chunk.candidates.into_iter().find(|candidate| candidate.index.unwrap_or(0) == 0) else {
            if let Some(feedback) = chunk.prompt_feedback
                && let Some(reason) = feedback.block_reason
            {
                self.finish_blocked(reason, feedback.block_reason_message, sink);
            }
            return Ok(());
        };
        for part in candidate.content.map(|content| content.parts).unwrap_or_default() {
            self.part(part, sink)?;
        }
        // The chunk's usage is already recorded, so finishing here includes it.
        if let Some(reason) = candidate.finish_reason {
            self.finish(reason, candidate.finish_message, sink);
        }
        Ok(())
    }

    fn end(&mut self, _sink: &mut EventSink) -> Result<(), LlmError> {
        Err(LlmError::new(ErrorKind::Transport, "the Gemini stream ended without a finishReason"))
    }
}

impl GeminiDecoder {
    fn part(&mut self, part: Part, sink: &mut EventSink) -> Result<(), LlmError> {
        let signature = part.thought_signature;
        if let Some(call) = part.function_call {
            return self.function_call(call, signature, sink);
        }
        if let Some(inline) = part.inline_data {
            self.inline_data(inline, signature, sink);
            return Ok(());
        }
        match part.text {
            Some(text) if part.thought => self.reasoning_delta(&text, signature, sink),
            Some(text) => self.text_delta(&text, signature, sink),
            // A bare signature belongs with the text it follows.
            None if signature.is_some() => self.text_delta("", signature, sink),
            // Parts of server tools (code execution and the like) are not surfaced.
            None => {}
        }
        Ok(())
    }

    fn text_delta(&mut self, text: &str, signature: Option<String>, sink: &mut EventSink) {
        self.end_reasoning(sink);
        // Gemini closes many streams with an empty text part; it only matters when signed.
        if text.is_empty() && signature.is_none() {
            return;
        }
        if signature.is_some() && self.text.as_ref().is_some_and(|block| block.signature.is_some()) {
            // A second signed part is a part of its own.
            self.end_text(sink);
        }
        let block = self.text.get_or_insert_with(|| Block { id: next_id(&mut self.blocks, "text"), signature: None });
        if signature.is_some() {
            block.signature = signature;
        }
        sink.text_delta(&block.id, text);
    }

    fn reasoning_delta(&mut self, text: &str, signature: Option<String>, sink: &mut EventSink) {
        self.end_text(sink);
        if text.is_empty() && signature.is_none() {
            return;
        }
        if signature.is_some() && self.reasoning.as_ref().is_some_and(|block| block.signature.is_some()) {
            self.end_reasoning(sink);
        }
        let block =
            self.reasoning.get_or_insert_with(|| Block { id: next_id(&mut self.blocks, "reasoning"), signature: None });
        if signature.is_some() {
            block.signature = signature;
        }
        sink.reasoning_delta(&block.id, text);
    }

    fn end_text(&mut self, sink: &mut EventSink) {
        if let Some(block) = self.text.take() {
            sink.text_end(&block.id, signature_metadata(block.signature.as_deref()));
        }
    }

    /// The signature goes both on `signature` and in the `google` metadata the encoder reads.
    fn end_reasoning(&mut self, sink: &mut EventSink) {
        if let Some(block) = self.reasoning.take() {
            let metadata = signature_metadata(block.signature.as_deref());
            sink.reasoning_end(&block.id, block.signature, None, metadata);
        }
    }

    /// Generated media has no event of its own: it becomes an empty text part whose `google`
    /// metadata holds the bytes (and signature), which the encoder replays as `inlineData`.
    fn inline_data(&mut self, inline: InlineData, signature: Option<String>, sink: &mut EventSink) {
        self.end_text(sink);
        self.end_reasoning(sink);
        let mut fields = Map::new();
        fields.insert("inline_data".into(), json!({"mime_type": inline.mime_type, "data": inline.data}));
        if let Some(signature) = signature {
            fields.insert("thought_signature".into(), json!(signature));
        }
        let id = next_id(&mut self.blocks, "text");
        sink.text_end(&id, google_metadata(fields));
    }

    fn function_call(
        &mut self,
        call: FunctionCall,
        signature: Option<String>,
        sink: &mut EventSink,
    ) -> Result<(), LlmError> {
        self.end_text(sink);
        self.end_reasoning(sink);
        if let Some(name) = call.name.filter(|name| !name.is_empty()) {
            // A named call starts a new call, ending any streamed one.
            self.flush_streaming_call(sink);
            let native_id = call.id.filter(|id| !id.is_empty());
            let id = self.next_call_id(native_id.as_deref());
            let args = call.args.unwrap_or_else(|| Value::Object(Map::new()));
            if !call.will_continue {
                self.calls += 1;
                sink.tool_call(&id, &name, args, call_metadata(native_id.as_deref(), signature.as_deref()));
                return Ok(());
            }
            sink.tool_input_start(&id, &name);
            let mut streaming = StreamingCall { id, name, native_id, args, signature, open_string: None };
            streaming.apply(call.partial_args)?;
            self.streaming_call = Some(streaming);
            return Ok(());
        }
        let Some(streaming) = &mut self.streaming_call else {
            if call.partial_args.is_empty() {
                return Ok(());
            }
            return Err(LlmError::invalid_output("Gemini streamed function-call arguments before the call's name"));
        };
        if signature.is_some() {
            streaming.signature = signature;
        }
        streaming.apply(call.partial_args)?;
        if !call.will_continue {
            self.flush_streaming_call(sink);
        }
        Ok(())
    }

    fn flush_streaming_call(&mut self, sink: &mut EventSink) {
        if let Some(call) = self.streaming_call.take() {
            self.calls += 1;
            let metadata = call_metadata(call.native_id.as_deref(), call.signature.as_deref());
            sink.tool_call(&call.id, &call.name, call.args, metadata);
        }
    }

    /// Gemini API calls carry no id: synthesize one that is stable for this response and unique
    /// across turns (the response id is).
    fn next_call_id(&self, native: Option<&str>) -> String {
        match (native, &self.response_id) {
            (Some(id), _) => id.to_owned(),
            (None, Some(response)) => format!("call_{response}_{}", self.calls),
            (None, None) => format!("call_{}", self.calls),
        }
    }

    fn finish(&mut self, reason: String, message: Option<String>, sink: &mut EventSink) {
        self.flush_streaming_call(sink);
        self.end_text(sink);
        self.end_reasoning(sink);
        let mut fields = Map::new();
        fields.insert("finish_reason".into(), json!(reason));
        if let Some(message) = message {
            fields.insert("finish_message".into(), json!(message));
        }
        let mut finish = Finish::new(finish_reason(&reason, self.calls > 0));
        finish.provider_metadata = google_metadata(fields);
        self.emit(finish, sink);
    }

    /// The prompt itself was blocked: no candidates, only `promptFeedback.blockReason`.
    fn finish_blocked(&mut self, reason: String, message: Option<String>, sink: &mut EventSink) {
        let mut fields = Map::new();
        fields.insert("block_reason".into(), json!(reason));
        if let Some(message) = message {
            fields.insert("block_reason_message".into(), json!(message));
        }
        let mut finish = Finish::new(FinishReason::ContentFilter);
        finish.provider_metadata = google_metadata(fields);
        self.emit(finish, sink);
    }

    fn emit(&mut self, mut finish: Finish, sink: &mut EventSink) {
        finish.usage = self.usage.take();
        finish.response_id = self.response_id.take();
        finish.model = self.model.take();
        sink.finish(finish);
    }
}

fn next_id(counter: &mut u32, kind: &str) -> String {
    let id = format!("{kind}-{counter}");
    *counter += 1;
    id
}

fn call_metadata(native_id: Option<&str>, signature: Option<&str>) -> Option<ProviderMetadata> {
    let mut fields = Map::new();
    if let Some(signature) = signature {
        fields.insert("thought_signature".into(), json!(signature));
    }
    if let Some(id) = native_id {
        fields.insert("function_call_id".into(), json!(id));
    }
    google_metadata(fields)
}

impl StreamingCall {
    fn apply(&mut self, partial_args: Vec<PartialArg>) -> Result<(), LlmError> {
        for arg in partial_args {
            let path = json_path::parse(&arg.json_path)?;
            let append = self.open_string.as_deref() == Some(arg.json_path.as_str());
            let value = match (arg.string_value, arg.number_value, arg.bool_value) {
                (Some(text), _, _) => {
                    self.open_string = arg.will_continue.then(|| arg.json_path.clone());
                    Value::String(text)
                }
                (None, Some(number @ Value::Number(_)), _) => number,
                (None, _, Some(flag)) => Value::Bool(flag),
                // `nullValue` (or nothing usable).
                _ => Value::Null,
            };
            let args = std::mem::take(&mut self.args);
            self.args = json_path::insert(args, &path, value, append)?;
        }
        Ok(())
    }
}

/// The JSON paths of Vertex `partialArgs` (`$.a.b[0]`, `$['key']`), and assignment through them.
mod json_path {
    use serde_json::Map;
    use serde_json::Value;

    use crate::LlmError;

    /// Guards against a path that would allocate a huge array.
    const MAX_INDEX: usize = 100_000;

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Segment {
        Key(String),
        Index(usize),
    }

    pub fn parse(path: &str) -> Result<Vec<Segment>, LlmError> {
        let invalid = || LlmError::invalid_output(format!("invalid Gemini partialArgs JSON path `{path}`"));
        let mut rest = path.strip_prefix('$').ok_or_else(invalid)?;
        let mut segments = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                if end == 0 {
                    return Err(invalid());
                }
                segments.push(Segment::Key(after[..end].to_owned()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after.find(']').ok_or_else(invalid)?;
                let inner = &after[..end];
                let quoted = inner
                    .strip_prefix('\'')
                    .and_then(|key| key.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|key| key.strip_suffix('"')));
                let segment = match quoted {
                    Some(key) => Segment::Key(key.to_owned()),
                    None => Segment::Index(inner.parse().ok().filter(|index| *index <= MAX_INDEX).ok_or_else(invalid)?),
                };
                segments.push(segment);
                rest = &after[end + 1..];
            } else {
                return Err(invalid());
            }
        }
        Ok(segments)
    }

    /// Sets `value` at `path` inside `target`, creating objects and arrays on the way; with
    /// `append`, a string value is appended to the string already there.
    pub fn insert(target: Value, path: &[Segment], value: Value, append: bool) -> Result<Value, LlmError> {
        let Some((first, rest)) = path.split_first() else {
            return Ok(match (target, value) {
                (Value::String(mut existing), Value::String(more)) if append => {
                    existing.push_str(&more);
                    Value::String(existing)
                }
                (_, value) => value,
            });
        };
        match first {
            Segment::Key(key) => {
                let mut fields = match target {
                    Value::Object(fields) => fields,
                    _ => Map::new(),
                };
                // `take` leaves the key in place, so the argument order stays the streamed order.
                let child = fields.get_mut(key).map(std::mem::take).unwrap_or(Value::Null);
                fields.insert(key.clone(), insert(child, rest, value, append)?);
                Ok(Value::Object(fields))
            }
            Segment::Index(index) => {
                let mut items = match target {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                };
                if items.len() <= *index {
                    items.resize(index + 1, Value::Null);
                }
                if let Some(slot) = items.get_mut(*index) {
                    let child = std::mem::take(slot);
                    *slot = insert(child, rest, value, append)?;
                }
                Ok(Value::Array(items))
            }
        }
    }
}

fn finish_reason(reason: &str, has_calls: bool) -> FinishReason {
    match reason {
        "STOP" if has_calls => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => FinishReason::ContentFilter,
        // The model failed to produce a usable tool call.
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" | "TOO_MANY_TOOL_CALLS" => FinishReason::Error,
        _ => FinishReason::Unknown,
    }
}

/// An `error` object inside a 200 stream: `{"code": 503, "message", "status": "UNAVAILABLE"}`.
fn stream_error(error: &Value) -> LlmError {
    let status = error.get("code").and_then(Value::as_u64).filter(|code| (400..600).contains(code));
    if let Some(status) = status {
        let body = json!({"error": error}).to_string();
        return crate::classify_http(status as u16, &[], body.as_bytes());
    }
    let message = error.get("message").and_then(Value::as_str).or(error.as_str()).unwrap_or("unknown stream error");
    crate::classify_stream_error(error.get("status").and_then(Value::as_str), message)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::LlmEvent;
    use crate::LlmResponse;

    fn decode_all(chunks: &[Value]) -> Vec<LlmEvent> {
        crate::protocol::decode_json_frames(&mut GeminiDecoder::default(), chunks)
    }

    fn signed_meta(signature: &str) -> Option<ProviderMetadata> {
        signature_metadata(Some(signature))
    }

    #[test]
    fn encodes_a_tool_loop_with_signatures_on_their_parts() {
        let request: LlmRequest = serde_json::from_value(json!({
            "model": "gemini-2.5-flash",
            "system": [{"text": "a"}, {"text": "b"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
                {"role": "assistant", "content": [
                    {"type": "reasoning", "text": "think", "provider_metadata": {"google": {"thought_signature": "R"}}},
                    {"type": "text", "text": "Let me check.", "provider_metadata": {"google": {"thought_signature": "T"}}},
                    {"type": "tool-call", "id": "call_x_0", "name": "weather", "input": {"city": "Paris"},
                     "provider_metadata": {"google": {"thought_signature": "C"}}},
                    {"type": "text", "text": "", "provider_metadata": {"google": {"thought_signature": "E"}}},
                ]},
                {"role": "tool", "content": [{"type": "tool-result", "id": "call_x_0", "name": "weather",
                    "result": {"type": "json", "value": {"temp": 20}}}]},
                {"role": "system", "content": [{"type": "text", "text": "be <brief>"}]},
            ],
            "tools": [{"name": "weather", "description": "Weather.", "input_schema":
                {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city", "gone"],
                 "additionalProperties": false}}],
            "tool_choice": {"type": "none"},
            "generation": {"max_tokens": 100, "temperature": 1.0, "top_k": 40, "stop": ["END"]},
            "options": {"google": {"thinking_budget": -1, "include_thoughts": true}},
        }))
        .unwrap();
        let body = Gemini.encode(&request).unwrap();
        assert_eq!(
            body,
            json!({
                "contents": [
                    {"role": "user", "parts": [{"text": "weather?"}]},
                    {"role": "model", "parts": [
                        {"text": "think", "thought": true, "thoughtSignature": "R"},
                        {"text": "Let me check.", "thoughtSignature": "T"},
                        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}, "thoughtSignature": "C"},
                        {"text": "", "thoughtSignature": "E"},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "weather", "response": {"name": "weather", "content": "{\"temp\":20}"}}},
                        {"text": "<system-update>\nbe &lt;brief&gt;\n</system-update>"},
                    ]},
                ],
                "systemInstruction": {"parts": [{"text": "a\nb"}]},
                "tools": [{"functionDeclarations": [{"name": "weather", "description": "Weather.", "parameters":
                    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "NONE"}},
                "generationConfig": {"maxOutputTokens": 100, "temperature": 1, "topK": 40, "stopSequences": ["END"],
                    "thinkingConfig": {"thinkingBudget": -1, "includeThoughts": true}},
            })
        );
        assert_eq!(Gemini.path(&request), "/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    }

    #[test]
    fn gemini_3_calls_without_a_signature_get_the_documented_sentinel() {
        let mut request = LlmRequest::new("gemini-3-pro-preview").message(Message::assistant(vec![
            ContentPart::ToolCall {
                id: "a".into(),
                name: "f".into(),
                input: json!({}),
                provider_executed: false,
                provider_metadata: None,
            },
            ContentPart::ToolCall {
                id: "b".into(),
                name: "f".into(),
                input: json!({}),
                provider_executed: false,
                provider_metadata: None,
            },
        ]));
        let body = Gemini.encode(&request).unwrap();
        assert_eq!(body["contents"][0]["parts"][0]["thoughtSignature"], json!(SKIP_SIGNATURE));
        assert_eq!(body["contents"][0]["parts"][1].get("thoughtSignature"), None);
        request.model = "gemini-2.5-pro".into();
        assert_eq!(Gemini.encode(&request).unwrap()["contents"][0]["parts"][0].get("thoughtSignature"), None);
    }

    #[test]
    fn unknown_options_and_bad_content_are_rejected() {
        let mut request = LlmRequest::new("g").message(Message::user("hi"));
        request.options.set("google", json!({"thinkingBudget": 1}));
        assert_eq!(Gemini.encode(&request).unwrap_err().kind, ErrorKind::InvalidRequest);
        let mut request =
            LlmRequest::new("g").message(Message::tool_result("c", "f", ToolResultValue::Text("x".into())));
        request.messages[0].role = Role::User;
        assert_eq!(Gemini.encode(&request).unwrap_err().kind, ErrorKind::InvalidRequest);
    }

    #[test]
    fn media_parts_use_inline_or_file_data() {
        let request = LlmRequest::new("g").message(Message {
            role: Role::User,
            content: vec![
                ContentPart::Media {
                    media_type: "image/png".into(),
                    data: MediaData::Base64("AAAA".into()),
                    filename: None,
                },
                ContentPart::Media {
                    media_type: "image/png".into(),
                    data: MediaData::Url("data:image/png;base64,BBBB".into()),
                    filename: None,
                },
                ContentPart::Media {
                    media_type: "application/pdf".into(),
                    data: MediaData::Url("https://x/y.pdf".into()),
                    filename: None,
                },
            ],
        });
        assert_eq!(
            Gemini.encode(&request).unwrap()["contents"][0]["parts"],
            json!([
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                {"inlineData": {"mimeType": "image/png", "data": "BBBB"}},
                {"fileData": {"mimeType": "application/pdf", "fileUri": "https://x/y.pdf"}},
            ])
        );
    }

    #[test]
    fn tool_schemas_are_projected_like_the_typescript_client() {
        let schema = json!({
            "type": "object",
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {
                "n": {"type": "integer", "enum": [1, 2]},
                "tags": {"type": "array"},
                "maybe": {"type": ["string", "null"], "description": "d"},
                "empty": {"type": "object", "properties": {}},
                "kind": {"const": "x"},
            },
            "required": ["n"],
        });
        assert_eq!(
            tool_schema::convert(&schema),
            Some(json!({
                "required": ["n"],
                "type": "object",
                "properties": {
                    "n": {"type": "string", "enum": ["1", "2"]},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "maybe": {"description": "d", "type": "string", "nullable": true},
                    "kind": {"enum": ["x"]},
                },
            }))
        );
        assert_eq!(tool_schema::convert(&json!({"type": "object", "properties": {}})), None);
        let tool = ToolDefinition::new("t", "d", json!({"type": "object"}));
        assert_eq!(declaration(&tool, false), json!({"name": "t", "description": "d"}));
        assert_eq!(
            declaration(&tool, true),
            json!({"name": "t", "description": "d", "parametersJsonSchema": {"type": "object"}})
        );
    }

    #[test]
    fn decodes_thoughts_text_and_a_trailing_signature() {
        let events = decode_all(&[
            json!({"candidates": [{"content": {"parts": [{"text": "hmm", "thought": true}]}}], "responseId": "r1", "modelVersion": "m"}),
            json!({"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"text": "", "thoughtSignature": "S"}]}, "finishReason": "STOP"}],
                   "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 2, "thoughtsTokenCount": 5, "cachedContentTokenCount": 4}}),
        ]);
        let response = LlmResponse::from_events(&events);
        assert_eq!(
            response.message.content,
            vec![
                ContentPart::Reasoning {
                    text: "hmm".into(),
                    signature: None,
                    encrypted: None,
                    provider_metadata: None
                },
                ContentPart::Text { text: "Hi".into(), cache: None, provider_metadata: signed_meta("S") },
            ]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::Stop));
        assert_eq!(response.usage, Some(Usage::from_inclusive(9, 4, 0, 7, 5)));
        assert_eq!(response.response_id.as_deref(), Some("r1"));
        assert_eq!(response.model.as_deref(), Some("m"));
    }

    #[test]
    fn a_signed_empty_part_after_a_call_is_kept_as_its_own_text_part() {
        let events = decode_all(&[json!({"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "C"},
            {"text": "", "thoughtSignature": "E"},
        ]}, "finishReason": "STOP"}], "responseId": "r"})]);
        let response = LlmResponse::from_events(&events);
        assert_eq!(
            response.message.content,
            vec![
                ContentPart::ToolCall {
                    id: "call_r_0".into(),
                    name: "f".into(),
                    input: json!({"a": 1}),
                    provider_executed: false,
                    provider_metadata: signed_meta("C"),
                },
                ContentPart::Text { text: String::new(), cache: None, provider_metadata: signed_meta("E") },
            ]
        );
        assert_eq!(response.finish_reason, Some(FinishReason::ToolCalls));
        // And the folded message encodes back to the same parts.
        let request = LlmRequest::new("g").message(response.message);
        assert_eq!(
            Gemini.encode(&request).unwrap()["contents"][0]["parts"],
            json!([
                {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "C"},
                {"text": "", "thoughtSignature": "E"},
            ])
        );
    }

    #[test]
    fn native_call_ids_are_kept_and_sent_back() {
        let events = decode_all(&[json!({"candidates": [{"content": {"parts": [
            {"functionCall": {"id": "fc-1", "name": "f", "args": {}}},
        ]}, "finishReason": "STOP"}]})]);
        let response = LlmResponse::from_events(&events);
        assert_eq!(response.tool_calls()[0].id, "fc-1");
        let request = LlmRequest::new("g").message(response.message).message(Message::tool_result(
            "fc-1",
            "f",
            ToolResultValue::Text("ok".into()),
        ));
        let body = Gemini.encode(&request).unwrap();
        assert_eq!(body["contents"][0]["parts"][0]["functionCall"]["id"], json!("fc-1"));
        assert_eq!(body["contents"][1]["parts"][0]["functionResponse"]["id"], json!("fc-1"));
    }

    #[test]
    fn assembles_partial_args_by_json_path() {
        let events = decode_all(&[
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "willContinue": true}, "thoughtSignature": "S"}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [
                {"jsonPath": "$.q", "stringValue": "hel", "willContinue": true},
            ], "willContinue": true}}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"functionCall": {"partialArgs": [
                {"jsonPath": "$.q", "stringValue": "lo"},
                {"jsonPath": "$.opts[1].n", "numberValue": 2},
                {"jsonPath": "$['a b']", "boolValue": true},
                {"jsonPath": "$.none", "nullValue": "NULL_VALUE"},
            ], "willContinue": true}}]}}]}),
            json!({"candidates": [{"content": {"parts": [{"functionCall": {}}]}, "finishReason": "STOP"}]}),
        ]);
        let response = LlmResponse::from_events(&events);
        assert_eq!(
            response.tool_calls()[0].input,
            json!({"q": "hello", "opts": [null, {"n": 2}], "a b": true, "none": null})
        );
        assert!(matches!(&response.message.content[0],
            ContentPart::ToolCall { provider_metadata, .. } if *provider_metadata == signed_meta("S")));
        assert!(json_path::parse("location").is_err());
        assert!(json_path::parse("$[99999999999]").is_err());
    }

    #[test]
    fn generated_images_round_trip_as_inline_data() {
        let events = decode_all(&[json!({"candidates": [{"content": {"parts": [
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}, "thoughtSignature": "I"},
            {"text": "Here it is."},
        ]}, "finishReason": "STOP"}]})]);
        let response = LlmResponse::from_events(&events);
        assert_eq!(response.text(), "Here it is.");
        let request = LlmRequest::new("g").message(response.message);
        assert_eq!(
            Gemini.encode(&request).unwrap()["contents"][0]["parts"],
            json!([
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}, "thoughtSignature": "I"},
                {"text": "Here it is."},
            ])
        );
    }

    #[test]
    fn finish_reasons_blocked_prompts_and_errors() {
        let length = decode_all(&[
            json!({"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "MAX_TOKENS"}]}),
        ]);
        assert_eq!(LlmResponse::from_events(&length).finish_reason, Some(FinishReason::Length));
        let safety = decode_all(&[json!({"candidates": [{"finishReason": "SAFETY"}]})]);
        assert_eq!(LlmResponse::from_events(&safety).finish_reason, Some(FinishReason::ContentFilter));
        let malformed = decode_all(&[json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL"}]})]);
        assert_eq!(LlmResponse::from_events(&malformed).finish_reason, Some(FinishReason::Error));

        let blocked = LlmResponse::from_events(&decode_all(&[json!({
            "promptFeedback": {"blockReason": "SAFETY"},
            "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        })]));
        assert_eq!(blocked.finish_reason, Some(FinishReason::ContentFilter));
        assert_eq!(blocked.usage.map(|usage| usage.input_tokens), Some(7));
        assert_eq!(
            blocked.provider_metadata,
            google_metadata(Map::from_iter([("block_reason".into(), json!("SAFETY"))]))
        );

        let truncated =
            LlmResponse::from_events(&decode_all(&[json!({"candidates": [{"content": {"parts": [{"text": "a"}]}}]})]));
        assert_eq!(truncated.text(), "a");
        assert_eq!(truncated.error.map(|error| error.kind), Some(ErrorKind::Transport));

        let overloaded = LlmResponse::from_events(&decode_all(&[json!({
            "error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"},
        })]));
        let error = overloaded.error.unwrap();
        assert_eq!((error.kind, error.retryable, error.status), (ErrorKind::ProviderInternal, true, Some(503)));
    }
}
