//! `write`: create or overwrite a file (permission `edit`).

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// The `write` tool.
#[derive(Debug, Default)]
pub struct Write;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteInput {
    /// The path of the file to write (relative to the project directory).
    pub file_path: String,
    /// The complete content of the file.
    pub content: String,
}

impl TypedTool for Write {
    type Input = WriteInput;
    const NAME: &'static str = "write";

    fn description(&self) -> String {
        "Writes a file, replacing it if it exists. Prefer edit for changes to existing files. Parent \
         directories are created."
            .into()
    }

    fn run<'a>(&'a self, input: WriteInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let resolved = ctx.location.authorize(ctx, &input.file_path, false).await?;
            if resolved.path.is_dir() {
                return Err(ToolError::model(format!("{} is a directory", input.file_path)));
            }
            let existed = resolved.path.exists();
            let shown = ctx.location.display(&resolved.path);
            let before =
                if existed { super::read_text(ctx, &resolved).await.unwrap_or_default() } else { String::new() };
            let diff = crate::diff::FileDiff::new(&shown, &before, &input.content).unified();
            super::ask_edit(ctx, std::slice::from_ref(&shown), Some(diff)).await?;
            super::write_text(ctx, &resolved, &input.content).await?;
            Ok(ToolOutput::text("Wrote file successfully.")
                .with_title(shown.clone())
                .with_metadata("filepath", resolved.path.display().to_string())
                .with_metadata("exists", existed))
        })
    }
}
