//! `apply_patch`: the OpenAI (Codex) patch format — add, delete, update and move files in one call.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: hello.txt
//! +Hello
//! *** Update File: src/app.py
//! *** Move to: src/main.py
//! @@ def greet():
//! -print("Hi")
//! +print("Hello")
//! *** Delete File: obsolete.txt
//! *** End Patch
//! ```
//!
//! Every hunk is checked before any file changes; each file is then written atomically.

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// The `apply_patch` tool.
#[derive(Debug, Default)]
pub struct ApplyPatch;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplyPatchInput {
    /// The full patch text, from `*** Begin Patch` to `*** End Patch`.
    pub patch_text: String,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    Add { path: String, contents: String },
    Delete { path: String },
    Update { path: String, move_to: Option<String>, chunks: Vec<Chunk> },
}

/// One `@@` section of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The `@@ <line>` anchor: a line to find before the old lines.
    pub context: Option<String>,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// `*** End of File`: the old lines are at the end of the file.
    pub end_of_file: bool,
}

/// Parses a patch.
pub fn parse(text: &str) -> Result<Vec<Hunk>, ToolError> {
    let lines: Vec<&str> = text.trim().lines().map(|line| line.strip_suffix('\r').unwrap_or(line)).collect();
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Err(invalid("the patch is empty"));
    };
    if first.trim() != "*** Begin Patch" {
        return Err(invalid("the first line must be `*** Begin Patch`"));
    }
    if last.trim() != "*** End Patch" {
        return Err(invalid("the last line must be `*** End Patch`"));
    }
    let body = &lines[1..lines.len() - 1];
    let mut hunks = Vec::new();
    let mut index = 0;
    while index < body.len() {
        let line = body[index].trim_end();
        index += 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            let mut contents = String::new();
            while index < body.len() && !body[index].starts_with("*** ") {
                let Some(added) = body[index].strip_prefix('+') else {
                    return Err(invalid(&format!("line `{}` in Add File {path} must start with `+`", body[index])));
                };
                contents.push_str(added);
                contents.push('\n');
                index += 1;
            }
            hunks.push(Hunk::Add { path: path.trim().to_owned(), contents });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            hunks.push(Hunk::Delete { path: path.trim().to_owned() });
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            let mut move_to = None;
            if let Some(target) = body.get(index).and_then(|line| line.strip_prefix("*** Move to: ")) {
                move_to = Some(target.trim().to_owned());
                index += 1;
            }
            let mut chunks: Vec<Chunk> = Vec::new();
            while index < body.len() {
                let line = body[index];
                if line == "*** End of File" {
                    if let Some(chunk) = chunks.last_mut() {
                        chunk.end_of_file = true;
                    }
                    index += 1;
                    continue;
                }
                if line.starts_with("*** ") {
                    break;
                }
                if let Some(anchor) = line.strip_prefix("@@") {
                    let anchor = anchor.trim();
                    chunks.push(Chunk {
                        context: (!anchor.is_empty()).then(|| anchor.to_owned()),
                        old_lines: Vec::new(),
                        new_lines: Vec::new(),
                        end_of_file: false,
                    });
                    index += 1;
                    continue;
                }
                if chunks.is_empty() {
                    chunks.push(Chunk {
                        context: None,
                        old_lines: Vec::new(),
                        new_lines: Vec::new(),
                        end_of_file: false,
                    });
                }
                let Some(chunk) = chunks.last_mut() else { break };
                match line.chars().next() {
                    Some('+') => chunk.new_lines.push(line[1..].to_owned()),
                    Some('-') => chunk.old_lines.push(line[1..].to_owned()),
                    Some(' ') => {
                        chunk.old_lines.push(line[1..].to_owned());
                        chunk.new_lines.push(line[1..].to_owned());
                    }
                    None => {
                        chunk.old_lines.push(String::new());
                        chunk.new_lines.push(String::new());
                    }
                    Some(_) => {
                        return Err(invalid(&format!(
                            "line `{line}` in Update File {path} must start with ` `, `+`, `-` or `@@`"
                        )));
                    }
                }
                index += 1;
            }
            if chunks.iter().all(|chunk| chunk.old_lines.is_empty() && chunk.new_lines.is_empty()) && move_to.is_none()
            {
                return Err(invalid(&format!("Update File {path} has no changes")));
            }
            hunks.push(Hunk::Update { path: path.trim().to_owned(), move_to, chunks });
        } else {
            return Err(invalid(&format!(
                "`{line}` is not a hunk header (`*** Add File: `, `*** Delete File: `, `*** Update File: `)"
            )));
        }
    }
    if hunks.is_empty() {
        return Err(invalid("the patch contains no hunks"));
    }
    Ok(hunks)
}

/// Applies update chunks to a file's content.
pub fn apply_chunks(path: &str, content: &str, chunks: &[Chunk]) -> Result<String, ToolError> {
    let mut lines: Vec<String> = content.split('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            let Some(found) = seek(&lines, std::slice::from_ref(context), cursor, false) else {
                return Err(ToolError::model(format!("Failed to find context `{context}` in {path}")));
            };
            cursor = found + 1;
        }
        if chunk.old_lines.is_empty() {
            replacements.push((lines.len(), 0, chunk.new_lines.clone()));
            continue;
        }
        let mut old = chunk.old_lines.as_slice();
        let mut new = chunk.new_lines.as_slice();
        let mut found = seek(&lines, old, cursor, chunk.end_of_file);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, cursor, chunk.end_of_file);
        }
        let Some(start) = found else {
            return Err(ToolError::model(format!(
                "Failed to find expected lines in {path}:\n{}\nRead the file again; the lines must match it.",
                chunk.old_lines.join("\n")
            )));
        };
        replacements.push((start, old.len(), new.to_vec()));
        cursor = start + old.len();
    }
    replacements.sort_by_key(|(start, _, _)| *start);
    for (start, len, new) in replacements.into_iter().rev() {
        lines.splice(start..start + len, new);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

/// Finds `pattern` in `lines` at or after `from`: exactly, then ignoring trailing, then all
/// surrounding whitespace. `eof` tries the end of the file first.
fn seek(lines: &[String], pattern: &[String], from: usize, eof: bool) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let comparisons: [fn(&str, &str) -> bool; 3] =
        [|a, b| a == b, |a, b| a.trim_end() == b.trim_end(), |a, b| a.trim() == b.trim()];
    for equal in comparisons {
        let matches = |start: usize| pattern.iter().zip(&lines[start..]).all(|(p, l)| equal(l, p));
        if eof && last >= from && matches(last) {
            return Some(last);
        }
        if let Some(start) = (from..=last).find(|&start| matches(start)) {
            return Some(start);
        }
    }
    None
}

impl TypedTool for ApplyPatch {
    type Input = ApplyPatchInput;
    const NAME: &'static str = "apply_patch";

    fn description(&self) -> String {
        "Applies a patch in the apply_patch format: `*** Begin Patch`, then hunks `*** Add File: <path>` \
         (lines prefixed `+`), `*** Delete File: <path>`, `*** Update File: <path>` (optional `*** Move to: \
         <path>`, then `@@ <anchor line>` sections of ` ` context, `-` removed and `+` added lines), then \
         `*** End Patch`. Paths are relative to the project directory."
            .into()
    }

    fn run<'a>(&'a self, input: ApplyPatchInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let hunks = parse(&input.patch_text)?;
            let mut plan: Vec<(
                char,
                crate::location::ResolvedPath,
                Option<String>,
                Option<crate::location::ResolvedPath>,
            )> = Vec::new();
            for hunk in &hunks {
                match hunk {
                    Hunk::Add { path, contents } => {
                        let resolved = ctx.location.authorize(ctx, path, false).await?;
                        plan.push(('A', resolved, Some(contents.clone()), None));
                    }
                    Hunk::Delete { path } => {
                        let resolved = ctx.location.authorize(ctx, path, false).await?;
                        if !resolved.path.is_file() {
                            return Err(ToolError::model(format!("Cannot delete {path}: file not found")));
                        }
                        plan.push(('D', resolved, None, None));
                    }
                    Hunk::Update { path, move_to, chunks } => {
                        let resolved = ctx.location.authorize(ctx, path, false).await?;
                        if !resolved.path.is_file() {
                            return Err(ToolError::model(format!("Cannot update {path}: file not found")));
                        }
                        let content = super::read_text(ctx, &resolved).await?;
                        let updated = apply_chunks(path, &content, chunks)?;
                        let target = match move_to {
                            Some(target) => Some(ctx.location.authorize(ctx, target, false).await?),
                            None => None,
                        };
                        plan.push(('M', resolved, Some(updated), target));
                    }
                }
            }
            let shown: Vec<String> = plan
                .iter()
                .flat_map(|(_, path, _, target)| std::iter::once(path).chain(target.iter()))
                .map(|path| ctx.location.display(&path.path))
                .collect();
            super::ask_edit(ctx, &shown, Some(input.patch_text.clone())).await?;
            let mut summary = Vec::new();
            for (kind, resolved, contents, target) in plan {
                let shown = ctx.location.display(&resolved.path);
                match (kind, contents, target) {
                    ('D', _, _) => {
                        std::fs::remove_file(&resolved.path)
                            .map_err(|err| crate::error::io_model_error("delete", &resolved.path, &err))?;
                        summary.push(format!("D {shown}"));
                    }
                    (_, Some(contents), Some(target)) => {
                        super::write_text(ctx, &target, &contents).await?;
                        std::fs::remove_file(&resolved.path)
                            .map_err(|err| crate::error::io_model_error("delete", &resolved.path, &err))?;
                        summary.push(format!("M {}", ctx.location.display(&target.path)));
                    }
                    (kind, Some(contents), None) => {
                        super::write_text(ctx, &resolved, &contents).await?;
                        summary.push(format!("{kind} {shown}"));
                    }
                    _ => {}
                }
            }
            Ok(ToolOutput::text(format!("Success. Updated the following files:\n{}", summary.join("\n")))
                .with_title(format!("{} files", summary.len())))
        })
    }
}

fn invalid(reason: &str) -> ToolError {
    ToolError::model(format!(
        "Invalid patch: {reason}. Use the apply_patch format from *** Begin Patch to *** End Patch."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_hunk_kind() {
        let hunks = parse(
            "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: d.txt\n@@ fn x\n-old\n+new\n*** End of File\n*** End Patch",
        )
        .unwrap();
        assert_eq!(hunks.len(), 3);
        assert_eq!(hunks[0], Hunk::Add { path: "a.txt".into(), contents: "hi\n".into() });
        let Hunk::Update { move_to, chunks, .. } = &hunks[2] else { panic!() };
        assert_eq!(move_to.as_deref(), Some("d.txt"));
        assert_eq!(chunks[0].context.as_deref(), Some("fn x"));
        assert!(chunks[0].end_of_file);
    }

    #[test]
    fn context_anchor_disambiguates() {
        let content = "fn a() {\n    x\n}\nfn b() {\n    x\n}\n";
        let chunks = vec![Chunk {
            context: Some("fn b() {".into()),
            old_lines: vec!["    x".into()],
            new_lines: vec!["    y".into()],
            end_of_file: false,
        }];
        assert_eq!(apply_chunks("f", content, &chunks).unwrap(), "fn a() {\n    x\n}\nfn b() {\n    y\n}\n");
    }

    #[test]
    fn bad_patches_explain_themselves() {
        assert!(parse("hello").unwrap_err().to_string().contains("`*** Begin Patch`"));
        assert!(
            parse("*** Begin Patch\n*** Frobnicate: x\n*** End Patch")
                .unwrap_err()
                .to_string()
                .contains("not a hunk header")
        );
    }
}
