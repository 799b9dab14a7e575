//! Agent markdown files (`{agent,agents}/**/*.md`, `{mode,modes}/*.md` in a config directory or a
//! project's `.opencode`): YAML front matter holds the agent's settings, the body is its prompt.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::AgentConfig;
use crate::jsonc::JsoncError;

/// One agent file found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFile {
    /// The path below the `agent`/`mode` folder without `.md` (`review/strict`).
    pub name: String,
    pub path: PathBuf,
    /// Files under `mode/` define primary agents unless they say otherwise.
    pub primary: bool,
}

/// The agent files under `dir`, in a stable order: `{agent,agents}/**/*.md` then `{mode,modes}/*.md`.
pub fn agent_files(dir: &Path) -> Vec<AgentFile> {
    let mut found = Vec::new();
    for (folder, recursive) in [("agent", true), ("agents", true), ("mode", false), ("modes", false)] {
        let root = dir.join(folder);
        let mut paths = Vec::new();
        collect_markdown(&root, recursive, &mut paths);
        paths.sort();
        found.extend(paths.into_iter().map(|path| {
            let relative = path.strip_prefix(&root).unwrap_or(&path).with_extension("");
            AgentFile { name: relative.to_string_lossy().replace('\\', "/"), path, primary: !recursive }
        }));
    }
    found
}

fn collect_markdown(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.filter_map(|entry| entry.ok().map(|entry| entry.path())) {
        if path.is_dir() {
            if recursive {
                collect_markdown(&path, recursive, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
}

/// The agent configuration (as JSON, ready to merge) of one markdown file.
pub fn agent_from_markdown(text: &str) -> Result<Value, JsoncError> {
    let (front, body) = split_front_matter(text);
    let mut value = match front {
        Some(front) if !front.trim().is_empty() => front_matter(front)?,
        _ => Value::Object(serde_json::Map::new()),
    };
    let Some(map) = value.as_object_mut() else {
        return Err(JsoncError { line: 2, column: 1, message: "expected front matter to be a mapping".into() });
    };
    let prompt = body.trim();
    if !prompt.is_empty() {
        map.insert("prompt".into(), Value::String(prompt.to_owned()));
    }
    serde_json::from_value::<AgentConfig>(value.clone()).map_err(|err| JsoncError {
        line: 1,
        column: 1,
        message: format!("invalid agent front matter: {err}"),
    })?;
    Ok(value)
}

/// Parses YAML front matter; positions are of the file (the front matter starts on line 2).
pub fn front_matter(front: &str) -> Result<Value, JsoncError> {
    serde_yaml_ng::from_str(front).map_err(|err| {
        let (line, column) = err.location().map_or((2, 1), |at| (at.line() + 1, at.column()));
        JsoncError { line, column, message: err.to_string() }
    })
}

/// `(front matter, body)`; no front matter when the file does not start with `---`.
pub fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..offset]), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, text)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn front_matter_and_body_make_an_agent() {
        let text = "---\ndescription: Reviews code # short\nmode: subagent\ntemperature: 0.1\ntools:\n  write: false\n  \
                    edit: false\npermission:\n  bash:\n    \"git *\": allow\n    '*': ask\n---\nYou review code.\n";
        let agent = agent_from_markdown(text).unwrap();
        assert_eq!(
            agent,
            json!({
                "description": "Reviews code",
                "mode": "subagent",
                "temperature": 0.1,
                "tools": {"write": false, "edit": false},
                "permission": {"bash": {"git *": "allow", "*": "ask"}},
                "prompt": "You review code."
            })
        );
    }

    #[test]
    fn a_wrong_type_is_reported() {
        let err = agent_from_markdown("---\nmode: sometimes\n---\nhi").unwrap_err();
        assert!(err.message.starts_with("invalid agent front matter"), "{}", err.message);
    }

    #[test]
    fn malformed_yaml_is_reported_with_its_file_line() {
        let err = agent_from_markdown("---\ndescription: x\n  bad: [\n---\n").unwrap_err();
        assert_eq!(err.line, 3, "{err:?}");
    }

    #[test]
    fn agent_and_mode_files_are_found_with_nested_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agent/review")).unwrap();
        std::fs::create_dir_all(dir.path().join("modes")).unwrap();
        std::fs::write(dir.path().join("agent/review/strict.md"), "x").unwrap();
        std::fs::write(dir.path().join("agent/a.md"), "x").unwrap();
        std::fs::write(dir.path().join("modes/focus.md"), "x").unwrap();
        let names: Vec<_> = agent_files(dir.path()).into_iter().map(|file| (file.name, file.primary)).collect();
        assert_eq!(names, [("a".into(), false), ("review/strict".into(), false), ("focus".into(), true)]);
    }
}
