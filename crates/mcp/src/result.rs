//! MCP `tools/call` results as our tool outputs: text joined, images and binary resources as media,
//! embedded text resources and resource links as text, `structuredContent` kept, `isError` as a
//! model-visible tool error.
//!
//! The mapping works on the result's JSON form so it follows the MCP wire format, not one SDK's types.

use opencode_llm::MediaData;
use opencode_tool_registry::Media;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::ToolOutput;
use serde_json::Value;

/// Maps a `CallToolResult` (as JSON) of `tool` into a tool output, or a tool error when `isError`.
pub fn map_result(tool: &str, result: &Value) -> Result<ToolOutput, ToolError> {
    let mut texts: Vec<String> = Vec::new();
    let mut media = Vec::new();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        map_block(block, &mut texts, &mut media);
    }
    let text = texts.join("\n\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if text.is_empty() { format!("The MCP tool {tool} reported an error.") } else { text };
        return Err(ToolError::model(message));
    }
    let structured = result.get("structuredContent").filter(|value| !value.is_null()).cloned();
    Ok(ToolOutput { text, media, structured, ..ToolOutput::default() })
}

fn map_block(block: &Value, texts: &mut Vec<String>, media: &mut Vec<Media>) {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    match field("type") {
        Some("text") => texts.push(field("text").unwrap_or_default().to_owned()),
        Some("image") => media.push(Media {
            media_type: field("mimeType").unwrap_or("image/png").to_owned(),
            data: MediaData::Base64(field("data").unwrap_or_default().to_owned()),
            filename: None,
        }),
        Some("audio") => texts.push(format!("[audio ({}) omitted]", field("mimeType").unwrap_or("unknown type"))),
        Some("resource") => map_resource(block.get("resource").unwrap_or(&Value::Null), texts, media),
        Some("resource_link") => {
            let uri = field("uri").unwrap_or_default();
            let name = field("name").unwrap_or(uri);
            let mut line = format!("Resource link: {name} ({uri})");
            if let Some(description) = field("description") {
                line.push_str(&format!(": {description}"));
            }
            texts.push(line);
        }
        // A content type newer than this client: show it rather than lose it.
        _ => texts.push(block.to_string()),
    }
}

fn map_resource(resource: &Value, texts: &mut Vec<String>, media: &mut Vec<Media>) {
    let field = |name: &str| resource.get(name).and_then(Value::as_str);
    let uri = field("uri").unwrap_or_default();
    if let Some(text) = field("text") {
        texts.push(format!("Resource {uri}:\n{text}"));
    } else if let Some(blob) = field("blob") {
        media.push(Media {
            media_type: field("mimeType").unwrap_or("application/octet-stream").to_owned(),
            data: MediaData::Base64(blob.to_owned()),
            filename: Some(uri.to_owned()),
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_blocks_are_joined_and_structured_content_kept() {
        let result = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "structuredContent": {"x": 1}});
        let output = map_result("t", &result).unwrap();
        assert_eq!(output.text, "a\n\nb");
        assert_eq!(output.structured, Some(json!({"x": 1})));
    }

    #[test]
    fn images_and_blobs_become_media() {
        let result = json!({"content": [
            {"type": "image", "data": "AAA=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": "BBB="}},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b", "description": "the b file"}
        ]});
        let output = map_result("t", &result).unwrap();
        assert_eq!(output.media.len(), 2);
        assert_eq!(output.media[0].media_type, "image/png");
        assert_eq!(output.media[1].filename.as_deref(), Some("file:///a.pdf"));
        assert_eq!(output.text, "Resource file:///a.txt:\nhello\n\nResource link: b (file:///b): the b file");
    }

    #[test]
    fn is_error_is_a_model_visible_error() {
        let result = json!({"content": [{"type": "text", "text": "bad input"}], "isError": true});
        assert_eq!(map_result("t", &result), Err(ToolError::model("bad input")));
        let empty = json!({"content": [], "isError": true});
        assert_eq!(map_result("t", &empty), Err(ToolError::model("The MCP tool t reported an error.")));
    }
}
