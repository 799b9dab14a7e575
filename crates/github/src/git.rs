//! The checked-out repository, through the `git` program the runner has: whether the agent changed
//! anything, and the branch, commit and push that hand its changes back. Credentials are git's own
//! (the job's checkout keeps the token for `origin`), so nothing here sees a token.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

/// Who commits: the agent, as a GitHub App bot does, with the person who asked as co-author.
pub const AGENT_NAME: &str = "opencode-agent[bot]";
pub const AGENT_EMAIL: &str = "opencode-agent[bot]@users.noreply.github.com";

/// A `git` command that failed, in one line: the command and git's own last words.
#[derive(Debug, thiserror::Error)]
#[error("git {command} failed: {message}")]
pub struct GitError {
    pub command: String,
    pub message: String,
}

/// A work tree.
#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
}

impl Git {
    /// The work tree that holds `dir`.
    pub fn open(dir: &Path) -> Result<Self, GitError> {
        let top = Self { dir: dir.to_owned() }.git(&["rev-parse", "--show-toplevel"])?;
        Ok(Self { dir: PathBuf::from(top) })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether the work tree differs from its last commit (untracked files count; ignored ones don't).
    pub fn changed(&self) -> Result<bool, GitError> {
        Ok(!self.git(&["status", "--porcelain"])?.is_empty())
    }

    /// The checked-out branch, if any (a detached head has none).
    pub fn branch(&self) -> Option<String> {
        self.git(&["symbolic-ref", "--quiet", "--short", "HEAD"]).ok()
    }

    /// Starts branch `name` at the current commit, keeping the work tree as it is.
    pub fn create_branch(&self, name: &str) -> Result<(), GitError> {
        self.git(&["checkout", "-b", name]).map(drop)
    }

    /// Checks out `origin`'s branch `name` (a pull request's head) as a local branch of that name.
    pub fn check_out_remote(&self, name: &str) -> Result<(), GitError> {
        self.git(&["fetch", "--quiet", "origin", &format!("refs/heads/{name}")])?;
        self.git(&["checkout", "--quiet", "-B", name, "FETCH_HEAD"]).map(drop)
    }

    /// Commits everything that changed as the agent, `co_author` (a GitHub login) credited in a
    /// trailer; the new commit's id.
    pub fn commit_all(&self, subject: &str, body: &str, co_author: Option<&str>) -> Result<String, GitError> {
        self.git(&["add", "--all"])?;
        let mut message = format!("{}\n", subject.trim());
        if !body.trim().is_empty() {
            message.push_str(&format!("\n{}\n", body.trim()));
        }
        if let Some(login) = co_author.filter(|login| !login.is_empty()) {
            message.push_str(&format!("\nCo-authored-by: {login} <{login}@users.noreply.github.com>\n"));
        }
        let mut command = self.command(&["commit", "--quiet", "--no-verify", "--file", "-"]);
        for (key, value) in [
            ("GIT_AUTHOR_NAME", AGENT_NAME),
            ("GIT_AUTHOR_EMAIL", AGENT_EMAIL),
            ("GIT_COMMITTER_NAME", AGENT_NAME),
            ("GIT_COMMITTER_EMAIL", AGENT_EMAIL),
        ] {
            command.env(key, value);
        }
        run_with_input(command, "commit", &message)?;
        self.git(&["rev-parse", "HEAD"])
    }

    /// Pushes the current commit to `origin`'s branch `name`.
    pub fn push(&self, name: &str) -> Result<(), GitError> {
        self.git(&["push", "--quiet", "origin", &format!("HEAD:refs/heads/{name}")]).map(drop)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command.arg("-C").arg(&self.dir).args(args);
        // A prompt for credentials would hang a job; failing says what is missing instead.
        command.env("GIT_TERMINAL_PROMPT", "0");
        command
    }

    fn git(&self, args: &[&str]) -> Result<String, GitError> {
        let name = args.first().copied().unwrap_or_default();
        let output = self.command(args).output().map_err(|err| GitError {
            command: name.to_owned(),
            message: format!("cannot run git: {err} (is git installed?)"),
        })?;
        finish(name, &output)
    }
}

fn run_with_input(mut command: Command, name: &str, input: &str) -> Result<String, GitError> {
    use std::io::Write;
    let spawn_error = |err: std::io::Error| GitError { command: name.to_owned(), message: err.to_string() };
    command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    command.stderr(std::process::Stdio::piped());
    let mut child = command.spawn().map_err(spawn_error)?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.as_bytes()).map_err(spawn_error)?;
    }
    let output = child.wait_with_output().map_err(spawn_error)?;
    finish(name, &output)
}

fn finish(name: &str, output: &std::process::Output) -> Result<String, GitError> {
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("no message").trim();
    Err(GitError { command: name.to_owned(), message: message.to_owned() })
}
