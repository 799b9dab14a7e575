//! Commands: `GET /command` lists the instance's commands (the built-in `init`, the configuration's
//! `command` table, and `command/*.md` / `commands/*.md` templates in the global config directory and
//! every `.opencode/` from the worktree root down to the directory, later ones winning);
//! `POST /session/{id}/command` expands one (`$ARGUMENTS`, `$1`..`$n`) and sends it as a prompt;
//! `POST /session/{id}/init` runs `init` with the given model.
//!
//! Not supported (yet): `!`shell`` and `@file` substitutions inside templates, MCP prompts and skills
//! as commands, `subtask: true` (the command runs in the session itself).

use std::path::Path;
use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use indexmap::IndexMap;
use opencode_config::Config;
use opencode_session_store::MessageWithParts;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use super::Op;
use super::session::check_id;
use super::session::prompt;
use crate::driver::FilePartInput;
use crate::driver::PartInput;
use crate::driver::PromptModel;
use crate::driver::PromptRequest;
use crate::driver::TextPartInput;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/command", "command.list", "Commands of the instance", list_route).returns::<Vec<Command>>(),
        Op::post(
            "/session/{sessionID}/command",
            "session.command",
            "Expand a command template and prompt with it; waits for the reply",
            command_route,
        )
        .body::<CommandBody>()
        .returns_named("MessageWithParts"),
        Op::post(
            "/session/{sessionID}/init",
            "session.init",
            "Analyse the project and write AGENTS.md (the init command); waits for the reply",
            init_route,
        )
        .body::<InitBody>()
        .returns_bool(),
    ]
}

/// `Command`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub(crate) struct Command {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    /// `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// Always `command` here (no MCP prompts or skills).
    source: &'static str,
    template: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    subtask: Option<bool>,
    /// The placeholders the template uses (`$1`, `$2`, ..., `$ARGUMENTS`).
    hints: Vec<String>,
}

/// `POST /session/{id}/command` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandBody {
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    #[serde(default)]
    agent: Option<String>,
    /// `provider/model`.
    #[serde(default)]
    model: Option<String>,
    arguments: String,
    command: String,
    #[serde(default)]
    variant: Option<String>,
    /// Files attached to the prompt.
    #[serde(default)]
    parts: Vec<CommandFilePart>,
}

/// A file part of a command (`type` must be `file`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandFilePart {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "type")]
    kind: FileKind,
    mime: String,
    #[serde(default)]
    filename: Option<String>,
    url: String,
    #[serde(default)]
    source: Option<Value>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum FileKind {
    File,
}

/// `POST /session/{id}/init` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InitBody {
    #[serde(rename = "modelID")]
    model_id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(rename = "messageID")]
    message_id: String,
}

/// The built-in `init` command's template.
const INIT_TEMPLATE: &str = "Study this codebase and write (or improve, if one exists) an AGENTS.md at the project \
root for coding agents that will work in this repository. Keep it short (around 20 lines) and cover:\n\
1. How to build, lint and test, in particular how to run one single test.\n\
2. The code style: imports, formatting, types, naming, error handling.\n\
Fold in any rules from .cursor/rules/, .cursorrules or .github/copilot-instructions.md.\n\n$ARGUMENTS";

async fn list_route(Dir(i): Dir) -> Result<Json<Vec<Command>>, ApiError> {
    blocking(move || Ok(Json(commands(&i).into_values().collect()))).await
}

async fn command_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(id): P<String>,
    JsonBody(body): JsonBody<CommandBody>,
) -> Result<Json<MessageWithParts>, ApiError> {
    if let Some(message) = &body.message_id {
        check_id(message, "msg", "message")?;
    }
    let name = body.command.trim_start_matches('/').to_owned();
    let lookup = std::sync::Arc::clone(&i);
    let command = blocking(move || Ok(commands(&lookup).shift_remove(&name))).await?.ok_or_else(|| {
        ApiError::not_found(format!("command {:?} not found (GET /command lists them)", body.command))
    })?;
    let model = match body.model.as_deref().or(command.model.as_deref()) {
        Some(model) => Some(parse_model(model)?),
        None => None,
    };
    let mut parts = vec![PartInput::Text(TextPartInput {
        text: expand(&command.template, &body.arguments),
        ..TextPartInput::default()
    })];
    parts.extend(body.parts.into_iter().map(|part| {
        let FileKind::File = part.kind;
        PartInput::File(FilePartInput {
            id: part.id,
            mime: part.mime,
            filename: part.filename,
            url: part.url,
            source: part.source,
        })
    }));
    let request = PromptRequest {
        message_id: body.message_id,
        model,
        agent: command.agent.or(body.agent),
        variant: body.variant,
        parts,
        ..PromptRequest::default()
    };
    prompt(&s, &id, request).await.map(Json)
}

async fn init_route(
    State(s): State<AppState>,
    P(id): P<String>,
    JsonBody(body): JsonBody<InitBody>,
) -> Result<Json<bool>, ApiError> {
    check_id(&body.message_id, "msg", "message")?;
    let request = PromptRequest {
        message_id: Some(body.message_id),
        model: Some(PromptModel { provider_id: body.provider_id, model_id: body.model_id }),
        parts: vec![PartInput::Text(TextPartInput { text: expand(INIT_TEMPLATE, ""), ..TextPartInput::default() })],
        ..PromptRequest::default()
    };
    prompt(&s, &id, request).await?;
    Ok(Json(true))
}

/// `provider/model` as a prompt model.
fn parse_model(model: &str) -> Result<PromptModel, ApiError> {
    match model.split_once('/') {
        Some((provider, id)) if !provider.is_empty() && !id.is_empty() => {
            Ok(PromptModel { provider_id: provider.to_owned(), model_id: id.to_owned() })
        }
        _ => Err(ApiError::bad(format!("model {model:?} must be written provider/model"))),
    }
}

/// The instance's commands by name: built-in, then global templates, then configuration, then project
/// templates (root first); later definitions replace earlier ones.
pub(crate) fn commands(instance: &Instance) -> IndexMap<String, Command> {
    let mut out = IndexMap::new();
    out.insert("init".to_owned(), command("init", Some("create or update AGENTS.md"), INIT_TEMPLATE));
    let loaded = instance.config();
    let global = instance.paths().config.clone();
    for dir in [global.join("command"), global.join("commands")] {
        markdown_commands(&dir, &mut out);
    }
    config_commands(&loaded.config, &mut out);
    if !instance.env().flag("OPENCODE_DISABLE_PROJECT_CONFIG") {
        for root in project_dirs(&instance.directory, &instance.worktree) {
            for dir in [root.join(".opencode/command"), root.join(".opencode/commands")] {
                markdown_commands(&dir, &mut out);
            }
        }
    }
    out
}

fn command(name: &str, description: Option<&str>, template: &str) -> Command {
    Command {
        name: name.to_owned(),
        description: description.map(str::to_owned),
        agent: None,
        model: None,
        source: "command",
        template: template.to_owned(),
        subtask: None,
        hints: hints(template),
    }
}

fn config_commands(config: &Config, out: &mut IndexMap<String, Command>) {
    for (name, entry) in &config.command {
        let mut found = command(name, entry.description.as_deref(), &entry.template);
        found.agent.clone_from(&entry.agent);
        found.model.clone_from(&entry.model);
        found.subtask = entry.subtask;
        out.insert(name.clone(), found);
    }
}

/// `directory` and its ancestors up to `worktree`, root first.
fn project_dirs(directory: &Path, worktree: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        directory.ancestors().take_while(|dir| dir.starts_with(worktree)).map(Path::to_path_buf).collect();
    if dirs.is_empty() {
        dirs.push(directory.to_path_buf());
    }
    dirs.reverse();
    dirs
}

/// Every `*.md` under `dir` (nested ones are named `sub/name`); unreadable files are skipped with a
/// warning in the log.
fn markdown_commands(dir: &Path, out: &mut IndexMap<String, Command>) {
    let mut pending = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    for path in files {
        let Some(name) = path.strip_prefix(dir).ok().map(|rel| rel.with_extension("")) else { continue };
        let name = name.to_string_lossy().replace('\\', "/");
        match markdown_command(&name, &path) {
            Ok(found) => {
                out.insert(name, found);
            }
            Err(err) => tracing::warn!(path = %path.display(), %err, "command file skipped"),
        }
    }
}

fn markdown_command(name: &str, path: &Path) -> Result<Command, String> {
    let text = std::fs::read_to_string(path).map_err(|err| err.to_string())?;
    let (front, body) = opencode_config::split_front_matter(&text);
    let front = match front {
        Some(front) => opencode_config::front_matter(front).map_err(|err| err.to_string())?,
        None => Value::Null,
    };
    let field = |key: &str| front.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut found = command(name, None, body.trim());
    found.description = field("description");
    found.agent = field("agent");
    found.model = field("model");
    found.subtask = front.get("subtask").and_then(Value::as_bool);
    Ok(found)
}

/// The placeholders a template uses: `$1`..`$n` in order, then `$ARGUMENTS`.
fn hints(template: &str) -> Vec<String> {
    let mut hints: Vec<String> = (1..=highest_position(template)).map(|n| format!("${n}")).collect();
    if template.contains("$ARGUMENTS") {
        hints.push("$ARGUMENTS".to_owned());
    }
    hints
}

/// The highest `$n` placeholder of `template` (0 when none).
fn highest_position(template: &str) -> usize {
    let bytes = template.as_bytes();
    let mut highest = 0;
    for (i, _) in template.match_indices('$') {
        let digits: String = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).map(|b| char::from(*b)).collect();
        if let Ok(n) = digits.parse::<usize>() {
            highest = highest.max(n);
        }
    }
    highest
}

/// Expands `$ARGUMENTS` (the whole argument string) and `$1`..`$n` (shell-like words; the last
/// placeholder takes the rest). Arguments given to a template without placeholders are appended.
pub(crate) fn expand(template: &str, arguments: &str) -> String {
    let words = split_words(arguments);
    let highest = highest_position(template);
    let mut text = template.to_owned();
    for n in (1..=highest).rev() {
        let value = match n.cmp(&highest) {
            std::cmp::Ordering::Equal => words.get(n - 1..).map(|rest| rest.join(" ")).unwrap_or_default(),
            _ => words.get(n - 1).cloned().unwrap_or_default(),
        };
        text = text.replace(&format!("${n}"), &value);
    }
    let uses_arguments = text.contains("$ARGUMENTS");
    text = text.replace("$ARGUMENTS", arguments);
    if highest == 0 && !uses_arguments && !arguments.trim().is_empty() {
        text = format!("{text}\n\n{arguments}");
    }
    text.trim().to_owned()
}

/// Splits on whitespace, keeping `"quoted words"` and `'quoted words'` together (quotes removed).
fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote = None;
    let mut started = false;
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !current.is_empty() {
                    words.push(std::mem::take(&mut current));
                }
                started = false;
            }
            (None, c) => current.push(c),
        }
    }
    if started || !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_placeholders_take_words_and_the_last_takes_the_rest() {
        assert_eq!(expand("fix $1 in $2", "bug \"the parser\" now"), "fix bug in the parser now");
        assert_eq!(expand("review $ARGUMENTS please", "src/a.rs b.rs"), "review src/a.rs b.rs please");
        assert_eq!(expand("summarise", "briefly"), "summarise\n\nbriefly");
        assert_eq!(expand("run $1", ""), "run");
        assert_eq!(hints("a $2 $1 $ARGUMENTS"), vec!["$1", "$2", "$ARGUMENTS"]);
    }
}
