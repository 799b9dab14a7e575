//! `{env:VAR}` and `{file:path}` text substitution in config files, as OpenCode does it: on the raw
//! text, before parsing. An unset variable becomes the empty string; a file's trimmed content is
//! inserted JSON-escaped (so it can sit inside a string); `{file:...}` on a `//` comment line is left
//! alone; relative paths are relative to the config file's directory and `~/` is the home directory.

use std::path::{Path, PathBuf};

use crate::Env;

/// A `{file:...}` reference that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingFile {
    pub reference: String,
    pub resolved: PathBuf,
    pub reason: String,
}

/// Substitutes every `{env:...}` and `{file:...}` in `text`.
pub fn substitute(text: &str, dir: &Path, env: &Env) -> Result<String, MissingFile> {
    let text = replace_all(text, "{env:", |name| Ok(env.get(name).unwrap_or_default().to_owned()))?;
    let mut out = String::with_capacity(text.len());
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            out.push('\n');
        }
        if line.trim_start().starts_with("//") {
            out.push_str(line);
        } else {
            out.push_str(&replace_all(line, "{file:", |reference| read_reference(reference, dir, env))?);
        }
    }
    Ok(out)
}

/// Replaces each `<open>NAME}` by `value(NAME)`.
fn replace_all(
    text: &str,
    open: &str,
    mut value: impl FnMut(&str) -> Result<String, MissingFile>,
) -> Result<String, MissingFile> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find('}').filter(|&end| end > 0) else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(&value(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn read_reference(reference: &str, dir: &Path, env: &Env) -> Result<String, MissingFile> {
    let resolved = match reference.strip_prefix("~/") {
        Some(rest) => PathBuf::from(env.get("HOME").unwrap_or_default()).join(rest),
        None => dir.join(reference),
    };
    let content = std::fs::read_to_string(&resolved).map_err(|err| MissingFile {
        reference: format!("{{file:{reference}}}"),
        resolved: resolved.clone(),
        reason: err.to_string(),
    })?;
    let quoted = serde_json::Value::String(content.trim().to_owned()).to_string();
    Ok(quoted[1..quoted.len() - 1].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_references_are_replaced_and_unset_ones_become_empty() {
        let env = Env::from_pairs([("KEY", "sk-1")]);
        let out = substitute(r#"{"a": "{env:KEY}", "b": "{env:NOPE}"}"#, Path::new("/"), &env).unwrap();
        assert_eq!(out, r#"{"a": "sk-1", "b": ""}"#);
    }

    #[test]
    fn file_references_are_escaped_and_commented_lines_skipped() {
        let dir = std::env::temp_dir().join(format!("opencode-config-subst-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("prompt.txt"), "line \"one\"\nline two\n").unwrap();
        let text = "{\n  // \"x\": \"{file:missing.txt}\",\n  \"p\": \"{file:prompt.txt}\"\n}";
        let out = substitute(text, &dir, &Env::default()).unwrap();
        assert_eq!(out, "{\n  // \"x\": \"{file:missing.txt}\",\n  \"p\": \"line \\\"one\\\"\\nline two\"\n}");
        let err = substitute("{file:missing.txt}", &dir, &Env::default()).unwrap_err();
        assert_eq!(err.resolved, dir.join("missing.txt"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
