//! `list`: a directory tree (gitignore-aware, common build folders skipped, at most 100 files).

use std::collections::BTreeMap;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// At most this many files are listed.
pub const LIMIT: usize = 100;

/// Folders never listed.
pub const IGNORED: &[&str] = &[
    "node_modules",
    "__pycache__",
    ".git",
    "dist",
    "build",
    "target",
    "vendor",
    "bin",
    "obj",
    ".idea",
    ".vscode",
    ".zig-cache",
    "zig-out",
    ".coverage",
    "coverage",
    "tmp",
    "temp",
    ".cache",
    "cache",
    "logs",
    ".venv",
    "venv",
    "env",
];

/// The `list` tool.
#[derive(Debug, Default)]
pub struct List;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListInput {
    /// The directory to list (default: the project directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Extra glob patterns to leave out.
    #[serde(default)]
    pub ignore: Option<Vec<String>>,
}

impl TypedTool for List {
    type Input = ListInput;
    const NAME: &'static str = "list";

    fn description(&self) -> String {
        "Lists files and directories as a tree. Respects .gitignore; skips common build and dependency folders.".into()
    }

    fn run<'a>(&'a self, input: ListInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let resolved = ctx.location.authorize(ctx, input.path.as_deref().unwrap_or("."), true).await?;
            let shown = ctx.location.display(&resolved.path);
            ctx.ask_simple("list", &shown).await?;
            if !resolved.path.is_dir() {
                return Err(ToolError::model(format!("{shown} is not a directory")));
            }
            let mut overrides = ignore::overrides::OverrideBuilder::new(&resolved.path);
            for pattern in IGNORED
                .iter()
                .map(|name| format!("!{name}/"))
                .chain(input.ignore.iter().flatten().map(|p| format!("!{p}")))
            {
                overrides.add(&pattern).map_err(|err| ToolError::model(format!("Invalid ignore pattern: {err}")))?;
            }
            let overrides =
                overrides.build().map_err(|err| ToolError::model(format!("Invalid ignore pattern: {err}")))?;
            let walker = ignore::WalkBuilder::new(&resolved.path).hidden(false).overrides(overrides).build();
            let mut tree: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut count = 0;
            for entry in walker.filter_map(Result::ok) {
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    continue;
                }
                if count == LIMIT {
                    count += 1;
                    break;
                }
                count += 1;
                let relative = entry.path().strip_prefix(&resolved.path).unwrap_or(entry.path());
                let dir = relative.parent().map(|dir| dir.display().to_string()).unwrap_or_default();
                let name = relative.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
                tree.entry(dir).or_default().push(name);
            }
            let mut out = format!("{}/\n", resolved.path.display());
            for (dir, mut files) in tree {
                files.sort();
                let depth = if dir.is_empty() { 1 } else { dir.matches('/').count() + 2 };
                if !dir.is_empty() {
                    out.push_str(&format!("{}{dir}/\n", "  ".repeat(depth - 1)));
                }
                for file in files {
                    out.push_str(&format!("{}{file}\n", "  ".repeat(depth)));
                }
            }
            if count > LIMIT {
                out.push_str(&format!(
                    "\n(Results are truncated: showing first {LIMIT} files. Use a more specific path.)\n"
                ));
            }
            Ok(ToolOutput::text(out).with_title(shown).with_metadata("truncated", count > LIMIT))
        })
    }
}
