//! `grep`: regex search over file contents with the ripgrep crates (gitignore-aware, parallel walk,
//! binary files skipped), at most 100 matches, files with recent changes first.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use grep_regex::RegexMatcher;
use grep_searcher::BinaryDetection;
use grep_searcher::SearcherBuilder;
use grep_searcher::sinks::Lossy;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// At most this many matches are returned.
pub const LIMIT: usize = 100;
/// Matched lines are cut at this many characters.
const MAX_LINE: usize = 2000;

/// The `grep` tool.
#[derive(Debug, Default)]
pub struct Grep;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression to search for.
    pub pattern: String,
    /// The directory (or file) to search (default: the project directory).
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files whose name matches this glob (e.g. `*.rs`, `*.{ts,tsx}`).
    #[serde(default)]
    pub include: Option<String>,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrepMatch {
    pub path: PathBuf,
    pub line: u64,
    pub text: String,
}

/// Searches `root` for `pattern`; stops after `limit + 1` matches (so truncation is known).
/// Matches are sorted by file modification time (newest first), then path and line.
pub fn search(
    root: &Path,
    pattern: &str,
    include: Option<&str>,
    limit: usize,
    threads: usize,
) -> Result<Vec<GrepMatch>, ToolError> {
    let matcher = RegexMatcher::new_line_matcher(pattern)
        .map_err(|err| ToolError::model(format!("Invalid regex `{pattern}`: {err}")))?;
    let mut builder = ignore::WalkBuilder::new(root);
    builder.hidden(false).threads(threads).filter_entry(|entry| entry.file_name() != ".git");
    if let Some(include) = include {
        let mut overrides = ignore::overrides::OverrideBuilder::new(root);
        overrides.add(include).map_err(|err| ToolError::model(format!("Invalid include glob `{include}`: {err}")))?;
        builder.overrides(overrides.build().map_err(|err| ToolError::model(format!("Invalid include glob: {err}")))?);
    }
    let found: Arc<Mutex<Vec<GrepMatch>>> = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    builder.build_parallel().run(|| {
        let matcher = matcher.clone();
        let found = Arc::clone(&found);
        let count = Arc::clone(&count);
        let mut searcher = SearcherBuilder::new().binary_detection(BinaryDetection::quit(0)).line_number(true).build();
        Box::new(move |entry| {
            if count.load(Ordering::Relaxed) > limit {
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else { return ignore::WalkState::Continue };
            if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                return ignore::WalkState::Continue;
            }
            let mut local = Vec::new();
            let result = searcher.search_path(
                &matcher,
                entry.path(),
                Lossy(|line, text| {
                    local.push(GrepMatch {
                        path: entry.path().to_owned(),
                        line,
                        text: cut(text.trim_end_matches(['\n', '\r'])),
                    });
                    Ok(count.fetch_add(1, Ordering::Relaxed) < limit)
                }),
            );
            if let Err(err) = result {
                tracing::debug!(path = %entry.path().display(), %err, "grep skipped a file");
            }
            if !local.is_empty() {
                found.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(local);
            }
            ignore::WalkState::Continue
        })
    });
    let mut found = std::mem::take(&mut *found.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    let mut modified = std::collections::HashMap::new();
    for found in &found {
        modified.entry(found.path.clone()).or_insert_with(|| {
            std::fs::metadata(&found.path).and_then(|meta| meta.modified()).unwrap_or(SystemTime::UNIX_EPOCH)
        });
    }
    found.sort_by(|a, b| {
        modified[&b.path].cmp(&modified[&a.path]).then_with(|| a.path.cmp(&b.path)).then(a.line.cmp(&b.line))
    });
    Ok(found)
}

impl TypedTool for Grep {
    type Input = GrepInput;
    const NAME: &'static str = "grep";

    fn description(&self) -> String {
        "Searches file contents with a regular expression (ripgrep syntax), respecting .gitignore. \
         Filter files with `include` (e.g. `*.rs`). Returns matching lines with line numbers, at most 100."
            .into()
    }

    fn run<'a>(&'a self, input: GrepInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let resolved = ctx.location.authorize(ctx, input.path.as_deref().unwrap_or("."), true).await?;
            ctx.ask_simple("grep", &input.pattern).await?;
            let root = resolved.path.clone();
            let (pattern, include) = (input.pattern.clone(), input.include.clone());
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
            let found =
                tokio::task::spawn_blocking(move || search(&root, &pattern, include.as_deref(), LIMIT, threads))
                    .await
                    .map_err(|err| ToolError::fatal(format!("grep task failed: {err}")))??;
            if found.is_empty() {
                return Ok(ToolOutput::text("No files found").with_title(input.pattern).with_metadata("matches", 0));
            }
            let truncated = found.len() > LIMIT;
            let shown = &found[..found.len().min(LIMIT)];
            let mut out =
                format!("Found {} matches{}\n", shown.len(), if truncated { " (showing first 100)" } else { "" });
            let mut current: Option<&Path> = None;
            for found in shown {
                if current != Some(found.path.as_path()) {
                    out.push_str(&format!("\n{}:\n", ctx.location.display(&found.path)));
                    current = Some(&found.path);
                }
                out.push_str(&format!("  Line {}: {}\n", found.line, found.text));
            }
            if truncated {
                out.push_str(&format!(
                    "\n(Results are truncated: showing first {LIMIT} matches. Consider using a more specific path or pattern.)\n"
                ));
            }
            Ok(ToolOutput::text(out)
                .with_title(input.pattern)
                .with_metadata("matches", shown.len())
                .with_metadata("truncated", truncated))
        })
    }
}

fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_LINE) {
        Some((index, _)) => format!("{}...", &text[..index]),
        None => text.to_owned(),
    }
}
