//! `opencode run [message..]`: one prompt, headless (with `--command <name>` the message is the
//! arguments of a command template, expanded as `opencode_config::commands` does for the server; a
//! subtask command runs its agent in a child session first, see [`subtask_of`]).
//! Picks or creates the session (`-c`, `-s`, `--fork`), admits the prompt through the session runtime, prints the answer as it streams (or one
//! JSON event per line), answers permission requests (rejects them, or approves them with `--auto`:
//! nobody is there to ask), and exits when the session is idle: zero when the run completed,
//! non-zero with the cause and a hint when it failed.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use base64::Engine as _;
use opencode_config::AgentMode;
use opencode_config::commands::{self, Command, Expander, SystemShell};
use opencode_session_runtime::mcp::ServerStatus;
use opencode_session_runtime::{
    DrainOutcome, ModelChoice, PromptFile, PromptRequest, RunResult, SessionRuntime, SubtaskPrompt,
};
use opencode_session_store::{NewSession, Session, SessionQuery, Store, Tokens};
use opencode_tool_registry::{AgentDirs, Agents, PendingEvent, PendingKind, PendingRequest, Permissions, Reply};
use tokio::sync::broadcast::error::RecvError;

use super::output::Printer;
use crate::cli::{Format, RunArgs};
use crate::context::Context;
use crate::error::CliError;

/// How to get going without a model, in one hint line.
const NO_MODEL_HINT: &str = "set an API key (`opencode auth login anthropic`, or ANTHROPIC_API_KEY=...) and pass \
                             `-m anthropic/claude-sonnet-4-5` or set \"model\" in opencode.json; or add a local \
                             OpenAI-compatible server (Ollama, LM Studio) under \"provider\" in opencode.json with \
                             options.baseURL, e.g. http://localhost:11434/v1";

pub fn run(context: &Context, mut args: RunArgs) -> Result<(), CliError> {
    let command = args.command.as_deref().map(|name| find_command(context, name)).transpose()?;
    let (text, files) = message(context, &args, command.as_ref())?;
    let subtask = command.as_ref().and_then(|command| subtask_of(context, command, &args, &text)).transpose()?;
    if let Some(command) = command.filter(|_| subtask.is_none()) {
        // As OpenCode: the command's own model, agent and variant win over the run's.
        args.model = command.model.or(args.model);
        args.agent = command.agent.or(args.agent);
        args.variant = args.variant.or(command.variant);
    }
    let model = args.model.as_deref().map(ModelChoice::parse).transpose()?;
    let store = context.store()?;
    let base = base_session(context, &store, &args)?;
    let model = match &args.variant {
        Some(variant) => Some(with_variant(context, model, base.as_ref(), variant)?),
        None => model,
    };
    let has_model = model.is_some()
        || base.as_ref().is_some_and(|session| session.model.is_some())
        || context.loaded.config.model.is_some()
        || agent_has_model(context, args.agent.as_deref())
        || has_default_model(context)?;
    if !has_model {
        return Err(CliError::usage("no model given and no provider has credentials", NO_MODEL_HINT));
    }
    let runtime = super::tokio_runtime()?;
    let result = runtime.block_on(async {
        let engine = context.engine(store.clone(), args.pure).await?;
        let session = match (base, args.fork) {
            (Some(base), true) => store.write(|tx| tx.fork_session(&base.id, None))?,
            (Some(base), false) => base,
            (None, true) => {
                return Err(CliError::usage("--fork needs a session to fork", "add --continue or --session <id>"));
            }
            (None, false) => {
                let new = NewSession { title: args.title.clone(), ..NewSession::default() };
                engine.runtime.create_session(&context.cwd, new).await?
            }
        };
        let mut request = match subtask {
            // The run's agent and model stay the session's; the command's run the child session.
            Some(subtask) => {
                if !files.is_empty() {
                    eprintln!("note: image and PDF attachments are not passed to a subtask command");
                }
                PromptRequest { subtask: Some(subtask), ..PromptRequest::text(&session.id, "") }
            }
            None => PromptRequest { files, ..PromptRequest::text(&session.id, text) },
        };
        request.model = model;
        request.agent = args.agent.clone();
        tokio::spawn(report_left_out_servers(engine.runtime.clone(), context.cwd.clone()));
        let printer = Printer::new(args.format, args.thinking, &session.id);
        drive(&engine.runtime, &engine.permissions, request, printer, args.auto).await.map(|result| (session, result))
    });
    // Nothing left to wait for: do not let a lingering blocking task hold the exit.
    runtime.shutdown_background();
    let (before, result) = result?;
    match result.outcome {
        DrainOutcome::Completed | DrainOutcome::Idle => {
            if args.format == Format::Default {
                eprintln!("{}", usage_line(&before, &result.session));
            }
            Ok(())
        }
        DrainOutcome::Interrupted => Err(CliError::Interrupted),
        DrainOutcome::Failed { message, hint } => Err(CliError::Failed { message, hint }),
    }
}

/// Tells the user which MCP servers the run goes without, once every server has finished connecting
/// (the first turn waits for those, each within its `timeout`).
async fn report_left_out_servers(runtime: SessionRuntime, directory: PathBuf) {
    let Ok(Ok(Some(mcp))) = tokio::task::spawn_blocking(move || runtime.mcp(&directory)).await else { return };
    mcp.settled().await;
    for (name, status) in mcp.statuses() {
        if !matches!(status, ServerStatus::Connected | ServerStatus::Disabled | ServerStatus::Connecting) {
            eprintln!("warning: MCP server `{name}` is left out: {status}");
        }
    }
}

/// Admits the prompt and runs the session until idle, printing events and answering permission
/// requests as they come; Ctrl-C interrupts the run.
pub(super) async fn drive(
    runtime: &SessionRuntime,
    permissions: &Permissions,
    request: PromptRequest,
    mut printer: Printer,
    auto: bool,
) -> Result<RunResult, CliError> {
    let session_id = request.session_id.clone();
    let mut events = runtime.subscribe();
    let mut pending = permissions.subscribe();
    let run = runtime.run(request);
    // One listener for the whole run: a fresh `ctrl_c()` per iteration would miss a signal that
    // arrives between two polls.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(run, ctrl_c);
    let mut interrupted = false;
    let result = loop {
        tokio::select! {
            result = &mut run => break result?,
            event = events.recv() => match event {
                Ok(event) => printer.event(&event)?,
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => {}
            },
            asked = pending.recv() => {
                if let Ok(PendingEvent::Asked(request)) = asked {
                    answer(permissions, &request, auto);
                }
            }
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                eprintln!("interrupting…");
                runtime.interrupt(&session_id);
            }
        }
    };
    // Durable events are published before the run reports idle; print what is still queued.
    while let Ok(event) = events.try_recv() {
        printer.event(&event)?;
    }
    printer.finish()?;
    Ok(result)
}

/// Nobody is there to answer: reject, or approve once with `--auto`. Questions are always dismissed.
fn answer(permissions: &Permissions, request: &PendingRequest, auto: bool) {
    let (reply, note) = match &request.kind {
        PendingKind::Permission(ask) => {
            let what = format!("{} ({})", ask.permission, ask.patterns.join(", "));
            if auto {
                (Reply::Once, format!("permission {what} approved (--auto)"))
            } else {
                let reply = Reply::Reject { message: None };
                (
                    reply,
                    format!(
                        "permission requested: {what}; rejected because the run is non-interactive (pass --auto to approve)"
                    ),
                )
            }
        }
        PendingKind::Question { .. } => (
            Reply::Reject { message: Some("nobody can answer questions in a non-interactive run".to_owned()) },
            "question dismissed: the run is non-interactive".to_owned(),
        ),
    };
    eprintln!("{note}");
    if let Err(err) = permissions.reply(&request.id, reply) {
        eprintln!("warning: {err}");
    }
}

/// The command `--command` names, or a one-line error listing the known ones.
fn find_command(context: &Context, name: &str) -> Result<Command, CliError> {
    let mut known = commands::commands(&context.loaded.config);
    let name = name.trim_start_matches('/');
    known.shift_remove(name).ok_or_else(|| {
        let names: Vec<&str> = known.keys().map(String::as_str).collect();
        CliError::usage(
            format!("unknown command `{name}` (known: {})", names.join(", ")),
            "define it under \"command\" in opencode.json or in .opencode/command/<name>.md",
        )
    })
}

/// The subtask a command runs as, when it does (OpenCode's rule: `subtask: true`, or its agent is a
/// subagent unless `subtask: false`): the command's agent (else `--agent`, else the default one)
/// runs the expanded text in a child session, on the command's model (else `-m`) unless the agent
/// names its own.
fn subtask_of(
    context: &Context,
    command: &Command,
    args: &RunArgs,
    text: &str,
) -> Option<Result<SubtaskPrompt, CliError>> {
    let agents = Agents::from_config(&AgentDirs::standard(&context.paths), &context.loaded.config);
    let named = command.agent.as_deref().or(args.agent.as_deref());
    let agent = agents.resolve(named);
    // An unknown agent is not a subagent; with `subtask: true` the runtime names it in its error.
    let mode = agent.as_ref().map_or(AgentMode::Primary, |agent| agent.mode);
    if !command.runs_as_subtask(mode) {
        return None;
    }
    let name = agent.map(|agent| agent.name.clone()).or_else(|| named.map(str::to_owned)).unwrap_or_default();
    let model = command.model.as_deref().or(args.model.as_deref()).map(ModelChoice::parse).transpose();
    Some(model.map_err(CliError::from).map(|model| SubtaskPrompt {
        prompt: text.to_owned(),
        description: command.description.clone().unwrap_or_default(),
        agent: name,
        model,
        command: Some(command.name.clone()),
    }))
}

/// The prompt text (arguments, then standard input when it is not a terminal; with a command, its
/// expanded template with those as arguments) and the attachments.
fn message(
    context: &Context,
    args: &RunArgs,
    command: Option<&Command>,
) -> Result<(String, Vec<PromptFile>), CliError> {
    let mut text = args.message.join(" ");
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let mut piped = String::new();
        stdin
            .lock()
            .read_to_string(&mut piped)
            .map_err(|err| CliError::Io(format!("cannot read standard input: {err}")))?;
        let piped = piped.trim_end();
        if !piped.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(piped);
        }
    }
    if let Some(command) = command {
        let shell = SystemShell::new(context.loaded.config.shell.as_deref());
        let home = context.env.get("OPENCODE_TEST_HOME").or_else(|| context.env.get("HOME")).map(PathBuf::from);
        let expander = Expander { directory: &context.cwd, home: home.as_deref(), shell: &shell };
        text = expander.expand(command, &text).prompt_text(commands::MAX_FILE_BYTES);
    }
    let files = attachments(&context.cwd, &args.files, &mut text)?;
    if text.trim().is_empty() && files.is_empty() {
        return Err(CliError::usage("no message given", "pass it as arguments: opencode run \"explain this repo\""));
    }
    Ok((text, files))
}

/// Images and PDFs become file parts (data URLs); other files must be UTF-8 text and are inlined
/// after the message, each under its path, since most providers accept no other file type.
fn attachments(cwd: &Path, paths: &[PathBuf], text: &mut String) -> Result<Vec<PromptFile>, CliError> {
    let mut files = Vec::new();
    for path in paths {
        let full = cwd.join(path);
        let bytes = std::fs::read(&full)
            .map_err(|err| CliError::Io(format!("cannot read attachment {}: {err}", path.display())))?;
        let name = path.file_name().map(|name| name.to_string_lossy().into_owned());
        if let Some(mime) = media_type(path) {
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            files.push(PromptFile { url: format!("data:{mime};base64,{data}"), mime: mime.to_owned(), name });
            continue;
        }
        let Ok(content) = String::from_utf8(bytes) else {
            return Err(CliError::usage(
                format!("{} is a binary file of a type that cannot be attached", path.display()),
                "attach text files, images (png, jpeg, gif, webp) or PDFs",
            ));
        };
        text.push_str(&format!("\n\n<file path=\"{}\">\n{}\n</file>", path.display(), content.trim_end()));
    }
    Ok(files)
}

fn media_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        _ => return None,
    })
}

/// The session `-s` names, or the latest of this directory for `-c`; `None` for a new session.
fn base_session(context: &Context, store: &Store, args: &RunArgs) -> Result<Option<Session>, CliError> {
    if let Some(id) = &args.session {
        return match store.read(|r| r.session(id))? {
            Some(session) => Ok(Some(session)),
            None => Err(CliError::usage(format!("no session `{id}`"), "run `opencode session list` to see sessions")),
        };
    }
    if args.continue_ {
        return latest_session(store, &context.cwd);
    }
    Ok(None)
}

/// The root session of `directory` with the latest activity.
pub fn latest_session(store: &Store, directory: &Path) -> Result<Option<Session>, CliError> {
    let query = SessionQuery {
        directory: Some(directory.display().to_string()),
        roots_only: true,
        limit: 1,
        ..SessionQuery::default()
    };
    Ok(store.read(|r| r.list_sessions(&query))?.sessions.into_iter().next())
}

/// Whether the agent the run uses (`--agent`, else the default agent) names its own model, as the
/// runtime resolves it.
fn agent_has_model(context: &Context, agent: Option<&str>) -> bool {
    let dirs = AgentDirs::standard(&context.paths);
    let agents = Agents::from_config(&dirs, &context.loaded.config);
    agents.resolve(agent).is_some_and(|agent| agent.model.is_some())
}

/// The model a variant applies to (-m, else the session's, config's or the default model), with it;
/// an unknown variant fails here with the known ones.
fn with_variant(
    context: &Context,
    model: Option<ModelChoice>,
    base: Option<&Session>,
    variant: &str,
) -> Result<ModelChoice, CliError> {
    let (catalog, _) = context.catalog()?;
    let config = &context.loaded.config;
    let session = base.and_then(|s| s.model.as_ref()).map(|m| ModelChoice {
        provider: m.provider_id.clone(),
        model: m.id.clone(),
        variant: None,
    });
    let chosen = model
        .or(session)
        .or_else(|| opencode_session_runtime::default_model(&catalog, config, &context.auth(), &context.env));
    let Some(mut chosen) = chosen else {
        return Err(CliError::usage("no model given and no provider has credentials", NO_MODEL_HINT));
    };
    let known = catalog.variants(&chosen.provider, &chosen.model)?;
    if !known.iter().any(|v| v.name == variant) {
        let names: Vec<&str> = known.iter().map(|v| v.name.as_str()).collect();
        let known = if names.is_empty() { "it has none".to_owned() } else { format!("known: {}", names.join(", ")) };
        return Err(CliError::usage(
            format!("model {}/{} has no variant `{variant}` ({known})", chosen.provider, chosen.model),
            "leave out --variant, or pass one of the model's variants",
        ));
    }
    chosen.variant = Some(variant.to_owned());
    Ok(chosen)
}

/// Whether the runtime can pick a model on its own: the first provider with credentials (an
/// environment key or `auth.json`), as OpenCode does.
fn has_default_model(context: &Context) -> Result<bool, CliError> {
    let (catalog, _) = context.catalog()?;
    let config = &context.loaded.config;
    Ok(opencode_session_runtime::default_model(&catalog, config, &context.auth(), &context.env).is_some())
}

/// `tokens: 120 in, 6 out · $0.0012` for what this run added to the session.
fn usage_line(before: &Session, after: &Session) -> String {
    let delta = |a: u64, b: u64| b.saturating_sub(a);
    let (old, new): (&Tokens, &Tokens) = (&before.tokens, &after.tokens);
    let mut line = format!("tokens: {} in, {} out", delta(old.input, new.input), delta(old.output, new.output));
    let reasoning = delta(old.reasoning, new.reasoning);
    if reasoning > 0 {
        line.push_str(&format!(", {reasoning} reasoning"));
    }
    let (read, write) = (delta(old.cache.read, new.cache.read), delta(old.cache.write, new.cache.write));
    if read > 0 || write > 0 {
        line.push_str(&format!(", cache {read} read / {write} write"));
    }
    line.push_str(&format!(" · cost ${:.4}", (after.cost - before.cost).max(0.0)));
    line
}
