//! `edit`: exact string replacement, with a whitespace-tolerant line match as fallback and failure
//! messages that show the nearest candidates so the model can correct its `oldString`.

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// The `edit` tool.
#[derive(Debug, Default)]
pub struct Edit;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EditInput {
    /// The path of the file to modify.
    pub file_path: String,
    /// The text to replace (empty to create the file with `newString`).
    pub old_string: String,
    /// The text to replace it with (must differ from oldString).
    pub new_string: String,
    /// Replace every occurrence (default false).
    #[serde(default)]
    pub replace_all: Option<bool>,
}

impl TypedTool for Edit {
    type Input = EditInput;
    const NAME: &'static str = "edit";

    fn description(&self) -> String {
        "Replaces exact text in a file. `oldString` must match the file exactly (including \
         indentation) and be unique unless `replaceAll` is true; read the file first."
            .into()
    }

    fn run<'a>(&'a self, input: EditInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if input.old_string == input.new_string {
                return Err(ToolError::model("No changes to apply: oldString and newString are identical."));
            }
            let resolved = ctx.location.authorize(ctx, &input.file_path, false).await?;
            let shown = ctx.location.display(&resolved.path);
            let updated = if input.old_string.is_empty() {
                input.new_string.clone()
            } else {
                if resolved.path.is_dir() {
                    return Err(ToolError::model(format!("{shown} is a directory, not a file")));
                }
                if !resolved.path.exists() {
                    return Err(ToolError::model(format!("File not found: {shown}")));
                }
                let content = super::read_text(ctx, &resolved)?;
                replace(&content, &input.old_string, &input.new_string, input.replace_all.unwrap_or(false))?
            };
            super::ask_edit(ctx, std::slice::from_ref(&shown), None).await?;
            ctx.location.write_atomic(&resolved, updated.as_bytes())?;
            Ok(ToolOutput::text("Edit applied successfully.").with_title(shown))
        })
    }
}

/// Replaces `old` by `new` in `content`: exactly, else line-by-line ignoring surrounding whitespace.
pub fn replace(content: &str, old: &str, new: &str, replace_all: bool) -> Result<String, ToolError> {
    let exact: Vec<usize> = content.match_indices(old).map(|(index, _)| index).collect();
    if !exact.is_empty() {
        if exact.len() > 1 && !replace_all {
            return Err(multiple(content, &exact));
        }
        return Ok(if replace_all { content.replace(old, new) } else { content.replacen(old, new, 1) });
    }
    let trimmed = line_trimmed_matches(content, old);
    match trimmed.as_slice() {
        [] => Err(not_found(content, old)),
        [(start, end)] => Ok(format!("{}{new}{}", &content[..*start], &content[*end..])),
        many if replace_all => {
            let mut out = String::with_capacity(content.len());
            let mut last = 0;
            for (start, end) in many {
                out.push_str(&content[last..*start]);
                out.push_str(new);
                last = *end;
            }
            out.push_str(&content[last..]);
            Ok(out)
        }
        many => Err(multiple(content, &many.iter().map(|(start, _)| *start).collect::<Vec<_>>())),
    }
}

/// Byte ranges of windows whose lines equal `old`'s lines after trimming (OpenCode's LineTrimmed).
fn line_trimmed_matches(content: &str, old: &str) -> Vec<(usize, usize)> {
    let wanted: Vec<&str> = old.trim_end_matches('\n').lines().map(str::trim).collect();
    if wanted.is_empty() || wanted.iter().all(|line| line.is_empty()) {
        return Vec::new();
    }
    let lines = line_spans(content);
    let mut found = Vec::new();
    let mut index = 0;
    while index + wanted.len() <= lines.len() {
        let window = &lines[index..index + wanted.len()];
        if window.iter().zip(&wanted).all(|((start, end), want)| content[*start..*end].trim() == *want) {
            let start = window[0].0;
            let end = window[window.len() - 1].1;
            found.push((start, end));
            index += wanted.len();
        } else {
            index += 1;
        }
    }
    found
}

/// `(start, end)` of each line without its line terminator.
fn line_spans(content: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for line in content.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        spans.push((start, start + body.len()));
        start += line.len();
    }
    spans
}

fn line_of(content: &str, byte: usize) -> usize {
    content[..byte].matches('\n').count() + 1
}

fn multiple(content: &str, starts: &[usize]) -> ToolError {
    let lines: Vec<String> = starts.iter().map(|start| line_of(content, *start).to_string()).collect();
    ToolError::model(format!(
        "Found multiple matches for oldString ({} matches, at lines {}). Provide more surrounding context to make \
         the match unique, or set replaceAll to true to replace every occurrence.",
        starts.len(),
        lines.join(", ")
    ))
}

/// The failure message, with the most similar windows of the file.
fn not_found(content: &str, old: &str) -> ToolError {
    let mut message = "Could not find oldString in the file. It must match exactly, including whitespace, \
                       indentation, and line endings."
        .to_owned();
    let candidates = nearest(content, old, 3);
    if !candidates.is_empty() {
        message.push_str("\n\nThe most similar parts of the file are:");
        for (line, score, text) in candidates {
            message.push_str(&format!("\n\n(line {line}, {:.0}% similar)\n{text}", score * 100.0));
        }
        message.push_str("\n\nRead the file again and copy oldString from it exactly.");
    }
    ToolError::model(message)
}

/// Up to `count` windows of the file with as many lines as `old`, most similar first (above 30%).
pub fn nearest(content: &str, old: &str, count: usize) -> Vec<(usize, f64, String)> {
    let wanted: Vec<&str> = old.lines().collect();
    let lines: Vec<&str> = content.lines().collect();
    if wanted.is_empty() || lines.is_empty() {
        return Vec::new();
    }
    let size = wanted.len().min(lines.len());
    let wanted_grams: Vec<_> = wanted.iter().take(40).map(|line| bigrams(line.trim())).collect();
    let mut scored: Vec<(usize, f64)> = (0..=lines.len() - size)
        .take(20_000)
        .map(|start| {
            let total: f64 = wanted_grams
                .iter()
                .zip(&lines[start..start + size])
                .map(|(grams, line)| dice(grams, &bigrams(line.trim())))
                .sum();
            (start, total / wanted_grams.len().min(size) as f64)
        })
        .filter(|(_, score)| *score >= 0.3)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut picked: Vec<(usize, f64)> = Vec::new();
    for (start, score) in scored {
        if picked.iter().all(|(other, _)| start.abs_diff(*other) >= size) {
            picked.push((start, score));
        }
        if picked.len() == count {
            break;
        }
    }
    picked.into_iter().map(|(start, score)| (start + 1, score, lines[start..start + size].join("\n"))).collect()
}

fn bigrams(text: &str) -> Vec<(char, char)> {
    let chars: Vec<char> = text.chars().collect();
    let mut grams: Vec<(char, char)> = chars.windows(2).map(|pair| (pair[0], pair[1])).collect();
    grams.sort_unstable();
    grams
}

/// Sørensen–Dice similarity of two sorted bigram lists.
fn dice(a: &[(char, char)], b: &[(char, char)]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f64 / (a.len() + b.len()) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_unique_and_replace_all() {
        assert_eq!(replace("a b a", "b", "c", false).unwrap(), "a c a");
        assert_eq!(replace("a b a", "a", "x", true).unwrap(), "x b x");
        let err = replace("a\nb\na\n", "a", "x", false).unwrap_err();
        assert!(err.to_string().starts_with("Found multiple matches for oldString (2 matches, at lines 1, 3)"));
    }

    #[test]
    fn indentation_differences_fall_back_to_trimmed_lines() {
        let content = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let updated = replace(content, "let x = 1;\n  println!(\"{x}\");", "    let x = 2;", false).unwrap();
        assert_eq!(updated, "fn main() {\n    let x = 2;\n}\n");
    }

    #[test]
    fn a_miss_shows_the_nearest_candidates() {
        let content = "fn alpha() {}\nfn beta() -> u32 { 1 }\nfn gamma() {}\n";
        let err = replace(content, "fn beta() -> u64 { 1 }", "x", false).unwrap_err().to_string();
        assert!(err.starts_with("Could not find oldString in the file."), "{err}");
        assert!(err.contains("(line 2, "), "{err}");
        assert!(err.contains("fn beta() -> u32 { 1 }"), "{err}");
    }
}
