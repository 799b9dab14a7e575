//! `task`: delegates work to a subagent session. Running the subagent is the session runtime's job,
//! behind [`SubagentRunner`]; this tool checks the `task` permission for the subagent type, lists the
//! available subagents in its description and formats the result.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_config::PermissionAction;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::agent::Agent;
use crate::agent::Agents;
use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// How the description lists a subagent without a description (OpenCode's wording).
const UNDESCRIBED: &str = "This subagent should only be called manually by the user.";

/// What the runtime is asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentRequest {
    pub parent_session_id: String,
    pub parent_call_id: String,
    pub agent: String,
    pub description: String,
    pub prompt: String,
    /// Resume this earlier task session instead of starting one.
    pub task_id: Option<String>,
}

/// The subagent's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentResult {
    pub task_id: String,
    /// The subagent's final answer.
    pub output: String,
    /// The `provider/model` the subagent ran with (tool metadata `model`), when known.
    pub model: Option<String>,
}

/// Runs a subagent session to completion (implemented by the session runtime).
pub trait SubagentRunner: Send + Sync {
    fn run<'a>(
        &'a self,
        request: SubagentRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<SubagentResult, ToolError>>;
}

/// The `task` tool.
pub struct Task {
    runner: Arc<dyn SubagentRunner>,
    agents: Agents,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskInput {
    /// A short (3-5 words) description of the task.
    pub description: String,
    /// The task for the agent to perform.
    pub prompt: String,
    /// The type of specialized agent to use.
    pub subagent_type: String,
    /// Resume a previous task with this id.
    #[serde(default)]
    pub task_id: Option<String>,
}

impl Task {
    pub fn new(runner: Arc<dyn SubagentRunner>, agents: Agents) -> Self {
        Self { runner, agents }
    }
}

/// The tool's description as `caller` sees it: only the subagents its `task` permission does not
/// deny (rules keyed by subagent name, last match wins), as OpenCode lists them per agent.
pub fn description_for(agents: &Agents, caller: &Agent) -> String {
    describe(
        agents.subagents().filter(|agent| caller.permission.evaluate("task", &agent.name) != PermissionAction::Deny),
    )
}

/// The model-visible output of a finished task (`<task id=… state="completed">`).
pub fn result_text(result: &SubagentResult) -> String {
    format!(
        "<task id=\"{}\" state=\"completed\">\n<task_result>\n{}\n</task_result>\n</task>",
        result.task_id, result.output
    )
}

fn describe<'a>(subagents: impl Iterator<Item = &'a Arc<Agent>>) -> String {
    let mut text =
        "Launches a subagent to handle a complex, multi-step task autonomously. Available agent types:\n".to_owned();
    for agent in subagents {
        let description = agent.description.as_deref().unwrap_or(UNDESCRIBED);
        text.push_str(&format!("- {}: {description}\n", agent.name));
    }
    text
}

impl TypedTool for Task {
    type Input = TaskInput;
    const NAME: &'static str = "task";

    fn description(&self) -> String {
        describe(self.agents.subagents())
    }

    fn run<'a>(&'a self, input: TaskInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(agent) = self.agents.subagents().find(|agent| agent.name == input.subagent_type) else {
                let known: Vec<&str> = self
                    .agents
                    .subagents()
                    .filter(|agent| ctx.agent.permission.evaluate("task", &agent.name) != PermissionAction::Deny)
                    .map(|agent| agent.name.as_str())
                    .collect();
                return Err(ToolError::model(format!(
                    "Unknown agent type: {}. Available: {}",
                    input.subagent_type,
                    known.join(", ")
                )));
            };
            ctx.ask_simple("task", &agent.name).await?;
            let request = SubagentRequest {
                parent_session_id: ctx.session_id.clone(),
                parent_call_id: ctx.call_id.clone(),
                agent: agent.name.clone(),
                description: input.description.clone(),
                prompt: input.prompt,
                task_id: input.task_id,
            };
            let result = self.runner.run(request, ctx).await?;
            let output = ToolOutput::text(result_text(&result))
                .with_title(input.description)
                .with_metadata("sessionId", result.task_id);
            Ok(match result.model {
                Some(model) => output.with_metadata("model", model),
                None => output,
            })
        })
    }
}
