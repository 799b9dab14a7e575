//! `opencode-mcp`: OpenCode's Model Context Protocol client, built on the official Rust SDK (`rmcp`)
//! behind this crate's own types.
//!
//! - **Servers.** [`McpManager::start`] takes the config's `mcp` map and connects each enabled server
//!   in the background with its `timeout` (default [`DEFAULT_CONNECT_TIMEOUT`]); start-up and the
//!   first turn never wait. Local servers are child processes (own process group, `environment`
//!   added to the inherited environment, the Location as cwd) speaking stdio; remote servers speak
//!   streamable HTTP (falling back to the legacy HTTP+SSE transport) with the configured headers.
//!   Each server has a [`ServerStatus`].
//! - **OAuth.** Remote servers that answer 401 are authorized as OpenCode does ([`oauth`]):
//!   discovery, dynamic client registration, PKCE, tokens in `mcp-auth.json`, refresh. A server
//!   without usable tokens is `needs_auth` until `opencode mcp auth <name>` ([`oauth::authorize`]).
//! - **Tools.** Each server tool is a registry tool named `<server>_<tool>` (sanitised, [`tool_name`])
//!   with the server's JSON Schema; [`McpManager::attach`] keeps a tool registry in step as servers
//!   become ready, change their lists (`notifications/tools/list_changed`) or go away. Calls go
//!   through the registry (permission key = the tool name, output bounding) and end with a tool error
//!   after [`DEFAULT_CALL_TIMEOUT`] when a server crashes or never answers.
//! - **Instructions.** Server `instructions` are the `mcp/instructions` Context Source
//!   ([`McpManager::register_context`]).
//! - **Run-time control.** Servers can be added, disconnected (`disabled`, tools removed) and
//!   connected again while running ([`McpManager::add`], [`McpManager::disconnect`],
//!   [`McpManager::connect`]), and signed in over an API in two steps
//!   ([`McpManager::start_auth`], [`McpManager::finish_auth`]) or with the loopback flow
//!   ([`McpManager::authenticate`]); [`McpManager::events`] reports tool-list changes.
//! - **Lifetime.** [`McpManager::shutdown`], or dropping the last handle, kills every local server's
//!   process group.

mod connect;
mod context;
mod error;
mod flow;
mod manager;
mod name;
pub mod oauth;
mod result;
mod sse;
mod tool;

pub use connect::Transport;
pub use context::InstructionsSource;
pub use context::MCP_INSTRUCTIONS;
pub use context::ServerInstructions;
pub use error::McpError;
pub use flow::AuthStart;
pub use manager::DEFAULT_CALL_TIMEOUT;
pub use manager::DEFAULT_CONNECT_TIMEOUT;
pub use manager::McpEvent;
pub use manager::McpManager;
pub use manager::McpOptions;
pub use manager::ServerReport;
pub use manager::ServerStatus;
pub use name::sanitize;
pub use name::tool_name;
pub use oauth::AuthStatus;
pub use oauth::McpAuthStore;
pub use oauth::OAuthSettings;
pub use oauth::OAuthTarget;
pub use result::map_result;
pub use tool::McpTool;
