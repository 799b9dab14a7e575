//! Plan mode: `plan_enter` (towards the `plan` agent) and `plan_exit` (back to `build`). Each asks
//! the user through the same pending-request mechanism as `question`; on yes the settlement carries
//! an [`AgentSwitch`] in its metadata, which tells the session runtime to switch the session's agent
//! and to add the synthetic user message; on no the model reads that the user declined.
//!
//! Where the plan lives follows the `plan` agent's edit rules: `.opencode/plans/<session>.md` in a
//! git worktree, else `<data>/plans/<session>.md`.

use std::path::Path;
use std::path::PathBuf;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

use crate::error::ToolError;
use crate::pending::Question;
use crate::pending::QuestionOption;
use crate::pending::ToolRef;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// What a settlement asks the runtime to do after an approved plan-mode switch. Serialised flat into
/// the settlement's metadata (`switchAgent`, `syntheticText`, `planPath`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSwitch {
    /// The agent the session continues with (`build` or `plan`).
    pub switch_agent: String,
    /// The text of the synthetic user message that starts the next turn under that agent.
    pub synthetic_text: String,
    /// The plan file.
    pub plan_path: PathBuf,
}

impl AgentSwitch {
    /// The switch a settlement's metadata carries, if any.
    pub fn from_metadata(metadata: &Map<String, Value>) -> Option<Self> {
        metadata.get("switchAgent")?;
        serde_json::from_value(Value::Object(metadata.clone())).ok()
    }

    fn into_metadata(self, output: ToolOutput) -> ToolOutput {
        output
            .with_metadata("switchAgent", self.switch_agent)
            .with_metadata("syntheticText", self.synthetic_text)
            .with_metadata("planPath", self.plan_path)
    }
}

/// Where plan files go.
#[derive(Debug, Clone)]
pub struct PlanFiles {
    /// `<data>/plans`, used outside git worktrees.
    pub data_plans: PathBuf,
}

impl PlanFiles {
    pub fn new(data_plans: impl Into<PathBuf>) -> Self {
        Self { data_plans: data_plans.into() }
    }

    /// The plan file of a session in a Location rooted at `root`.
    pub fn path(&self, root: &Path, session_id: &str) -> PathBuf {
        let name: String = session_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let file = format!("{name}.md");
        if root.join(".git").exists() {
            root.join(".opencode").join("plans").join(file)
        } else {
            self.data_plans.join(file)
        }
    }
}

/// The `plan_enter` tool.
#[derive(Debug, Clone)]
pub struct PlanEnter(pub PlanFiles);

/// The `plan_exit` tool.
#[derive(Debug, Clone)]
pub struct PlanExit(pub PlanFiles);

/// Neither tool takes arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanInput {}

impl TypedTool for PlanEnter {
    type Input = PlanInput;
    const NAME: &'static str = "plan_enter";

    fn description(&self) -> String {
        "Suggests switching to the plan agent to research and write a plan before changing anything. \
         Use it when a request is large or ambiguous enough to deserve a plan; the user decides."
            .into()
    }

    fn run<'a>(&'a self, _input: PlanInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.ask_simple(Self::NAME, "*").await?;
            let path = self.0.path(ctx.location.root(), &ctx.session_id);
            let shown = ctx.location.display(&path);
            let asked = Switch {
                question: format!("Would you like to switch to the plan agent and create a plan saved to {shown}?"),
                header: "Plan Mode",
                yes: "Switch to the plan agent for research and planning",
                no: "Stay with the build agent to continue making changes",
            };
            let output = match asked.ask(ctx).await? {
                Answer::Yes => AgentSwitch {
                    switch_agent: "plan".into(),
                    synthetic_text: "User has requested to enter plan mode. Switch to plan mode and begin planning."
                        .into(),
                    plan_path: path,
                }
                .into_metadata(
                    ToolOutput::text(format!(
                        "User confirmed to switch to plan mode. A new message has been created to switch you \
                         to plan mode. The plan file will be at {shown}. Begin planning."
                    ))
                    .with_title("Switching to plan agent"),
                ),
                Answer::No(feedback) => ToolOutput::text(format!(
                    "The user wants to stay with the build agent and not plan first. Continue with the task.{}",
                    feedback_suffix(feedback)
                ))
                .with_title("Staying with the build agent"),
            };
            Ok(output)
        })
    }
}

impl TypedTool for PlanExit {
    type Input = PlanInput;
    const NAME: &'static str = "plan_exit";

    fn description(&self) -> String {
        "Call when the plan is complete and written to the plan file: asks the user whether to switch to \
         the build agent and start implementing it. Do not call it before the plan is written."
            .into()
    }

    fn run<'a>(&'a self, _input: PlanInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.ask_simple(Self::NAME, "*").await?;
            let path = self.0.path(ctx.location.root(), &ctx.session_id);
            let shown = ctx.location.display(&path);
            let asked = Switch {
                question: format!(
                    "Plan at {shown} is complete. Would you like to switch to the build agent and start implementing?"
                ),
                header: "Build Agent",
                yes: "Switch to the build agent and start implementing the plan",
                no: "Stay with the plan agent to continue refining the plan",
            };
            let output = match asked.ask(ctx).await? {
                Answer::Yes => AgentSwitch {
                    switch_agent: "build".into(),
                    synthetic_text: format!(
                        "The plan at {shown} has been approved, you can now edit files. Execute the plan"
                    ),
                    plan_path: path,
                }
                .into_metadata(
                    ToolOutput::text("User approved switching to the build agent. Wait for further instructions.")
                        .with_title("Switching to build agent"),
                ),
                Answer::No(feedback) => ToolOutput::text(format!(
                    "The user wants to keep planning: stay in plan mode and continue refining the plan at {shown}.{}",
                    feedback_suffix(feedback)
                ))
                .with_title("Continuing to plan"),
            };
            Ok(output)
        })
    }
}

/// A yes/no question about switching agents.
struct Switch {
    question: String,
    header: &'static str,
    yes: &'static str,
    no: &'static str,
}

enum Answer {
    Yes,
    /// Declined; a free-text answer other than "No" is kept as feedback.
    No(Option<String>),
}

impl Switch {
    async fn ask(self, ctx: &ToolContext) -> Result<Answer, ToolError> {
        let option = |label: &str, description: &str| QuestionOption {
            label: label.to_owned(),
            description: description.to_owned(),
        };
        let question = Question {
            question: self.question,
            header: self.header.to_owned(),
            options: vec![option("Yes", self.yes), option("No", self.no)],
            multiple: None,
        };
        let tool = ToolRef { message_id: ctx.message_id.clone(), call_id: ctx.call_id.clone() };
        let answers =
            ctx.permissions.question(&ctx.session_id, &ctx.agent, Some(tool), vec![question], &ctx.cancel).await?;
        let chosen = answers.into_iter().next().unwrap_or_default();
        if chosen.iter().any(|label| label.eq_ignore_ascii_case("yes")) {
            return Ok(Answer::Yes);
        }
        let feedback = chosen.into_iter().filter(|label| !label.eq_ignore_ascii_case("no")).collect::<Vec<_>>();
        Ok(Answer::No((!feedback.is_empty()).then(|| feedback.join(", "))))
    }
}

fn feedback_suffix(feedback: Option<String>) -> String {
    feedback.map(|text| format!(" The user said: {text}")).unwrap_or_default()
}
