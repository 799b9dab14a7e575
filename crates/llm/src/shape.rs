//! Request shaping: what a route requires of a canonical request beyond its protocol's plain
//! encoding.
//!
//! Signed-in (subscription) endpoints speak the ordinary protocols but accept only requests shaped
//! like their own clients' (reference/llm-protocols.md §11): Claude Pro/Max wants Claude Code's
//! identity as the first system block and tool names prefixed `mcp_`; the ChatGPT Codex backend
//! wants `store: false`, `instructions` and no output limit; GitHub Copilot wants headers that
//! depend on the conversation. A [`RequestShape`] is that data, carried by the
//! [`Route`](crate::Route): the client applies it to the canonical request before the protocol
//! encodes it, and undoes the tool-name prefix on the decoded events. Protocols stay unaware of it.

use std::borrow::Cow;

use serde_json::Value;

use crate::ContentPart;
use crate::LlmEvent;
use crate::LlmRequest;
use crate::PreparedRequest;
use crate::ProviderOptions;
use crate::Role;
use crate::SystemPart;
use crate::ToolChoice;

/// How a route reshapes requests (and the tool names of responses). The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestShape {
    /// Sent as the first system part, before the request's own.
    pub system_preamble: Option<String>,
    /// `(from, to)` substring replacements applied to the request's own system text.
    pub system_replacements: Vec<(String, String)>,
    /// Added to every tool name sent (definitions, tool choice, history) and removed again from the
    /// tool names the provider streams back.
    pub tool_name_prefix: Option<String>,
    /// Options deep-merged over the request's own (they win).
    pub forced_options: ProviderOptions,
    /// Leave the output-token limit unset.
    pub omit_max_tokens: bool,
    /// Headers whose values depend on the request.
    pub headers: Vec<DynamicHeader>,
}

/// A header computed from the request being sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DynamicHeader {
    /// `user` when the last message is the user's, else `agent` (GitHub Copilot's `x-initiator`).
    Initiator(String),
    /// `true` when any message carries an image (GitHub Copilot's `Copilot-Vision-Request`);
    /// absent otherwise.
    Vision(String),
    /// The string value of option `namespace.key`, when set (the Codex backend's `session_id` is
    /// the request's `openai.prompt_cache_key`).
    Option { header: String, namespace: String, key: String },
}

impl RequestShape {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The request as this shape wants it (borrowed unchanged when the shape asks for nothing that
    /// touches the body).
    pub fn apply<'a>(&self, request: &'a LlmRequest) -> Cow<'a, LlmRequest> {
        let touches_body = self.system_preamble.is_some()
            || !self.system_replacements.is_empty()
            || self.tool_name_prefix.is_some()
            || !self.forced_options.is_empty()
            || self.omit_max_tokens;
        if !touches_body {
            return Cow::Borrowed(request);
        }
        let mut shaped = request.clone();
        self.shape_system(&mut shaped);
        if let Some(prefix) = &self.tool_name_prefix {
            prefix_tool_names(&mut shaped, prefix);
        }
        if !self.forced_options.is_empty() {
            shaped.options = shaped.options.merged(&self.forced_options);
        }
        if self.omit_max_tokens {
            shaped.generation.max_tokens = None;
        }
        Cow::Owned(shaped)
    }

    /// Sets the request-dependent headers on `prepared`.
    pub fn set_headers(&self, request: &LlmRequest, prepared: &mut PreparedRequest) {
        for header in &self.headers {
            match header {
                DynamicHeader::Initiator(name) => {
                    let last_is_user = request.messages.last().is_some_and(|message| message.role == Role::User);
                    prepared.set_header(name, if last_is_user { "user" } else { "agent" });
                }
                DynamicHeader::Vision(name) => {
                    if has_image(request) {
                        prepared.set_header(name, "true");
                    }
                }
                DynamicHeader::Option { header, namespace, key } => {
                    let value = request.options.0.get(namespace).and_then(|options| options.get(key));
                    if let Some(value) = value.and_then(Value::as_str) {
                        prepared.set_header(header, value);
                    }
                }
            }
        }
    }

    /// Undoes the tool-name prefix on a decoded event.
    pub fn restore(&self, event: &mut LlmEvent) {
        let Some(prefix) = &self.tool_name_prefix else { return };
        let (LlmEvent::ToolInputStart { name, .. }
        | LlmEvent::ToolCall { name, .. }
        | LlmEvent::ToolResult { name, .. }) = event
        else {
            return;
        };
        if let Some(stripped) = name.strip_prefix(prefix.as_str()) {
            *name = stripped.to_owned();
        }
    }

    fn shape_system(&self, request: &mut LlmRequest) {
        for part in &mut request.system {
            for (from, to) in &self.system_replacements {
                if part.text.contains(from.as_str()) {
                    part.text = part.text.replace(from.as_str(), to);
                }
            }
        }
        if let Some(preamble) = &self.system_preamble {
            request.system.insert(0, SystemPart::text(preamble.clone()));
        }
    }
}

fn prefix_tool_names(request: &mut LlmRequest, prefix: &str) {
    let prefixed = |name: &mut String| {
        if !name.starts_with(prefix) {
            name.insert_str(0, prefix);
        }
    };
    for tool in &mut request.tools {
        prefixed(&mut tool.name);
    }
    if let Some(ToolChoice::Tool { name }) = &mut request.tool_choice {
        prefixed(name);
    }
    for message in &mut request.messages {
        for part in &mut message.content {
            // Provider-executed tools are the provider's own; their names are not ours to change.
            match part {
                ContentPart::ToolCall { name, provider_executed: false, .. }
                | ContentPart::ToolResult { name, provider_executed: false, .. } => prefixed(name),
                _ => {}
            }
        }
    }
}

fn has_image(request: &LlmRequest) -> bool {
    let image = |media_type: &str| media_type.starts_with("image/");
    request.messages.iter().flat_map(|message| &message.content).any(|part| match part {
        ContentPart::Media { media_type, .. } => image(media_type),
        ContentPart::ToolResult { result: crate::ToolResultValue::Content(items), .. } => {
            items.iter().any(|item| matches!(item, crate::ToolContent::Media { media_type, .. } if image(media_type)))
        }
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Message;
    use crate::ToolDefinition;
    use crate::ToolResultValue;

    fn request() -> LlmRequest {
        LlmRequest::new("m")
            .system("You are OpenCode.")
            .tool(ToolDefinition::new("read", "Read", json!({"type": "object"})))
            .message(Message::user("hi"))
            .message(Message::assistant(vec![ContentPart::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                input: json!({}),
                provider_executed: false,
                provider_metadata: None,
            }]))
            .message(Message::tool_result("c1", "read", ToolResultValue::Text("x".into())))
    }

    #[test]
    fn an_empty_shape_borrows_the_request() {
        let request = request();
        assert!(matches!(RequestShape::default().apply(&request), Cow::Borrowed(_)));
    }

    #[test]
    fn the_shape_prefixes_system_and_tools_and_restores_names() {
        let shape = RequestShape {
            system_preamble: Some("Preamble.".into()),
            system_replacements: vec![("OpenCode".into(), "Claude Code".into())],
            tool_name_prefix: Some("mcp_".into()),
            ..RequestShape::default()
        };
        let shaped = shape.apply(&request()).into_owned();
        let system: Vec<&str> = shaped.system.iter().map(|part| part.text.as_str()).collect();
        assert_eq!(system, ["Preamble.", "You are Claude Code."]);
        assert_eq!(shaped.tools[0].name, "mcp_read");
        let names: Vec<&str> = shaped
            .messages
            .iter()
            .flat_map(|message| &message.content)
            .filter_map(|part| match part {
                ContentPart::ToolCall { name, .. } | ContentPart::ToolResult { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["mcp_read", "mcp_read"]);
        let mut event = LlmEvent::ToolInputStart { id: "c2".into(), name: "mcp_read".into() };
        shape.restore(&mut event);
        assert_eq!(event, LlmEvent::ToolInputStart { id: "c2".into(), name: "read".into() });
    }

    #[test]
    fn forced_options_win_and_the_limit_can_be_dropped() {
        let mut forced = ProviderOptions::default();
        forced.set("openai", json!({"store": false}));
        let shape = RequestShape { forced_options: forced, omit_max_tokens: true, ..RequestShape::default() };
        let mut request = request();
        request.options.set("openai", json!({"store": true, "reasoning_effort": "high"}));
        request.generation.max_tokens = Some(100);
        let shaped = shape.apply(&request).into_owned();
        assert_eq!(shaped.options.0["openai"], json!({"store": false, "reasoning_effort": "high"}));
        assert_eq!(shaped.generation.max_tokens, None);
    }
}
