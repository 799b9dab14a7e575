//! `todowrite` / `todoread`: the session's task list, kept by a [`TodoStore`] (the session store
//! implements it durably; [`MemoryTodos`] serves tests).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do.
    pub content: String,
    pub status: TodoStatus,
    pub priority: TodoPriority,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TodoPriority {
    High,
    Medium,
    Low,
}

/// Where a session's todo list lives.
pub trait TodoStore: Send + Sync {
    fn get(&self, session_id: &str) -> Vec<Todo>;
    fn set(&self, session_id: &str, todos: Vec<Todo>) -> Result<(), String>;
}

/// In-memory [`TodoStore`].
#[derive(Debug, Default)]
pub struct MemoryTodos(Mutex<HashMap<String, Vec<Todo>>>);

impl TodoStore for MemoryTodos {
    fn get(&self, session_id: &str) -> Vec<Todo> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(session_id).cloned().unwrap_or_default()
    }

    fn set(&self, session_id: &str, todos: Vec<Todo>) -> Result<(), String> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(session_id.to_owned(), todos);
        Ok(())
    }
}

/// The `todowrite` tool.
pub struct TodoWrite(pub Arc<dyn TodoStore>);
/// The `todoread` tool.
pub struct TodoRead(pub Arc<dyn TodoStore>);

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoWriteInput {
    /// The complete, updated todo list.
    pub todos: Vec<Todo>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoReadInput {}

impl TypedTool for TodoWrite {
    type Input = TodoWriteInput;
    const NAME: &'static str = "todowrite";

    fn description(&self) -> String {
        "Replaces the session's todo list. Use it to plan and track multi-step work; keep exactly one \
         task in_progress."
            .into()
    }

    fn run<'a>(&'a self, input: TodoWriteInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.ask_simple("todowrite", "*").await?;
            let open = input.todos.iter().filter(|todo| todo.status != TodoStatus::Completed).count();
            self.0
                .set(&ctx.session_id, input.todos.clone())
                .map_err(|err| ToolError::fatal(format!("cannot save todos: {err}")))?;
            let text = serde_json::to_string_pretty(&input.todos).unwrap_or_default();
            Ok(ToolOutput::text(text).with_title(format!("{open} todos")).with_metadata("todos", &input.todos))
        })
    }
}

impl TypedTool for TodoRead {
    type Input = TodoReadInput;
    const NAME: &'static str = "todoread";

    fn description(&self) -> String {
        "Reads the session's todo list.".into()
    }

    fn run<'a>(&'a self, _input: TodoReadInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.ask_simple("todoread", "*").await?;
            let todos = self.0.get(&ctx.session_id);
            let open = todos.iter().filter(|todo| todo.status != TodoStatus::Completed).count();
            Ok(ToolOutput::text(serde_json::to_string_pretty(&todos).unwrap_or_default())
                .with_title(format!("{open} todos")))
        })
    }
}
