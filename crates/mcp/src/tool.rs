//! One MCP server tool as a registry [`Tool`]: named `<server>_<tool>`, the server's JSON Schema as
//! parameters, asked under its own permission key like OpenCode, called with a deadline.

use std::sync::Arc;
use std::sync::Weak;
use std::time::Duration;

use futures_util::future::BoxFuture;
use opencode_tool_registry::PermissionAsk;
use opencode_tool_registry::Tool;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::ToolOutput;
use rmcp::model::CallToolRequestParams;
use serde_json::Map;
use serde_json::Value;
use serde_json::json;

use crate::manager::Inner;
use crate::result::map_result;

/// A tool of a connected MCP server.
pub struct McpTool {
    pub(crate) name: String,
    pub(crate) server: String,
    /// The tool's name on the server.
    pub(crate) remote: String,
    pub(crate) description: String,
    pub(crate) parameters: Value,
    pub(crate) inner: Weak<Inner>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("name", &self.name).field("server", &self.server).finish_non_exhaustive()
    }
}

impl McpTool {
    /// Builds the registry tool of `tool` (as listed by `server`).
    pub(crate) fn new(server: &str, tool: &rmcp::model::Tool, inner: Weak<Inner>) -> Self {
        let description =
            tool.description.as_deref().map(str::to_owned).or_else(|| tool.title.clone()).unwrap_or_default();
        Self {
            name: crate::name::tool_name(server, &tool.name),
            server: server.to_owned(),
            remote: tool.name.to_string(),
            description,
            parameters: object_schema(Value::Object(tool.input_schema.as_ref().clone())),
            inner,
        }
    }

    /// The server this tool belongs to.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's own name on its server.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.ask(PermissionAsk {
            permission: self.name.clone(),
            patterns: vec!["*".into()],
            always: vec!["*".into()],
            metadata: Map::new(),
        })
        .await?;
        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::model(format!(
                    "The {} tool takes a JSON object of arguments, not {other}.",
                    self.name
                )));
            }
        };
        let inner = self.inner.upgrade().ok_or_else(|| ToolError::model("MCP servers have been shut down."))?;
        let (connection, timeout) = inner.connection(&self.server).map_err(|status| {
            ToolError::model(format!("The MCP server {} is not available ({status}).", self.server))
        })?;
        drop(inner);
        let mut params = CallToolRequestParams::new(self.remote.clone());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, connection.peer.call_tool(params)) => outcome,
            () = ctx.cancel.cancelled() => return Err(ToolError::Interrupted),
        };
        let result = match outcome {
            Err(_elapsed) => return Err(self.timed_out(timeout)),
            Ok(Err(err)) => {
                let stderr = connection.stderr_tail();
                let stderr = if stderr.is_empty() { String::new() } else { format!(" (server stderr: {stderr})") };
                return Err(ToolError::model(format!(
                    "The MCP server {} failed while running {}: {err}{stderr}",
                    self.server, self.remote
                )));
            }
            Ok(Ok(result)) => result,
        };
        let json = serde_json::to_value(&result)
            .map_err(|err| ToolError::model(format!("The MCP result of {} could not be read: {err}", self.name)))?;
        let output = map_result(&self.name, &json)?;
        Ok(output.with_metadata("mcp", json!({"server": self.server, "tool": self.remote})))
    }

    fn timed_out(&self, timeout: Duration) -> ToolError {
        ToolError::model(format!(
            "The MCP server {} did not answer {} within {}s; the call was abandoned. Continue without it or try again later.",
            self.server,
            self.remote,
            timeout.as_secs_f64()
        ))
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> String {
        self.description.clone()
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn execute<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(input, ctx))
    }
}

/// Providers want an object schema with `properties`; servers sometimes omit either.
fn object_schema(mut schema: Value) -> Value {
    if let Value::Object(object) = &mut schema {
        object.entry("type").or_insert_with(|| json!("object"));
        if object.get("type") == Some(&json!("object")) {
            object.entry("properties").or_insert_with(|| json!({}));
        }
        object.remove("$schema");
    }
    schema
}

/// Shared handle used by the manager's tool lists.
pub(crate) type SharedTool = Arc<McpTool>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_become_object_schemas_with_properties() {
        assert_eq!(object_schema(json!({})), json!({"type": "object", "properties": {}}));
        let full = json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
        assert_eq!(object_schema(full.clone()), full);
        assert_eq!(
            object_schema(json!({"$schema": "x", "type": "object"})),
            json!({"type": "object", "properties": {}})
        );
    }
}
