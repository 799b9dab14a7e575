//! `/find` (text search in the instance directory with the `grep` tool's search: gitignore-aware,
//! binary files skipped, at most 100 matches, recently changed files first) in OpenCode's ripgrep-JSON
//! shape, and `/find/symbol`, which is always empty: this server has no language server yet.

use std::path::Path;

use axum::Json;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::Q;
use crate::state::blocking;

/// At most this many matches (the `grep` tool's limit).
const LIMIT: usize = opencode_tool_registry::tools::grep::LIMIT;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/find", "find.text", "Search file contents for a regular expression", find_route)
            .query(&["pattern"])
            .returns::<Vec<TextMatch>>(),
        Op::get(
            "/find/symbol",
            "find.symbols",
            "Workspace symbols (always empty: no language server is available)",
            symbol_route,
        )
        .query(&["query"])
        .returns::<Vec<Symbol>>(),
    ]
}

/// One matching line, as ripgrep's JSON `match` data (what OpenCode returns).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct TextMatch {
    /// The file, relative to the instance directory.
    path: Text,
    /// The matching line, with its line ending.
    lines: Text,
    line_number: u64,
    /// Byte offset of the line's start in the file.
    absolute_offset: u64,
    submatches: Vec<Submatch>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct Text {
    text: String,
}

/// One match inside the line: its text and byte range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct Submatch {
    #[serde(rename = "match")]
    matched: Text,
    start: usize,
    end: usize,
}

/// `Symbol` (never produced yet; the shape keeps clients typed).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct Symbol {
    name: String,
    kind: u32,
    location: serde_json::Value,
}

#[derive(Debug, Deserialize)]
pub(crate) struct FindQuery {
    #[serde(default)]
    pattern: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SymbolQuery {
    #[serde(default)]
    #[allow(dead_code, reason = "accepted for compatibility; there is no symbol index")]
    query: Option<String>,
}

async fn find_route(Dir(i): Dir, Q(q): Q<FindQuery>) -> Result<Json<Vec<TextMatch>>, ApiError> {
    let pattern = q.pattern.filter(|p| !p.is_empty()).ok_or_else(|| ApiError::bad("pattern is required"))?;
    let root = i.directory.clone();
    blocking(move || find_text(&root, &pattern)).await.map(Json)
}

async fn symbol_route(Dir(_i): Dir, Q(_q): Q<SymbolQuery>) -> Json<Vec<Symbol>> {
    Json(Vec::new())
}

/// Searches `root` for `pattern` (ripgrep regex syntax) and shapes the matches like ripgrep's JSON.
pub(crate) fn find_text(root: &Path, pattern: &str) -> Result<Vec<TextMatch>, ApiError> {
    let regex =
        regex::Regex::new(pattern).map_err(|err| ApiError::bad(format!("invalid pattern {pattern:?}: {err}")))?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let found = opencode_tool_registry::tools::grep::search(root, pattern, None, LIMIT, threads)
        .map_err(|err| ApiError::bad(err.to_string()))?;
    let mut offsets = LineOffsets::default();
    Ok(found
        .into_iter()
        .take(LIMIT)
        .map(|found| {
            let relative = found.path.strip_prefix(root).unwrap_or(&found.path).to_string_lossy().into_owned();
            let submatches = regex
                .find_iter(&found.text)
                .filter(|m| !m.is_empty())
                .map(|m| Submatch { matched: Text { text: m.as_str().to_owned() }, start: m.start(), end: m.end() })
                .collect();
            TextMatch {
                absolute_offset: offsets.of(&found.path, found.line),
                path: Text { text: relative },
                lines: Text { text: format!("{}\n", found.text) },
                line_number: found.line,
                submatches,
            }
        })
        .collect())
}

/// Byte offsets of line starts, read once per file.
#[derive(Default)]
struct LineOffsets {
    files: std::collections::HashMap<std::path::PathBuf, Vec<u64>>,
}

impl LineOffsets {
    /// The offset of 1-based `line` in `path` (0 when the file cannot be read).
    fn of(&mut self, path: &Path, line: u64) -> u64 {
        let starts = self.files.entry(path.to_path_buf()).or_insert_with(|| {
            let bytes = std::fs::read(path).unwrap_or_default();
            std::iter::once(0).chain(memchr_newlines(&bytes)).collect()
        });
        usize::try_from(line.saturating_sub(1)).ok().and_then(|index| starts.get(index)).copied().unwrap_or(0)
    }
}

fn memchr_newlines(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i as u64 + 1)
}
