//! `tool_output`: the aggregate bound on what a tool call returns to the model.

use serde::{Deserialize, Serialize};

/// Limits for model-visible tool output; whichever is reached first applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolOutputConfig {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for ToolOutputConfig {
    fn default() -> Self {
        Self { max_lines: 2000, max_bytes: 50 * 1024 }
    }
}
