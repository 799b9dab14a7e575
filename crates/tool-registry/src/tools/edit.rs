//! `edit`: string replacement with OpenCode's chain of replacers when the exact text is not in the
//! file (trimmed lines, anchored blocks, collapsed whitespace, flexible indentation, over-escaped
//! text, trimmed boundaries, context), refusing ambiguous matches and showing the nearest
//! candidates on a miss so the model can correct its `oldString`. CRLF files keep their line
//! endings; the result carries OpenCode's `diff` and `filediff` metadata.

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::diff::FileDiff;
use crate::diff::normalize_line_endings;
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
            if resolved.path.is_dir() {
                return Err(ToolError::model(format!("{shown} is a directory, not a file")));
            }
            let (before, after) = if input.old_string.is_empty() {
                let before =
                    if resolved.path.exists() { super::read_text(ctx, &resolved).await? } else { String::new() };
                (before, input.new_string.clone())
            } else {
                if !resolved.path.exists() {
                    return Err(ToolError::model(format!("File not found: {shown}")));
                }
                let content = super::read_text(ctx, &resolved).await?;
                let updated = replace_keeping_line_endings(
                    &content,
                    &input.old_string,
                    &input.new_string,
                    input.replace_all.unwrap_or(false),
                )?;
                (content, updated)
            };
            let filediff = FileDiff::new(&shown, &before, &after);
            let diff = filediff.unified();
            super::ask_edit(ctx, std::slice::from_ref(&shown), Some(diff.clone())).await?;
            super::write_text(ctx, &resolved, &after).await?;
            Ok(ToolOutput::text("Edit applied successfully.")
                .with_title(shown)
                .with_metadata("diff", diff)
                .with_metadata("filediff", filediff))
        })
    }
}

/// [`replace`] for a file whose line endings must survive: the model writes `\n`. A file with only
/// CRLF endings is matched as LF and written back as CRLF, so line-based replacers cannot leave a
/// lone `\n`; a mixed file is matched with `old`/`new` in CRLF, as OpenCode does.
pub fn replace_keeping_line_endings(
    content: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<String, ToolError> {
    let newlines = content.matches('\n').count();
    let crlf = content.matches("\r\n").count();
    if crlf == 0 {
        return replace(content, &normalize_line_endings(old), &normalize_line_endings(new), replace_all);
    }
    if crlf == newlines {
        let updated = replace(
            &normalize_line_endings(content),
            &normalize_line_endings(old),
            &normalize_line_endings(new),
            replace_all,
        )?;
        return Ok(updated.replace('\n', "\r\n"));
    }
    replace(content, &with_line_ending(old, "\r\n"), &with_line_ending(new, "\r\n"), replace_all)
}

/// `text` with its line endings (whatever they were) turned into `ending`.
fn with_line_ending(text: &str, ending: &str) -> String {
    let normalized = normalize_line_endings(text);
    if ending == "\n" { normalized } else { normalized.replace('\n', ending) }
}

/// Replaces `old` by `new` in `content` with OpenCode's replacer chain: each replacer proposes
/// strings that occur in the file; the first one that occurs exactly once wins (with `replace_all`,
/// the first that occurs at all). A proposal occurring several times is ambiguous and skipped.
pub fn replace(content: &str, old: &str, new: &str, replace_all: bool) -> Result<String, ToolError> {
    if old == new {
        return Err(ToolError::model("No changes to apply: oldString and newString are identical."));
    }
    let mut ambiguous: Option<String> = None;
    for (_, replacer) in REPLACERS {
        for mut search in replacer(content, old) {
            // A block of CRLF lines ends in `\r`: that belongs to the line ending, not the match.
            if search.ends_with('\r') && !old.ends_with('\r') {
                search.pop();
            }
            if search.is_empty() {
                continue;
            }
            let Some(index) = content.find(&search) else { continue };
            if replace_all {
                return Ok(content.replace(&search, new));
            }
            if content.rfind(&search) != Some(index) {
                ambiguous.get_or_insert(search);
                continue;
            }
            return Ok(format!("{}{new}{}", &content[..index], &content[index + search.len()..]));
        }
    }
    Err(match ambiguous {
        Some(search) => multiple(content, &search),
        None => not_found(content, old),
    })
}

/// A replacer proposes strings of the file that `find` may have meant.
type Replacer = fn(&str, &str) -> Vec<String>;

/// OpenCode's order: most literal first.
pub const REPLACER_NAMES: [&str; 9] = [
    "simple",
    "line-trimmed",
    "block-anchor",
    "whitespace-normalized",
    "indentation-flexible",
    "escape-normalized",
    "trimmed-boundary",
    "context-aware",
    "multi-occurrence",
];

const REPLACERS: [(&str, Replacer); 9] = [
    (REPLACER_NAMES[0], simple),
    (REPLACER_NAMES[1], line_trimmed),
    (REPLACER_NAMES[2], block_anchor),
    (REPLACER_NAMES[3], whitespace_normalized),
    (REPLACER_NAMES[4], indentation_flexible),
    (REPLACER_NAMES[5], escape_normalized),
    (REPLACER_NAMES[6], trimmed_boundary),
    (REPLACER_NAMES[7], context_aware),
    (REPLACER_NAMES[8], multi_occurrence),
];

/// Block-anchor: the average similarity of the middle lines a sole candidate needs.
const SINGLE_CANDIDATE_SIMILARITY: f64 = 0.65;
/// Block-anchor: the similarity the best of several candidates needs.
const MULTIPLE_CANDIDATES_SIMILARITY: f64 = 0.65;

/// The text itself.
fn simple(_content: &str, find: &str) -> Vec<String> {
    vec![find.to_owned()]
}

/// `find`'s lines without a trailing empty line (a final newline).
fn search_lines(find: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = find.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    lines
}

/// Windows of the file's lines equal to `find`'s lines after trimming each line.
fn line_trimmed(content: &str, find: &str) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let wanted = search_lines(find);
    windows(&lines, wanted.len())
        .filter(|(_, window)| window.iter().zip(&wanted).all(|(line, want)| line.trim() == want.trim()))
        .map(|(_, window)| window.join("\n"))
        .collect()
}

/// Blocks whose first and last lines match `find`'s (trimmed), when the lines between are similar
/// enough (Levenshtein); the best of several candidates.
fn block_anchor(content: &str, find: &str) -> Vec<String> {
    let lines: Vec<&str> = content.split('\n').collect();
    let wanted = search_lines(find);
    if wanted.len() < 3 {
        return Vec::new();
    }
    let (first, last) = (wanted[0].trim(), wanted[wanted.len() - 1].trim());
    let candidates: Vec<(usize, usize)> = (0..lines.len())
        .filter(|&start| lines[start].trim() == first)
        .filter_map(|start| (start + 2..lines.len()).find(|&end| lines[end].trim() == last).map(|end| (start, end)))
        .collect();
    let block = |(start, end): (usize, usize)| lines[start..=end].join("\n");
    match candidates.as_slice() {
        [] => Vec::new(),
        [only] => {
            let score = middle_similarity(&lines[only.0..=only.1], &wanted, Some(SINGLE_CANDIDATE_SIMILARITY));
            if score >= SINGLE_CANDIDATE_SIMILARITY { vec![block(*only)] } else { Vec::new() }
        }
        many => {
            let mut best: Option<((usize, usize), f64)> = None;
            for candidate in many {
                let score = middle_similarity(&lines[candidate.0..=candidate.1], &wanted, None);
                if best.is_none_or(|(_, top)| score > top) {
                    best = Some((*candidate, score));
                }
            }
            best.filter(|(_, score)| *score >= MULTIPLE_CANDIDATES_SIMILARITY)
                .map(|(candidate, _)| vec![block(candidate)])
                .unwrap_or_default()
        }
    }
}

/// Mean similarity of the lines between the anchors (1.0 when there are none); stops adding once
/// `enough` is reached, as OpenCode does for a sole candidate.
fn middle_similarity(block: &[&str], wanted: &[&str], enough: Option<f64>) -> f64 {
    let checked = (wanted.len() - 2).min(block.len().saturating_sub(2));
    if checked == 0 {
        return 1.0;
    }
    let mut score = 0.0;
    for index in 1..(wanted.len() - 1).min(block.len() - 1) {
        let (have, want) = (block[index].trim(), wanted[index].trim());
        let longest = have.chars().count().max(want.chars().count());
        if longest == 0 {
            continue;
        }
        score += (1.0 - levenshtein(have, want) as f64 / longest as f64) / checked as f64;
        if enough.is_some_and(|enough| score >= enough) {
            break;
        }
    }
    score
}

/// Lines (or parts of a line, or windows of lines) equal to `find` once runs of whitespace are
/// collapsed.
fn whitespace_normalized(content: &str, find: &str) -> Vec<String> {
    let wanted = collapse_whitespace(find);
    let lines: Vec<&str> = content.split('\n').collect();
    let mut found = Vec::new();
    let words: Vec<&str> = find.split_whitespace().collect();
    for line in &lines {
        let normalized = collapse_whitespace(line);
        if normalized == wanted {
            found.push((*line).to_owned());
        } else if normalized.contains(&wanted)
            && let Some(part) = words_with_whitespace(line, &words)
        {
            found.push(part.to_owned());
        }
    }
    let find_lines = find.split('\n').count();
    if find_lines > 1 {
        found.extend(
            windows(&lines, find_lines)
                .map(|(_, window)| window.join("\n"))
                .filter(|block| collapse_whitespace(block) == wanted),
        );
    }
    found
}

/// Windows of lines equal to `find` once the indentation both share is removed.
fn indentation_flexible(content: &str, find: &str) -> Vec<String> {
    let wanted = remove_indentation(find);
    let lines: Vec<&str> = content.split('\n').collect();
    windows(&lines, find.split('\n').count())
        .map(|(_, window)| window.join("\n"))
        .filter(|block| remove_indentation(block) == wanted)
        .collect()
}

/// `find` with the escapes a model over-escaped (`\n`, `\t`, `\"`, …) undone, or windows of lines
/// that read the same once unescaped.
fn escape_normalized(content: &str, find: &str) -> Vec<String> {
    let wanted = unescape(find);
    let mut found = Vec::new();
    if content.contains(&wanted) {
        found.push(wanted.clone());
    }
    let lines: Vec<&str> = content.split('\n').collect();
    found.extend(
        windows(&lines, wanted.split('\n').count())
            .map(|(_, window)| window.join("\n"))
            .filter(|block| unescape(block) == wanted),
    );
    found
}

/// `find` without surrounding whitespace, or windows of lines equal to it once trimmed.
fn trimmed_boundary(content: &str, find: &str) -> Vec<String> {
    let trimmed = find.trim();
    if trimmed == find {
        return Vec::new();
    }
    let mut found = Vec::new();
    if content.contains(trimmed) {
        found.push(trimmed.to_owned());
    }
    let lines: Vec<&str> = content.split('\n').collect();
    found.extend(
        windows(&lines, find.split('\n').count())
            .map(|(_, window)| window.join("\n"))
            .filter(|block| block.trim() == trimmed),
    );
    found
}

/// Blocks of the same length anchored by `find`'s first and last lines in which at least half of
/// the non-empty middle lines match (trimmed).
fn context_aware(content: &str, find: &str) -> Vec<String> {
    let wanted = search_lines(find);
    if wanted.len() < 3 {
        return Vec::new();
    }
    let lines: Vec<&str> = content.split('\n').collect();
    let (first, last) = (wanted[0].trim(), wanted[wanted.len() - 1].trim());
    let mut found = Vec::new();
    for start in (0..lines.len()).filter(|&start| lines[start].trim() == first) {
        let Some(end) = (start + 2..lines.len()).find(|&end| lines[end].trim() == last) else { continue };
        let block = &lines[start..=end];
        if block.len() != wanted.len() {
            continue;
        }
        let (mut matching, mut non_empty) = (0, 0);
        for (have, want) in block[1..block.len() - 1].iter().zip(&wanted[1..wanted.len() - 1]) {
            let (have, want) = (have.trim(), want.trim());
            if !have.is_empty() || !want.is_empty() {
                non_empty += 1;
                if have == want {
                    matching += 1;
                }
            }
        }
        if non_empty == 0 || matching as f64 / non_empty as f64 >= 0.5 {
            found.push(block.join("\n"));
            break;
        }
    }
    found
}

/// The text itself, once per occurrence (only `replaceAll` can use several).
fn multi_occurrence(content: &str, find: &str) -> Vec<String> {
    if content.contains(find) { vec![find.to_owned()] } else { Vec::new() }
}

/// Every window of `size` consecutive lines, with its first line's index.
fn windows<'a>(lines: &'a [&'a str], size: usize) -> impl Iterator<Item = (usize, &'a [&'a str])> + 'a {
    let count = if size == 0 || size > lines.len() { 0 } else { lines.len() - size + 1 };
    (0..count).map(move |start| (start, &lines[start..start + size]))
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first part of `line` made of `words` separated by runs of whitespace.
fn words_with_whitespace<'a>(line: &'a str, words: &[&str]) -> Option<&'a str> {
    let (head, rest) = words.split_first()?;
    for (start, _) in line.match_indices(head) {
        let mut end = start + head.len();
        let mut matched = true;
        for word in rest {
            let after = &line[end..];
            let gap = after.len() - after.trim_start().len();
            if gap == 0 || !after[gap..].starts_with(word) {
                matched = false;
                break;
            }
            end += gap + word.len();
        }
        if matched {
            return Some(&line[start..end]);
        }
    }
    None
}

/// Removes the smallest indentation of the non-blank lines from every non-blank line.
fn remove_indentation(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let indent = |line: &str| line.chars().take_while(|c| c.is_whitespace()).count();
    let Some(least) = lines.iter().filter(|line| !line.trim().is_empty()).map(|line| indent(line)).min() else {
        return text.to_owned();
    };
    lines
        .iter()
        .map(|line| if line.trim().is_empty() { (*line).to_owned() } else { line.chars().skip(least).collect() })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Undoes `\n`, `\t`, `\r`, `\'`, `\"`, `` \` ``, `\\`, `\$` and backslash-newline.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let replaced = match (c, chars.peek()) {
            ('\\', Some('n')) => Some('\n'),
            ('\\', Some('t')) => Some('\t'),
            ('\\', Some('r')) => Some('\r'),
            ('\\', Some(&other @ ('\'' | '"' | '`' | '\\' | '\n' | '$'))) => Some(other),
            _ => None,
        };
        match replaced {
            Some(replacement) => {
                chars.next();
                out.push(replacement);
            }
            None => out.push(c),
        }
    }
    out
}

/// Edit distance in characters.
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            current[j + 1] = (previous[j + 1] + 1).min(current[j] + 1).min(previous[j] + cost);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

fn line_of(content: &str, byte: usize) -> usize {
    content[..byte].matches('\n').count() + 1
}

/// The ambiguity message: where the matched text occurs, so the model can add context.
fn multiple(content: &str, search: &str) -> ToolError {
    let starts: Vec<usize> = content.match_indices(search).map(|(index, _)| index).collect();
    let mut message = format!(
        "Found multiple matches for oldString ({} matches). Provide more surrounding context to make the match \
         unique, or set replaceAll to true to replace every occurrence.\n\nThe candidates are:",
        starts.len()
    );
    for start in starts.iter().take(5) {
        let line = line_of(content, *start);
        let text: String = search.lines().next().unwrap_or_default().trim().chars().take(120).collect();
        message.push_str(&format!("\n- line {line}: {text}"));
        if let Some(before) = content[..*start].lines().rev().map(str::trim).find(|line| !line.is_empty()) {
            let before: String = before.chars().take(120).collect();
            message.push_str(&format!(" (after `{before}`)"));
        }
    }
    if starts.len() > 5 {
        message.push_str(&format!("\n- … and {} more", starts.len() - 5));
    }
    ToolError::model(message)
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

    fn proposals(replacer: &str, content: &str, find: &str) -> Vec<String> {
        let (_, run) = REPLACERS.iter().find(|(name, _)| *name == replacer).unwrap();
        run(content, find)
    }

    #[test]
    fn exact_unique_and_replace_all() {
        assert_eq!(replace("a b a", "b", "c", false).unwrap(), "a c a");
        assert_eq!(replace("a b a", "a", "x", true).unwrap(), "x b x");
        let err = replace("x\na\nb\na\n", "a", "z", false).unwrap_err().to_string();
        assert!(err.starts_with("Found multiple matches for oldString (2 matches)"), "{err}");
        assert!(err.contains("- line 2: a (after `x`)\n- line 4: a (after `b`)"), "{err}");
    }

    #[test]
    fn identical_strings_are_refused() {
        let err = replace("a", "a", "a", false).unwrap_err().to_string();
        assert!(err.starts_with("No changes to apply"), "{err}");
    }

    #[test]
    fn line_trimmed_ignores_indentation_per_line() {
        let content = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";
        let updated = replace(content, "let x = 1;\n  println!(\"{x}\");", "    let x = 2;", false).unwrap();
        assert_eq!(updated, "fn main() {\n    let x = 2;\n}\n");
        assert_eq!(proposals("line-trimmed", "  a\n  b\n", "a\nb\n"), ["  a\n  b"]);
    }

    #[test]
    fn block_anchor_accepts_similar_middles_only() {
        let content = "fn f() {\n    let total = 1;\n    total\n}\n";
        // Middle lines differ slightly: accepted on the anchors.
        let near = "fn f() {\n    let totl = 1;\n    total\n}";
        assert_eq!(proposals("block-anchor", content, near), ["fn f() {\n    let total = 1;\n    total\n}"]);
        // Middle lines unrelated: refused.
        let far = "fn f() {\n    zzzzzzzzzzzzzz();\n    qqqqqqqqq\n}";
        assert!(proposals("block-anchor", content, far).is_empty());
        // Fewer than three lines: not this replacer's business.
        assert!(proposals("block-anchor", content, "fn f() {\n}").is_empty());
    }

    #[test]
    fn block_anchor_picks_the_most_similar_of_several() {
        let content = "start\nalpha one\nend\nstart\nbeta two\nend\n";
        assert_eq!(proposals("block-anchor", content, "start\nbeta twx\nend"), ["start\nbeta two\nend"]);
        let updated = replace(content, "start\nbeta twx\nend", "replaced", false).unwrap();
        assert_eq!(updated, "start\nalpha one\nend\nreplaced\n");
    }

    #[test]
    fn whitespace_normalized_matches_inside_a_line() {
        let content = "let  value =   compute( a,  b );\n";
        assert_eq!(
            proposals("whitespace-normalized", content, "value = compute( a, b )"),
            ["value =   compute( a,  b )"]
        );
        let updated = replace(content, "value = compute( a, b )", "v = 1", false).unwrap();
        assert_eq!(updated, "let  v = 1;\n");
    }

    #[test]
    fn indentation_flexible_matches_a_reindented_block() {
        let content = "        if x {\n            y();\n        }\n";
        let find = "if x {\n    y();\n}";
        assert_eq!(proposals("indentation-flexible", content, find), ["        if x {\n            y();\n        }"]);
    }

    #[test]
    fn escape_normalized_undoes_over_escaping() {
        let content = "say(\"hi\")\nnext\n";
        // Proposed as unescaped text and as the window of lines that reads the same.
        assert_eq!(proposals("escape-normalized", content, "say(\\\"hi\\\")\\nnext"), ["say(\"hi\")\nnext"; 2]);
        assert_eq!(unescape("a\\tb\\\\c\\$d\\`"), "a\tb\\c$d`");
    }

    #[test]
    fn trimmed_boundary_and_context_aware() {
        assert_eq!(proposals("trimmed-boundary", "x = 1\n", "  x = 1  "), ["x = 1"; 2]);
        assert!(proposals("trimmed-boundary", "x = 1\n", "x = 1").is_empty());
        let content = "begin\n  a\n  b\n  c\nfinish\n";
        // Two of three middle lines match: at least half, accepted.
        assert_eq!(proposals("context-aware", content, "begin\na\nb\nzzz\nfinish"), ["begin\n  a\n  b\n  c\nfinish"]);
        assert!(proposals("context-aware", content, "begin\nx\ny\nc\nfinish").is_empty());
    }

    #[test]
    fn a_fuzzy_match_found_twice_is_refused() {
        let content = "  a\n  b\n--\n  a\n  b\n";
        let err = replace(content, "a\nb", "z", false).unwrap_err().to_string();
        assert!(err.starts_with("Found multiple matches for oldString (2 matches)"), "{err}");
        assert!(err.contains("line 1") && err.contains("line 4"), "{err}");
        assert_eq!(replace(content, "a\nb", "z", true).unwrap(), "z\n--\nz\n");
    }

    #[test]
    fn crlf_files_stay_crlf_through_fuzzy_matches() {
        let content = "first\r\n    second\r\nthird\r\n";
        let updated = replace_keeping_line_endings(content, "second\n  third", "2nd\nthird\nfourth", false).unwrap();
        assert_eq!(updated, "first\r\n2nd\r\nthird\r\nfourth\r\n");
        // Mixed files: only the edited text gets CRLF.
        let mixed = "a\r\nb\nc\r\n";
        assert_eq!(replace_keeping_line_endings(mixed, "b\nc", "x\ny", false).unwrap(), "a\r\nx\r\ny\r\n");
        assert_eq!(replace_keeping_line_endings("a\nb\n", "a\r\nb", "c", false).unwrap(), "c\n");
    }

    #[test]
    fn crlf_line_endings_are_converted_for_the_match() {
        assert_eq!(with_line_ending("a\nb\r\nc", "\r\n"), "a\r\nb\r\nc");
        assert_eq!(with_line_ending("a\r\nb", "\n"), "a\nb");
    }

    #[test]
    fn levenshtein_counts_characters() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("é", "e"), 1);
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
