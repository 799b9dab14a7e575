//! Unified diffs of file edits, in the shape OpenCode's edit tools put into metadata: `diff` (a
//! two-file patch whose common indentation is trimmed) and `filediff` (`{file, before, after,
//! additions, deletions}`).

use serde::Serialize;
use similar::ChangeTag;
use similar::TextDiff;

/// OpenCode's `filediff` metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    pub file: String,
    pub before: String,
    pub after: String,
    pub additions: usize,
    pub deletions: usize,
}

impl FileDiff {
    /// Compares line-ending-normalised contents of `file`.
    pub fn new(file: &str, before: &str, after: &str) -> Self {
        let (before, after) = (normalize_line_endings(before), normalize_line_endings(after));
        let diff = TextDiff::from_lines(&before, &after);
        let (mut additions, mut deletions) = (0, 0);
        for change in diff.iter_all_changes() {
            match change.tag() {
                ChangeTag::Insert => additions += 1,
                ChangeTag::Delete => deletions += 1,
                ChangeTag::Equal => {}
            }
        }
        Self { file: file.to_owned(), before, after, additions, deletions }
    }

    /// The unified two-file patch (3 lines of context), common indentation trimmed.
    pub fn unified(&self) -> String {
        let diff = TextDiff::from_lines(&self.before, &self.after);
        let body = diff.unified_diff().context_radius(3).header(&self.file, &self.file).to_string();
        trim_indentation(&format!("Index: {}\n{}\n{body}", self.file, "=".repeat(67)))
    }
}

/// `\r\n` to `\n`.
pub fn normalize_line_endings(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// Removes the indentation every changed or context line shares, so deep code stays readable.
fn trim_indentation(diff: &str) -> String {
    let is_content =
        |line: &str| line.starts_with([' ', '+', '-']) && !line.starts_with("---") && !line.starts_with("+++");
    let indent = diff
        .lines()
        .filter(|line| is_content(line))
        .map(|line| &line[1..])
        .filter(|body| !body.trim().is_empty())
        .map(|body| body.len() - body.trim_start().len())
        .min();
    let Some(indent) = indent.filter(|indent| *indent > 0) else { return diff.to_owned() };
    let lines: Vec<String> = diff
        .split('\n')
        .map(|line| {
            if is_content(line) {
                let body = &line[1..];
                let cut = body.char_indices().nth(indent).map_or(body.len(), |(at, _)| at);
                let cut = if body[..cut].trim().is_empty() { cut } else { 0 };
                format!("{}{}", &line[..1], &body[cut..])
            } else {
                line.to_owned()
            }
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unified_diff_counts_and_trims() {
        let diff = FileDiff::new("src/a.rs", "    a\n    b\n    c\n", "    a\n    x\n    c\n");
        assert_eq!((diff.additions, diff.deletions), (1, 1));
        let text = diff.unified();
        assert!(text.starts_with("Index: src/a.rs\n====="), "{text}");
        assert!(text.contains("--- src/a.rs\n+++ src/a.rs\n@@ -1,3 +1,3 @@\n a\n-b\n+x\n c\n"), "{text}");
    }

    #[test]
    fn line_endings_do_not_show_as_changes() {
        let diff = FileDiff::new("f", "a\r\nb\r\n", "a\r\nc\r\n");
        assert_eq!((diff.additions, diff.deletions), (1, 1));
        assert!(!diff.unified().contains('\r'));
    }
}
