//! Version control of an instance, read with `git` run as a subprocess (each call bounded by
//! [`GIT_TIMEOUT`]): `GET /vcs` (current and default branch), `GET /vcs/status` (changed files with
//! line counts), `GET /vcs/diff?mode=git|branch` (the same with patches, against `HEAD` or against
//! the merge base with the default branch), `GET /vcs/diff/raw` (one patch of uncommitted changes),
//! and `GET /session/{id}/diff` (the file changes stored on a user message's summary).
//!
//! As OpenCode: outside a git worktree (or without `git`) every list is empty and `/vcs` is `{}`;
//! paths are relative to the repository root and sorted; untracked files count as added; a patch
//! that would take the answer past [`MAX_PATCH_BYTES`] is replaced by an empty patch of the file.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::Response;
use opencode_session_store::FileDiff;
use opencode_session_store::MessageInfo;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

use super::Op;
use super::session;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::P;
use crate::extract::Q;
use crate::instance::Instance;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/vcs", "vcs.get", "Current and default git branch of the instance", info_route).returns::<VcsInfo>(),
        Op::get("/vcs/status", "vcs.status", "Changed files of the working tree, without patches", status_route)
            .returns::<Vec<VcsFileStatus>>(),
        Op::get("/vcs/diff", "vcs.diff", "Changed files with patches, against HEAD or the default branch", diff_route)
            .query(&["mode", "context"])
            .returns::<Vec<VcsFileDiff>>(),
        Op::get("/vcs/diff/raw", "vcs.diff.raw", "One patch (text/x-diff) of the uncommitted changes", raw_route)
            .returns::<String>(),
        Op::get("/session/{sessionID}/diff", "session.diff", "File changes of one user message", session_diff_route)
            .query(&["messageID"])
            .returns::<Vec<SnapshotFileDiff>>(),
    ]
}

/// `VcsInfo`: absent fields when unknown (detached HEAD, no default branch, not a repository).
#[derive(Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct VcsInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_branch: Option<String>,
}

/// `VcsFileStatus`.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct VcsFileStatus {
    file: String,
    additions: u64,
    deletions: u64,
    status: Kind,
}

/// `VcsFileDiff`.
#[derive(Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct VcsFileDiff {
    file: String,
    patch: String,
    additions: u64,
    deletions: u64,
    status: Kind,
}

/// `SnapshotFileDiff` (the schema of a stored message diff).
#[derive(JsonSchema)]
#[allow(dead_code, reason = "schema only: the stored FileDiff is served")]
pub(crate) struct SnapshotFileDiff {
    file: Option<String>,
    patch: Option<String>,
    additions: u64,
    deletions: u64,
    status: Option<Kind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    Added,
    Deleted,
    Modified,
}

#[derive(Debug, Deserialize)]
pub(crate) struct DiffQuery {
    mode: Option<String>,
    context: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct SessionDiffQuery {
    #[serde(rename = "messageID")]
    message_id: Option<String>,
}

/// How long one git command may run.
pub(crate) const GIT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most patch text one answer carries (OpenCode's cap).
pub(crate) const MAX_PATCH_BYTES: usize = 10_000_000;
/// Lines of context by default: the whole file, as OpenCode shows it.
const FULL_CONTEXT: u64 = 2_147_483_647;

async fn info_route(Dir(i): Dir) -> Json<VcsInfo> {
    let Some(git) = Git::of(&i) else { return Json(VcsInfo::default()) };
    let (branch, default) = tokio::join!(git.branch(), git.default_branch());
    Json(VcsInfo { branch, default_branch: default.map(|base| base.name) })
}

async fn status_route(Dir(i): Dir) -> Json<Vec<VcsFileStatus>> {
    let Some(git) = Git::of(&i) else { return Json(Vec::new()) };
    Json(git.status_with_counts().await)
}

async fn diff_route(Dir(i): Dir, Q(q): Q<DiffQuery>) -> Result<Json<Vec<VcsFileDiff>>, ApiError> {
    let branch = match q.mode.as_deref() {
        Some("git") => false,
        Some("branch") => true,
        Some(other) => return Err(ApiError::bad(format!("mode must be \"git\" or \"branch\", not {other:?}"))),
        None => return Err(ApiError::bad("mode is required: \"git\" or \"branch\"")),
    };
    let context = match q.context.as_deref() {
        None => FULL_CONTEXT,
        Some(text) => text
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= FULL_CONTEXT)
            .ok_or_else(|| ApiError::bad(format!("context must be a whole number of lines, not {text:?}")))?,
    };
    let Some(git) = Git::of(&i) else { return Ok(Json(Vec::new())) };
    let files = if branch { git.branch_diff(context).await } else { git.working_diff(context).await };
    Ok(Json(files))
}

async fn raw_route(Dir(i): Dir) -> Response {
    let text = match Git::of(&i) {
        Some(git) => git.raw_diff().await,
        None => String::new(),
    };
    ([(header::CONTENT_TYPE, "text/x-diff; charset=utf-8")], text).into_response()
}

async fn session_diff_route(
    State(s): State<AppState>,
    P(id): P<String>,
    Q(q): Q<SessionDiffQuery>,
) -> Result<Json<Vec<FileDiff>>, ApiError> {
    session::session(&s, &id).await?;
    // OpenCode: without a message there is nothing to show.
    let Some(message) = q.message_id else { return Ok(Json(Vec::new())) };
    session::check_id(&message, "msg", "message")?;
    let found = s.read(move |r| r.message_info(&message)).await?;
    let diffs = match found {
        Some(MessageInfo::User(user)) if user.session_id == id => user.summary.map(|s| s.diffs).unwrap_or_default(),
        _ => Vec::new(),
    };
    Ok(Json(
        diffs
            .into_iter()
            .map(|mut diff| {
                diff.file = diff.file.map(|file| unquote_path(&file));
                diff
            })
            .collect(),
    ))
}

// ---- git ----

/// Git commands in one instance directory; `None` outside a git worktree.
struct Git<'a> {
    directory: &'a Path,
    worktree: &'a Path,
}

/// One line of `git status`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Item {
    file: String,
    code: String,
    kind: Kind,
}

/// A branch to compare with: its short name and the ref to pass to git.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Base {
    name: String,
    reference: String,
}

type Counts = HashMap<String, (u64, u64)>;

impl<'a> Git<'a> {
    fn of(instance: &'a Instance) -> Option<Self> {
        instance
            .worktree
            .join(".git")
            .exists()
            .then_some(Self { directory: &instance.directory, worktree: &instance.worktree })
    }

    /// Runs git in the instance directory; `None` when it cannot start or overruns [`GIT_TIMEOUT`].
    async fn run(&self, args: &[&str]) -> Option<std::process::Output> {
        run_git(self.directory, args).await
    }

    /// Stdout of a successful run, else empty.
    async fn text(&self, args: &[&str]) -> String {
        match self.run(args).await {
            Some(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            _ => String::new(),
        }
    }

    async fn branch(&self) -> Option<String> {
        let out = self.run(&["symbolic-ref", "--quiet", "--short", "HEAD"]).await?;
        let name = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        (out.status.success() && !name.is_empty()).then_some(name)
    }

    /// The remote's HEAD (origin first), else `init.defaultBranch`, `main` or `master` when such a local
    /// branch exists.
    async fn default_branch(&self) -> Option<Base> {
        let remotes = lines(&self.text(&["remote"]).await);
        let remote = ["origin", "upstream"]
            .iter()
            .find(|name| remotes.iter().any(|r| r == *name) && (**name == "origin" || remotes.len() != 1))
            .map(|name| (*name).to_owned())
            .or_else(|| remotes.first().cloned());
        if let Some(remote) = remote {
            let head = self.text(&["symbolic-ref", &format!("refs/remotes/{remote}/HEAD")]).await;
            let reference = head.trim().trim_start_matches("refs/remotes/").to_owned();
            if let Some(name) = reference.strip_prefix(&format!("{remote}/")).filter(|n| !n.is_empty()) {
                return Some(Base { name: name.to_owned(), reference: reference.clone() });
            }
        }
        let local = lines(&self.text(&["for-each-ref", "--format=%(refname:short)", "refs/heads"]).await);
        let configured = self.text(&["config", "init.defaultBranch"]).await.trim().to_owned();
        [configured.as_str(), "main", "master"]
            .into_iter()
            .find(|name| !name.is_empty() && local.iter().any(|l| l == name))
            .map(|name| Base { name: name.to_owned(), reference: name.to_owned() })
    }

    async fn has_head(&self) -> bool {
        self.run(&["rev-parse", "--verify", "--quiet", "HEAD"]).await.is_some_and(|out| out.status.success())
    }

    /// Changed and untracked files under the instance directory.
    async fn status(&self) -> Vec<Item> {
        let text =
            self.text(&["status", "--porcelain=v1", "--untracked-files=all", "--no-renames", "-z", "--", "."]).await;
        text.split('\0')
            .filter_map(|entry| {
                let (code, file) = (entry.get(..2)?, entry.get(3..)?);
                (!file.is_empty()).then(|| Item { file: file.to_owned(), code: code.to_owned(), kind: kind(code) })
            })
            .collect()
    }

    /// Files that differ from `reference` (tracked files only).
    async fn changed_since(&self, reference: &str) -> Vec<Item> {
        let text =
            self.text(&["diff", "--no-ext-diff", "--no-renames", "--name-status", "-z", reference, "--", "."]).await;
        let fields: Vec<&str> = text.split('\0').collect();
        fields
            .chunks(2)
            .filter_map(|pair| match pair {
                [code, file] if !code.is_empty() && !file.is_empty() => {
                    Some(Item { file: (*file).to_owned(), code: (*code).to_owned(), kind: kind(code) })
                }
                _ => None,
            })
            .collect()
    }

    async fn counts(&self, reference: &str) -> Counts {
        numstat(&self.text(&["diff", "--no-ext-diff", "--no-renames", "--numstat", "-z", reference, "--", "."]).await)
    }

    /// Line counts of an untracked file (as if added). Run from the worktree: status paths are
    /// relative to it.
    async fn untracked_counts(&self, file: &str) -> (u64, u64) {
        let Some(out) = run_git(self.worktree, &["diff", "--no-index", "--numstat", "--", "/dev/null", file]).await
        else {
            return (0, 0);
        };
        // `--no-index` exits with 1 when the files differ.
        let text = String::from_utf8_lossy(&out.stdout);
        let mut fields = text.split('\t');
        match (fields.next(), fields.next()) {
            (Some(added), Some(removed)) => (count(added), count(removed)),
            _ => (0, 0),
        }
    }

    /// A patch of an untracked file against nothing.
    async fn untracked_patch(&self, file: &str, context: u64) -> String {
        let unified = format!("--unified={context}");
        let args =
            ["diff", "--no-index", "--patch", "--no-ext-diff", "--no-renames", &unified, "--", "/dev/null", file];
        match run_git(self.worktree, &args).await {
            Some(out) if out.stdout.len() <= MAX_PATCH_BYTES => String::from_utf8_lossy(&out.stdout).into_owned(),
            _ => String::new(),
        }
    }

    async fn status_with_counts(&self) -> Vec<VcsFileStatus> {
        let head = self.has_head().await;
        let mut list = self.status().await;
        let counts = if head { self.counts("HEAD").await } else { Counts::new() };
        list.sort_by(|a, b| a.file.cmp(&b.file));
        let mut out = Vec::with_capacity(list.len());
        for item in list {
            let (additions, deletions) = match counts.get(&item.file) {
                Some(found) => *found,
                None if item.kind == Kind::Added => self.untracked_counts(&item.file).await,
                None => (0, 0),
            };
            out.push(VcsFileStatus { file: item.file, additions, deletions, status: item.kind });
        }
        out
    }

    /// `mode=git`: the working tree against `HEAD` (everything is added before the first commit).
    async fn working_diff(&self, context: u64) -> Vec<VcsFileDiff> {
        if self.has_head().await {
            return self.diff_against("HEAD", context).await;
        }
        let list = self.status().await;
        self.files(None, list, Counts::new(), HashMap::new(), context).await
    }

    /// `mode=branch`: the working tree against the merge base with the default branch; nothing on the
    /// default branch itself.
    async fn branch_diff(&self, context: u64) -> Vec<VcsFileDiff> {
        let (current, base) = tokio::join!(self.branch(), self.default_branch());
        let Some(base) = base else { return Vec::new() };
        if current.as_deref() == Some(base.name.as_str()) {
            return Vec::new();
        }
        let merge_base = self.text(&["merge-base", &base.reference, "HEAD"]).await.trim().to_owned();
        if merge_base.is_empty() {
            return Vec::new();
        }
        self.diff_against(&merge_base, context).await
    }

    async fn diff_against(&self, reference: &str, context: u64) -> Vec<VcsFileDiff> {
        let (mut list, counts, status) =
            tokio::join!(self.changed_since(reference), self.counts(reference), self.status());
        for item in status.into_iter().filter(|item| item.code == "??") {
            if list.iter().all(|known| known.file != item.file) {
                list.push(item);
            }
        }
        let unified = format!("--unified={context}");
        let all = self
            .run(&["diff", "--patch", "--no-ext-diff", "--no-renames", &unified, reference, "--", "."])
            .await
            .filter(|out| out.stdout.len() <= MAX_PATCH_BYTES)
            .map(|out| split_patches(&String::from_utf8_lossy(&out.stdout)))
            .unwrap_or_default();
        self.files(Some(reference), list, counts, all, context).await
    }

    /// The answer: one entry per file, sorted, each with its patch until the total passes the cap.
    async fn files(
        &self,
        reference: Option<&str>,
        mut list: Vec<Item>,
        counts: Counts,
        patches: HashMap<String, String>,
        context: u64,
    ) -> Vec<VcsFileDiff> {
        list.sort_by(|a, b| a.file.cmp(&b.file));
        let mut out = Vec::with_capacity(list.len());
        let (mut total, mut capped) = (0usize, false);
        for item in list {
            let (mut additions, mut deletions) = counts.get(&item.file).copied().unwrap_or_default();
            let untracked = item.code == "??" || reference.is_none();
            if untracked && !counts.contains_key(&item.file) {
                (additions, deletions) = self.untracked_counts(&item.file).await;
            }
            let patch = if capped {
                empty_patch(&item.file)
            } else {
                let patch = match patches.get(&item.file) {
                    Some(patch) => patch.clone(),
                    None if untracked => self.untracked_patch(&item.file, context).await,
                    None => self.file_patch(reference.unwrap_or("HEAD"), &item.file, context).await,
                };
                let patch = if patch.is_empty() { empty_patch(&item.file) } else { patch };
                if total + patch.len() > MAX_PATCH_BYTES {
                    capped = true;
                    empty_patch(&item.file)
                } else {
                    total += patch.len();
                    patch
                }
            };
            out.push(VcsFileDiff { file: item.file, patch, additions, deletions, status: item.kind });
        }
        out
    }

    /// One tracked file's patch (when the combined patch did not name it, or was too large).
    async fn file_patch(&self, reference: &str, file: &str, context: u64) -> String {
        let unified = format!("--unified={context}");
        let pathspec = format!(":(top,literal){file}");
        match self
            .run(&["diff", "--patch", "--no-ext-diff", "--no-renames", &unified, reference, "--", &pathspec])
            .await
        {
            Some(out) if out.status.success() && out.stdout.len() <= MAX_PATCH_BYTES => {
                String::from_utf8_lossy(&out.stdout).into_owned()
            }
            _ => String::new(),
        }
    }

    /// Tracked changes against `HEAD`, then each untracked file's patch, joined by a newline.
    async fn raw_diff(&self) -> String {
        let tracked = if self.has_head().await {
            self.text(&["diff", "--patch", "--no-ext-diff", "--no-renames", "HEAD", "--", "."]).await
        } else {
            String::new()
        };
        let mut parts = vec![tracked];
        for item in self.status().await.into_iter().filter(|item| item.code == "??") {
            parts.push(self.untracked_patch(&item.file, 3).await);
        }
        parts.retain(|part| !part.is_empty());
        parts.join("\n")
    }
}

/// Runs git with OpenCode's settings (no optional locks, no path quoting, no CRLF conversion); `None`
/// when it cannot start or overruns [`GIT_TIMEOUT`] (it is then killed).
async fn run_git(directory: &Path, args: &[&str]) -> Option<std::process::Output> {
    let mut command = tokio::process::Command::new("git");
    command
        .args(["--no-optional-locks", "-c", "core.quotepath=false", "-c", "core.autocrlf=false"])
        .args(["-c", "core.fsmonitor=false"])
        .args(args)
        .current_dir(directory)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(GIT_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => Some(output),
        Ok(Err(err)) => {
            tracing::debug!(%err, "git did not start");
            None
        }
        Err(_) => {
            tracing::warn!(?args, directory = %directory.display(), "git took longer than {GIT_TIMEOUT:?}; stopped");
            None
        }
    }
}

/// OpenCode's reading of a two-letter status code.
fn kind(code: &str) -> Kind {
    if code == "??" || (code.contains('A') && !code.contains('D') && !code.contains('U')) {
        Kind::Added
    } else if code.contains('D') && !code.contains('A') && !code.contains('U') {
        Kind::Deleted
    } else {
        Kind::Modified
    }
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// A `--numstat` count (`-` for binary files counts 0).
fn count(field: &str) -> u64 {
    field.trim().parse().unwrap_or(0)
}

/// `--numstat -z` output: `added\tremoved\tpath\0` per file.
fn numstat(text: &str) -> Counts {
    text.split('\0')
        .filter_map(|entry| {
            let mut fields = entry.splitn(3, '\t');
            let (added, removed, file) = (fields.next()?, fields.next()?, fields.next()?);
            (!file.is_empty()).then(|| (file.to_owned(), (count(added), count(removed))))
        })
        .collect()
}

/// Splits a multi-file patch into each file's part, keyed by its path.
fn split_patches(text: &str) -> HashMap<String, String> {
    let mut starts: Vec<usize> = text.match_indices("diff --git ").map(|(at, _)| at).collect();
    starts.retain(|at| *at == 0 || text.as_bytes().get(at - 1) == Some(&b'\n'));
    let mut out: HashMap<String, String> = HashMap::new();
    for (index, start) in starts.iter().enumerate() {
        let end = starts.get(index + 1).copied().unwrap_or(text.len());
        let Some(chunk) = text.get(*start..end) else { continue };
        if let Some(file) = file_of_chunk(chunk) {
            out.entry(file).or_default().push_str(chunk);
        }
    }
    out
}

/// The path a patch chunk is about: its `+++` line, else its `---` line, else its header.
fn file_of_chunk(chunk: &str) -> Option<String> {
    let line = |prefix: &str| chunk.lines().find_map(|l| l.strip_prefix(prefix)).and_then(diff_path);
    line("+++ ").or_else(|| line("--- ")).or_else(|| {
        let header = chunk.lines().next()?.strip_prefix("diff --git ")?;
        let at = header.find(" b/")?;
        diff_path(header.get(at + 1..)?)
    })
}

/// A path of a `---`/`+++` line without its `a/`/`b/` prefix; `None` for `/dev/null`.
fn diff_path(raw: &str) -> Option<String> {
    let raw = raw.trim_end_matches('\t');
    if raw == "/dev/null" {
        return None;
    }
    let path = if raw.starts_with('"') { unquote_path(raw) } else { raw.to_owned() };
    Some(path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(&path).to_owned())
}

/// The patch OpenCode sends for a file whose patch is not shown (too large, or unavailable).
fn empty_patch(file: &str) -> String {
    format!("Index: {file}\n{}\n--- {file}\t\n+++ {file}\t\n", "=".repeat(67))
}

/// Undoes git's C-style quoting of a path (`"a\tb\303\251"`); other text is returned as it is.
pub(crate) fn unquote_path(input: &str) -> String {
    let Some(body) = input.strip_prefix('"').and_then(|rest| rest.strip_suffix('"')) else {
        return input.to_owned();
    };
    let mut bytes = Vec::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0u8; 4];
            bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            None => bytes.push(b'\\'),
            Some(d @ '0'..='7') => {
                let mut value = d.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|n| n.to_digit(8)) {
                        Some(digit) => {
                            value = value * 8 + digit;
                            chars.next();
                        }
                        None => break,
                    }
                }
                bytes.push(u8::try_from(value).unwrap_or(b'?'));
            }
            Some(escaped) => {
                let byte = match escaped {
                    'n' => b'\n',
                    'r' => b'\r',
                    't' => b'\t',
                    'b' => 0x08,
                    'f' => 0x0c,
                    'v' => 0x0b,
                    'a' => 0x07,
                    other => {
                        let mut buf = [0u8; 4];
                        bytes.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
                        continue;
                    }
                };
                bytes.push(byte);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_read_as_opencode_reads_them() {
        assert_eq!(kind("??"), Kind::Added);
        assert_eq!(kind("A "), Kind::Added);
        assert_eq!(kind(" D"), Kind::Deleted);
        assert_eq!(kind(" M"), Kind::Modified);
        assert_eq!(kind("AD"), Kind::Modified);
        assert_eq!(kind("UU"), Kind::Modified);
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        assert_eq!(unquote_path("plain.txt"), "plain.txt");
        assert_eq!(unquote_path(r#""a\tb.txt""#), "a\tb.txt");
        assert_eq!(unquote_path(r#""caf\303\251.txt""#), "café.txt");
        assert_eq!(unquote_path(r#""say \"hi\"""#), "say \"hi\"");
    }

    #[test]
    fn a_combined_patch_splits_per_file() {
        let text = "diff --git a/x.txt b/x.txt\n--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n\
                    diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n";
        let split = split_patches(text);
        assert_eq!(split.len(), 2);
        assert!(split["x.txt"].ends_with("+b\n"));
        assert!(split["gone.txt"].starts_with("diff --git a/gone.txt"));
    }

    #[test]
    fn numstat_counts_binary_files_as_zero() {
        let counts = numstat("3\t1\tsrc/a.rs\0-\t-\timg.png\0");
        assert_eq!(counts.get("src/a.rs"), Some(&(3, 1)));
        assert_eq!(counts.get("img.png"), Some(&(0, 0)));
    }
}
