//! Server `instructions` as one Context Source, `mcp/instructions`, rendered as OpenCode does:
//! `<mcp_instructions><server name="…">…</server></mcp_instructions>`. A server that connects later
//! (or goes away) changes the value, which the runtime admits at the next Safe Provider-Turn Boundary.

use opencode_system_context::ContextSource;
use opencode_system_context::Contribution;
use opencode_system_context::Loaded;
use opencode_system_context::SourceKey;
use opencode_system_context::SystemContext;
use opencode_system_context::SystemContextError;
use opencode_system_context::SystemContextRegistry;
use serde::Deserialize;
use serde::Serialize;

use crate::manager::McpManager;

/// Contribution and source key of the MCP server instructions.
pub const MCP_INSTRUCTIONS: &str = "mcp/instructions";

/// One server's instructions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerInstructions {
    pub server: String,
    pub text: String,
}

/// The instructions of the connected servers, observed when the context is loaded.
pub struct InstructionsSource {
    key: SourceKey,
    value: Vec<ServerInstructions>,
}

impl ContextSource for InstructionsSource {
    type Value = Vec<ServerInstructions>;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<Vec<ServerInstructions>> {
        Loaded::Value(self.value.clone())
    }

    fn baseline(&self, current: &Vec<ServerInstructions>) -> String {
        render(current)
    }

    fn update(&self, _previous: &Vec<ServerInstructions>, current: &Vec<ServerInstructions>) -> String {
        format!("The MCP server instructions are now:\n{}", render(current))
    }

    fn removed(&self, _previous: &Vec<ServerInstructions>) -> Option<String> {
        Some("MCP server instructions no longer apply.".to_owned())
    }
}

impl McpManager {
    /// The current instructions as a context: one source, or none when no connected server has any.
    pub fn instructions_context(&self) -> SystemContext {
        let value: Vec<ServerInstructions> =
            self.instructions().into_iter().map(|(server, text)| ServerInstructions { server, text }).collect();
        if value.is_empty() {
            return SystemContext::empty();
        }
        match SourceKey::new(MCP_INSTRUCTIONS) {
            Ok(key) => SystemContext::make(InstructionsSource { key, value }),
            Err(_) => SystemContext::empty(),
        }
    }

    /// Registers the instructions with a Location's System Context Registry. The registry holds the
    /// manager weakly; keep the returned contribution as long as the Location lives.
    pub fn register_context(&self, registry: &SystemContextRegistry) -> Result<Contribution, SystemContextError> {
        let manager = self.downgrade();
        registry.register(SourceKey::new(MCP_INSTRUCTIONS)?, move || {
            let manager = manager.upgrade();
            async move { manager.map(|manager| manager.instructions_context()).unwrap_or_default() }
        })
    }
}

fn render(servers: &[ServerInstructions]) -> String {
    let mut text = String::from("<mcp_instructions>\n");
    for server in servers {
        text.push_str(&format!("<server name=\"{}\">\n{}\n</server>\n", server.server, server.text.trim()));
    }
    text.push_str("</mcp_instructions>");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_render_per_server() {
        let servers = vec![
            ServerInstructions { server: "a".into(), text: "Use a.\n".into() },
            ServerInstructions { server: "b".into(), text: "Use b.".into() },
        ];
        assert_eq!(
            render(&servers),
            "<mcp_instructions>\n<server name=\"a\">\nUse a.\n</server>\n<server name=\"b\">\nUse b.\n</server>\n</mcp_instructions>"
        );
    }
}
