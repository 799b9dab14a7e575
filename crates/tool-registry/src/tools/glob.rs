//! `glob`: file paths matching a glob pattern, gitignore-aware, newest first (at most 100).

use std::time::SystemTime;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// At most this many paths are returned.
pub const LIMIT: usize = 100;

/// The `glob` tool.
#[derive(Debug, Default)]
pub struct Glob;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob pattern to match files against (e.g. `**/*.rs`).
    pub pattern: String,
    /// The directory to search in (default: the project directory).
    #[serde(default)]
    pub path: Option<String>,
}

impl TypedTool for Glob {
    type Input = GlobInput;
    const NAME: &'static str = "glob";

    fn description(&self) -> String {
        "Finds files by glob pattern (e.g. `**/*.rs`, `src/**/*.ts`), respecting .gitignore. Returns \
         paths sorted by modification time, newest first, at most 100."
            .into()
    }

    fn run<'a>(&'a self, input: GlobInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let resolved = ctx.location.authorize(ctx, input.path.as_deref().unwrap_or("."), true).await?;
            ctx.ask_simple("glob", &input.pattern).await?;
            if !resolved.path.is_dir() {
                return Err(ToolError::model(format!("{} is not a directory", ctx.location.display(&resolved.path))));
            }
            let matcher = globset::GlobBuilder::new(&input.pattern)
                .literal_separator(false)
                .build()
                .map_err(|err| ToolError::model(format!("Invalid glob pattern `{}`: {err}", input.pattern)))?
                .compile_matcher();
            let root = resolved.path.clone();
            let walker =
                ignore::WalkBuilder::new(&root).hidden(false).filter_entry(|entry| entry.file_name() != ".git").build();
            let mut found: Vec<(SystemTime, std::path::PathBuf)> = Vec::new();
            for entry in walker.filter_map(Result::ok) {
                ctx.check_cancelled()?;
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    continue;
                }
                let relative = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                if matcher.is_match(relative)
                    || relative.file_name().is_some_and(|name| !input.pattern.contains('/') && matcher.is_match(name))
                {
                    let modified =
                        entry.metadata().ok().and_then(|meta| meta.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
                    found.push((modified, entry.into_path()));
                }
            }
            found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            let truncated = found.len() > LIMIT;
            let mut lines: Vec<String> = found.iter().take(LIMIT).map(|(_, path)| ctx.location.display(path)).collect();
            if lines.is_empty() {
                lines.push("No files found".into());
            }
            if truncated {
                lines.push(String::new());
                lines.push(format!(
                    "(Results are truncated: showing first {LIMIT} results. Consider using a more specific path or pattern.)"
                ));
            }
            Ok(ToolOutput::text(lines.join("\n"))
                .with_title(ctx.location.display(&root))
                .with_metadata("count", found.len().min(LIMIT))
                .with_metadata("truncated", truncated))
        })
    }
}
