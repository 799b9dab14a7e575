//! Commands: reusable prompt templates, invoked as `/name arguments` (HTTP `session.command`, the
//! CLI's `run --command`).
//!
//! Definitions come from the built-in `init`, then the configuration's `command` table, in which the
//! loader has already merged `{command,commands}/**/*.md` files of every config directory (global
//! config dir, each project `.opencode/`, `~/.opencode`, `OPENCODE_CONFIG_DIR`) in OpenCode's order:
//! later sources replace earlier ones by name. A markdown command's YAML front matter holds
//! `description`, `agent`, `model`, `variant`, `subtask`; its body is the template.
//!
//! Expansion ([`Expander`]) is OpenCode's: `$1`..`$n` take the shell-like argument words (the highest
//! placeholder takes the rest), `$ARGUMENTS` the whole argument string (arguments given to a template
//! without placeholders are appended), then each ``!`cmd` `` is replaced by the command's output (run
//! by an injected [`ShellRunner`]), and `@path` references that name existing files become
//! [`FileReference`]s. The text parts are pure functions ([`substitute_arguments`],
//! [`substitute_shell`], [`file_references`]).

mod expand;
mod shell;

use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_json::Value;

use crate::jsonc::JsoncError;
use crate::{AgentMode, CommandConfig, Config};

pub use expand::{
    Expander, Expansion, FileReference, MAX_FILE_BYTES, file_references, hints, split_arguments, substitute_arguments,
    substitute_shell,
};
pub use shell::{ShellRunner, SystemShell};

/// The built-in `init` command's name.
pub const INIT: &str = "init";

/// The built-in `init` command's template.
pub const INIT_TEMPLATE: &str = "Study this codebase and write (or improve, if one exists) an AGENTS.md at the \
project root for coding agents that will work in this repository. Keep it short (around 20 lines) and cover:\n\
1. How to build, lint and test, in particular how to run one single test.\n\
2. The code style: imports, formatting, types, naming, error handling.\n\
Fold in any rules from .cursor/rules/, .cursorrules or .github/copilot-instructions.md.\n\n$ARGUMENTS";

/// One command definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub name: String,
    pub description: Option<String>,
    /// The agent the command runs with (else the caller's).
    pub agent: Option<String>,
    /// `provider/model` (else the agent's, else the caller's).
    pub model: Option<String>,
    pub variant: Option<String>,
    /// Run in a child session through the `task` tool.
    pub subtask: Option<bool>,
    pub template: String,
}

impl Command {
    /// The placeholders the template uses (`$1`, `$2`, ..., then `$ARGUMENTS`).
    pub fn hints(&self) -> Vec<String> {
        hints(&self.template)
    }

    /// Whether the command runs as a subtask (a child session) when its agent has `agent_mode`:
    /// `subtask: true`, or a subagent unless `subtask: false` (OpenCode's rule).
    pub fn runs_as_subtask(&self, agent_mode: AgentMode) -> bool {
        self.subtask == Some(true) || (agent_mode == AgentMode::Subagent && self.subtask != Some(false))
    }

    fn from_config(name: &str, config: &CommandConfig) -> Self {
        Self {
            name: name.to_owned(),
            description: config.description.clone(),
            agent: config.agent.clone(),
            model: config.model.clone(),
            variant: config.variant.clone(),
            subtask: config.subtask,
            template: config.template.clone(),
        }
    }
}

/// The commands of a loaded configuration by name: the built-in `init`, then `config.command`
/// (which holds the markdown command files too); later definitions replace earlier ones.
pub fn commands(config: &Config) -> IndexMap<String, Command> {
    let mut out = IndexMap::new();
    out.insert(
        INIT.to_owned(),
        Command {
            name: INIT.to_owned(),
            description: Some("create or update AGENTS.md".to_owned()),
            agent: None,
            model: None,
            variant: None,
            subtask: None,
            template: INIT_TEMPLATE.to_owned(),
        },
    );
    for (name, entry) in &config.command {
        out.insert(name.clone(), Command::from_config(name, entry));
    }
    out
}

/// One command file found in a config directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFile {
    /// The path below the `command`/`commands` folder without `.md` (`git/commit`).
    pub name: String,
    pub path: PathBuf,
}

/// The command files under `dir`: `command/**/*.md` then `commands/**/*.md`, each sorted.
pub fn command_files(dir: &Path) -> Vec<CommandFile> {
    let mut found = Vec::new();
    for folder in ["command", "commands"] {
        let root = dir.join(folder);
        let mut paths = Vec::new();
        collect_markdown(&root, &mut paths);
        paths.sort();
        found.extend(paths.into_iter().map(|path| {
            let relative = path.strip_prefix(&root).unwrap_or(&path).with_extension("");
            CommandFile { name: relative.to_string_lossy().replace('\\', "/"), path }
        }));
    }
    found
}

/// The command configuration (as JSON, ready to merge under `command.<name>`) of one markdown file:
/// the front matter's known fields plus the trimmed body as `template`.
pub fn command_from_markdown(text: &str) -> Result<Value, JsoncError> {
    let (front, body) = crate::split_front_matter(text);
    let front = match front {
        Some(front) if !front.trim().is_empty() => crate::front_matter(front)?,
        _ => Value::Object(serde_json::Map::new()),
    };
    let Value::Object(front) = front else {
        return Err(JsoncError { line: 2, column: 1, message: "expected front matter to be a mapping".into() });
    };
    let mut entry: serde_json::Map<String, Value> = front
        .into_iter()
        .filter(|(key, _)| matches!(key.as_str(), "description" | "agent" | "model" | "variant" | "subtask"))
        .collect();
    entry.insert("template".into(), Value::String(body.trim().to_owned()));
    let entry = Value::Object(entry);
    serde_json::from_value::<CommandConfig>(entry.clone()).map_err(|err| JsoncError {
        line: 1,
        column: 1,
        message: format!("invalid command front matter: {err}"),
    })?;
    Ok(entry)
}

fn collect_markdown(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.filter_map(|entry| entry.ok().map(|entry| entry.path())) {
        if path.is_dir() {
            collect_markdown(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_command_is_a_subtask_when_it_says_so_or_its_agent_is_a_subagent_unless_it_says_not() {
        let command = |subtask| Command {
            name: "c".into(),
            description: None,
            agent: None,
            model: None,
            variant: None,
            subtask,
            template: "t".into(),
        };
        let runs = |subtask, mode| command(subtask).runs_as_subtask(mode);
        assert!(runs(Some(true), AgentMode::Primary));
        assert!(runs(None, AgentMode::Subagent));
        assert!(!runs(Some(false), AgentMode::Subagent));
        assert!(!runs(None, AgentMode::Primary) && !runs(None, AgentMode::All));
    }

    #[test]
    fn markdown_front_matter_and_body_make_a_command() {
        let text =
            "---\ndescription: Run the tests\nagent: build\nmodel: a/b\nsubtask: true\nother: x\n---\n\nRun $1.\n";
        let entry = command_from_markdown(text).unwrap();
        assert_eq!(
            entry,
            json!({"description": "Run the tests", "agent": "build", "model": "a/b", "subtask": true, "template": "Run $1."})
        );
        assert_eq!(command_from_markdown("just a body").unwrap(), json!({"template": "just a body"}));
    }

    #[test]
    fn a_wrongly_typed_field_is_reported() {
        let err = command_from_markdown("---\nsubtask: [1]\n---\nx").unwrap_err();
        assert!(err.message.starts_with("invalid command front matter"), "{}", err.message);
    }

    #[test]
    fn files_are_found_with_nested_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("command/git")).unwrap();
        std::fs::create_dir_all(dir.path().join("commands")).unwrap();
        std::fs::write(dir.path().join("command/git/commit.md"), "x").unwrap();
        std::fs::write(dir.path().join("command/b.md"), "x").unwrap();
        std::fs::write(dir.path().join("command/notes.txt"), "x").unwrap();
        std::fs::write(dir.path().join("commands/a.md"), "x").unwrap();
        let names: Vec<_> = command_files(dir.path()).into_iter().map(|file| file.name).collect();
        assert_eq!(names, ["b", "git/commit", "a"]);
    }

    #[test]
    fn configured_commands_follow_and_may_replace_the_built_in() {
        let mut config = Config::default();
        config.command.insert("test".into(), CommandConfig { template: "t".into(), ..CommandConfig::default() });
        config.command.insert("init".into(), CommandConfig { template: "mine".into(), ..CommandConfig::default() });
        let found = commands(&config);
        assert_eq!(found.keys().collect::<Vec<_>>(), ["init", "test"]);
        assert_eq!(found["init"].template, "mine");
        assert_eq!(found["init"].description, None);
    }
}
