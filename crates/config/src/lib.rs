//! OpenCode's configuration, read the way OpenCode users already write it.
//!
//! This crate owns the typed shape of `opencode.json(c)`, where the files are found and how they merge,
//! the XDG paths every other crate uses, and stored provider credentials.

mod agent;
mod paths;
mod permission;
mod tool_output;

pub use agent::{AgentConfig, AgentMode};
pub use paths::Paths;
pub use permission::{PermissionAction, PermissionConfig, PermissionRule};
pub use tool_output::ToolOutputConfig;
