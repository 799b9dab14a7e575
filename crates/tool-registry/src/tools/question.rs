//! `question`: asks the user multiple-choice questions through the same pending-request mechanism
//! as permissions, and returns the answers.

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::pending::Question as Asked;
use crate::pending::ToolRef;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// The `question` tool.
#[derive(Debug, Default)]
pub struct Question;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct QuestionInput {
    /// The questions to ask.
    pub questions: Vec<Asked>,
}

impl TypedTool for Question {
    type Input = QuestionInput;
    const NAME: &'static str = "question";

    fn description(&self) -> String {
        "Asks the user one or more multiple-choice questions and waits for the answers. Use it when a \
         decision needs the user's input."
            .into()
    }

    fn run<'a>(&'a self, input: QuestionInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            ctx.ask_simple("question", "*").await?;
            if input.questions.is_empty() {
                return Err(ToolError::model("Ask at least one question"));
            }
            if let Some(long) = input.questions.iter().find(|q| q.header.chars().count() > 30) {
                return Err(ToolError::model(format!("The header `{}` is longer than 30 characters", long.header)));
            }
            let tool = ToolRef { message_id: ctx.message_id.clone(), call_id: ctx.call_id.clone() };
            let answers = ctx
                .permissions
                .question(&ctx.session_id, &ctx.agent, Some(tool), input.questions.clone(), &ctx.cancel)
                .await?;
            let lines: Vec<String> = input
                .questions
                .iter()
                .enumerate()
                .map(|(index, question)| {
                    let answer =
                        answers.get(index).filter(|a| !a.is_empty()).map_or("Unanswered".to_owned(), |a| a.join(", "));
                    format!("\"{}\"=\"{answer}\"", question.question)
                })
                .collect();
            Ok(ToolOutput::text(format!(
                "User has answered your questions: {}. You can now continue with the user's answers in mind.",
                lines.join(", ")
            ))
            .with_title(format!("Asked {} question(s)", input.questions.len()))
            .with_metadata("answers", answers))
        })
    }
}
