//! `bash` (the spec's `shell`): runs a command in the Location (or a `workdir`), with a timeout,
//! bounded output capture streamed to a Managed Tool Output File, and the whole process group
//! killed on timeout or interruption (also when the call's future is dropped).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use nix::sys::signal::Signal;
use nix::sys::signal::killpg;
use nix::unistd::Pid;
use opencode_config::ToolOutputConfig;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::AsyncReadExt;

use opencode_config::PermissionAction;

use super::arity;
use super::shell;
use crate::error::ToolError;
use crate::location::Scope;
use crate::pending::PermissionAsk;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// Default timeout (OpenCode: 2 minutes).
pub const DEFAULT_TIMEOUT_MS: u64 = 2 * 60 * 1000;
/// Longest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 10 * 60 * 1000;
/// After SIGTERM, how long the group gets before SIGKILL.
const GRACE: Duration = Duration::from_millis(200);

/// Adds environment variables to a shell the agent starts: the plugins' `shell.env` hook, asked
/// per call with the resolved working directory. Later variables win; `OPENCODE`/`AGENT` are set
/// after the overlay and cannot be changed by it.
pub trait EnvOverlay: Send + Sync {
    fn env<'a>(&'a self, ctx: &'a ToolContext, cwd: &'a Path) -> BoxFuture<'a, Vec<(String, String)>>;
}

/// No extra environment.
#[derive(Debug, Default)]
pub struct NoEnv;

impl EnvOverlay for NoEnv {
    fn env<'a>(&'a self, _ctx: &'a ToolContext, _cwd: &'a Path) -> BoxFuture<'a, Vec<(String, String)>> {
        // A zero-sized future: boxing it does not allocate.
        Box::pin(async { Vec::new() })
    }
}

/// The `bash` tool.
pub struct Bash {
    env: Arc<dyn EnvOverlay>,
    shell: String,
}

impl std::fmt::Debug for Bash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bash").field("shell", &self.shell).finish_non_exhaustive()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct BashInput {
    /// The command to run.
    pub command: String,
    /// Timeout in milliseconds (default 120000, at most 600000).
    #[serde(default)]
    pub timeout: Option<u64>,
    /// The directory to run in (default: the project directory).
    #[serde(default)]
    pub workdir: Option<String>,
    /// What the command does, in 5-10 words.
    #[serde(default)]
    pub description: Option<String>,
}

impl Bash {
    pub fn new(env: Arc<dyn EnvOverlay>) -> Self {
        let shell =
            ["/bin/bash", "/usr/bin/bash"].into_iter().find(|path| Path::new(path).exists()).unwrap_or("/bin/sh");
        Self { env, shell: shell.to_owned() }
    }
}

impl TypedTool for Bash {
    type Input = BashInput;
    const NAME: &'static str = "bash";

    fn description(&self) -> String {
        "Runs a shell command in the project directory (or `workdir`) and returns its combined output \
         and exit code. Commands time out after 2 minutes by default (`timeout` in ms, up to 10 minutes)."
            .into()
    }

    fn run<'a>(&'a self, input: BashInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            if input.timeout == Some(0) {
                return Err(ToolError::model("timeout must be a positive number of milliseconds"));
            }
            let timeout = input.timeout.unwrap_or(DEFAULT_TIMEOUT_MS).min(MAX_TIMEOUT_MS);
            let workdir = ctx.location.authorize(ctx, input.workdir.as_deref().unwrap_or("."), true).await?;
            if !workdir.path.is_dir() {
                return Err(ToolError::model(format!(
                    "workdir {} is not a directory",
                    ctx.location.display(&workdir.path)
                )));
            }
            ask_permissions(ctx, &input.command, &workdir.path).await?;
            let limits = ctx.output.limits();
            // Leave room for the exit-status footer so the registry need not cut again.
            let limits = ToolOutputConfig { max_lines: limits.max_lines - 4, max_bytes: limits.max_bytes - 512 };
            let env = self.env.env(ctx, &workdir.path).await;
            let (output, status) = run(&self.shell, &input.command, &workdir.path, timeout, env, ctx, limits).await?;
            let mut bounded = output;
            // What clients show under the command (OpenCode's TUI reads `metadata.output`), taken
            // before the status footer meant for the model.
            let shown = preview(&bounded.text);
            let truncated = bounded.truncated;
            let footer = match status {
                Ended::Exited(code) => {
                    if code != Some(0) {
                        bounded.text.push_str(&format!(
                            "\n\n<bash_metadata>\nexit code: {}\n</bash_metadata>",
                            code.map_or("signal".into(), |c| c.to_string())
                        ));
                    }
                    code
                }
                Ended::TimedOut => {
                    bounded.text.push_str(&format!(
                        "\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout {timeout} ms\n</bash_metadata>"
                    ));
                    None
                }
            };
            Ok(ToolOutput::bounded(bounded)
                .with_title(input.description.unwrap_or_else(|| input.command.clone()))
                .with_metadata("output", shown)
                .with_metadata("exit", footer)
                .with_metadata("truncated", truncated)
                .with_metadata("timedOut", status == Ended::TimedOut))
        })
    }
}

/// At most this many bytes of output go into the call's metadata, as in OpenCode.
const MAX_METADATA_BYTES: usize = 30_000;

/// The output as clients show it: cut at [`MAX_METADATA_BYTES`] (on a character boundary) with `...`.
fn preview(text: &str) -> String {
    if text.len() <= MAX_METADATA_BYTES {
        return text.to_owned();
    }
    let end = (0..=MAX_METADATA_BYTES).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    format!("{}\n\n...", &text[..end])
}

/// The output so far, reported as the call's progress (the first [`MAX_METADATA_BYTES`], as the
/// final metadata has them) so clients show a long command's output while it runs.
#[derive(Default)]
struct LiveOutput {
    head: Vec<u8>,
}

impl LiveOutput {
    fn push(&mut self, bytes: &[u8], ctx: &ToolContext) {
        let room = MAX_METADATA_BYTES.saturating_sub(self.head.len());
        if room == 0 {
            return;
        }
        self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        let mut metadata = serde_json::Map::new();
        metadata.insert("output".into(), String::from_utf8_lossy(&self.head).into_owned().into());
        ctx.progress(None, &metadata);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Exited(Option<i32>),
    TimedOut,
}

/// Kills the process group when dropped unless the process was reaped.
struct GroupGuard {
    pgid: Option<Pid>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid.take()
            && let Err(err) = killpg(pgid, Signal::SIGKILL)
            && err != nix::errno::Errno::ESRCH
        {
            tracing::warn!(%err, "cannot kill a shell process group");
        }
    }
}

async fn run(
    shell: &str,
    command: &str,
    workdir: &Path,
    timeout_ms: u64,
    env: Vec<(String, String)>,
    ctx: &ToolContext,
    limits: ToolOutputConfig,
) -> Result<(crate::output::Bounded, Ended), ToolError> {
    // One pipe for stdout and stderr keeps their interleaving as the command wrote it.
    let (reader, writer_end) =
        std::io::pipe().map_err(|err| ToolError::fatal(format!("cannot create a pipe: {err}")))?;
    let stderr_end = writer_end.try_clone().map_err(|err| ToolError::fatal(format!("cannot create a pipe: {err}")))?;
    let mut command_line = tokio::process::Command::new(shell);
    command_line
        .arg("-c")
        .arg(command)
        .current_dir(workdir)
        .envs(env)
        .env("OPENCODE", "1")
        .env("AGENT", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer_end))
        .stderr(Stdio::from(stderr_end))
        .process_group(0);
    let spawned = command_line.spawn();
    // Our copies of the write ends must close, or the pipe never reaches end of file.
    drop(command_line);
    let mut child = spawned.map_err(|err| ToolError::model(format!("Cannot start {shell}: {err}")))?;
    let mut guard = GroupGuard { pgid: child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw) };
    let mut output = tokio::net::unix::pipe::Receiver::from_owned_fd(std::os::fd::OwnedFd::from(reader))
        .map_err(|err| ToolError::fatal(format!("cannot read the shell's output: {err}")))?;
    let mut writer = ctx.output.writer_with(limits);
    let deadline = tokio::time::sleep(Duration::from_millis(timeout_ms));
    tokio::pin!(deadline);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut timed_out = false;
    let mut live = LiveOutput::default();
    loop {
        tokio::select! {
            read = output.read(&mut buffer) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    writer.push(&buffer[..n]);
                    live.push(&buffer[..n], ctx);
                }
            },
            () = &mut deadline => { timed_out = true; break; }
            () = ctx.cancel.cancelled() => { terminate(&mut guard, &mut child).await; return Err(ToolError::Interrupted); }
        }
    }
    if timed_out {
        terminate(&mut guard, &mut child).await;
        return Ok((writer.finish(), Ended::TimedOut));
    }
    let status = tokio::select! {
        status = child.wait() => status.map_err(|err| ToolError::fatal(format!("cannot wait for the shell: {err}")))?,
        () = &mut deadline => { terminate(&mut guard, &mut child).await; return Ok((writer.finish(), Ended::TimedOut)); }
        () = ctx.cancel.cancelled() => { terminate(&mut guard, &mut child).await; return Err(ToolError::Interrupted); }
    };
    // The shell exited; background children left in its group are killed by the guard.
    drop(guard);
    Ok((writer.finish(), Ended::Exited(status.code())))
}

/// SIGTERM to the group, SIGKILL after a grace period, then reap the shell.
async fn terminate(guard: &mut GroupGuard, child: &mut tokio::process::Child) {
    if let Some(pgid) = guard.pgid
        && killpg(pgid, Signal::SIGTERM).is_ok()
    {
        let _ = tokio::time::timeout(GRACE, child.wait()).await;
    }
    drop(std::mem::replace(guard, GroupGuard { pgid: guard.pgid }));
    if let Err(err) = child.wait().await {
        tracing::debug!(%err, "cannot reap the shell");
    }
}

/// Asks what OpenCode asks before running `command` in `workdir`: `external_directory` for paths
/// that file commands (`cd`, `rm`, `cp`, …) name outside the Location, then `bash` for every
/// simple command the rules do not already allow, approved `always` by its arity prefix.
async fn ask_permissions(ctx: &ToolContext, command: &str, workdir: &Path) -> Result<(), ToolError> {
    let commands = shell::parse(command);
    // The workdir itself was authorized when it was resolved.
    let mut directories: Vec<String> = Vec::new();
    for simple in &commands {
        for path in external_paths(ctx, simple, workdir)? {
            if !directories.contains(&path) {
                directories.push(path);
            }
        }
    }
    if !directories.is_empty() {
        let mut metadata = serde_json::Map::new();
        metadata.insert("command".into(), command.into());
        ctx.ask(PermissionAsk {
            permission: "external_directory".into(),
            patterns: directories.clone(),
            always: directories,
            metadata,
        })
        .await?;
    }
    let mut patterns: Vec<String> = Vec::new();
    let mut always: Vec<String> = Vec::new();
    for simple in commands.iter().filter(|simple| simple.words.first().is_some_and(|name| name != "cd")) {
        // Only what the rules do not allow yet is put to the user (a deny still refuses all).
        let single = PermissionAsk {
            permission: "bash".into(),
            patterns: vec![simple.text.clone()],
            always: Vec::new(),
            metadata: serde_json::Map::new(),
        };
        if ctx.permissions.evaluate(&ctx.agent.permission, &single) == PermissionAction::Allow
            || patterns.contains(&simple.text)
        {
            continue;
        }
        patterns.push(simple.text.clone());
        let pattern = arity::always_pattern(&simple.raw);
        if !always.contains(&pattern) {
            always.push(pattern);
        }
    }
    if patterns.is_empty() {
        return Ok(());
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("command".into(), command.into());
    ctx.ask(PermissionAsk { permission: "bash".into(), patterns, always, metadata }).await
}

/// Commands whose arguments are paths, as OpenCode checks them.
const FILE_COMMANDS: &[&str] = &["cd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "cat", "ln", "rmdir"];

/// `<dir>/*` patterns for the arguments of a file command that resolve outside the Location.
fn external_paths(ctx: &ToolContext, simple: &shell::SimpleCommand, workdir: &Path) -> Result<Vec<String>, ToolError> {
    let Some((name, args)) = simple.words.split_first() else { return Ok(Vec::new()) };
    if !FILE_COMMANDS.contains(&name.as_str()) {
        return Ok(Vec::new());
    }
    let home = std::env::var("HOME").ok();
    let mut found = Vec::new();
    for arg in args {
        if arg.is_empty() || arg.starts_with('-') || (name == "chmod" && arg.starts_with('+')) {
            continue;
        }
        let expanded = match (arg.strip_prefix('~'), &home) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
            _ => arg.clone(),
        };
        let absolute = workdir.join(&expanded);
        let resolved = ctx.location.resolve(&absolute.display().to_string())?;
        if resolved.scope != Scope::External {
            continue;
        }
        let dir = if resolved.path.is_dir() || name == "cd" || name == "mkdir" {
            resolved.path.clone()
        } else {
            resolved.path.parent().map_or_else(|| resolved.path.clone(), Path::to_path_buf)
        };
        found.push(format!("{}/*", dir.display().to_string().trim_end_matches('/')));
    }
    Ok(found)
}

/// The simple commands of a command line, as written (see [`shell::parse`]).
pub fn split_commands(command: &str) -> Vec<String> {
    shell::parse(command).into_iter().map(|simple| simple.text).collect()
}

/// The `always` pattern for a command: its arity prefix plus ` *` (`git checkout *`, `ls *`).
pub fn always_pattern(command: &str) -> String {
    let words = shell::parse(command).into_iter().next().map(|simple| simple.raw).unwrap_or_default();
    arity::always_pattern(&words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_outside_quotes() {
        assert_eq!(
            split_commands("cd a && ls -la | grep 'x;y' ; echo \"a&&b\""),
            ["cd a", "ls -la", "grep 'x;y'", "echo \"a&&b\""]
        );
    }

    #[test]
    fn always_patterns_use_arity() {
        assert_eq!(always_pattern("git checkout main"), "git checkout *");
        assert_eq!(always_pattern("npm run dev -- --port 3"), "npm run dev *");
        assert_eq!(always_pattern("ls -la"), "ls *");
    }
}
