//! Snapshots of a work tree, as OpenCode takes them: the whole tree (what `.gitignore` leaves in)
//! written as a git tree object into a private repository under the data directory, one per
//! project. The user's own repository, index and history are never touched; only the files of the
//! work tree are, and only when asked to put them back ([`Snapshots::revert`], [`Snapshots::restore`]).
//!
//! A session records the tree before and after each step (`step-start` / `step-finish` parts), the
//! files a step changed (a `patch` part, with the tree before), and each turn's diff (the user
//! message's `summary.diffs`); undo reverts the patches' files, redo restores the tree undo saved.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

/// A git command that failed, in one line.
#[derive(Debug, thiserror::Error)]
#[error("snapshot: git {command} failed: {message}")]
pub struct SnapshotError {
    pub command: String,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, SnapshotError>;

/// How a file changed between two trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Deleted => "deleted",
            Self::Modified => "modified",
        }
    }
}

/// One file's change: its path relative to the work tree, a unified diff, line counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub file: String,
    pub patch: String,
    pub additions: u64,
    pub deletions: u64,
    pub kind: ChangeKind,
}

/// The most patch text one diff carries; files past it are listed with counts but no patch.
pub const MAX_PATCH_BYTES: usize = 10_000_000;

/// The snapshots of one work tree.
#[derive(Debug, Clone)]
pub struct Snapshots {
    git_dir: PathBuf,
    worktree: PathBuf,
}

impl Snapshots {
    /// The snapshots of `worktree` (a git work tree's root), kept in `root/<project>`. `None` when
    /// `worktree` is not a git work tree: a directory without version control may be a home
    /// directory, too big to snapshot on every step.
    pub fn of(root: &Path, project: &str, worktree: &Path) -> Option<Self> {
        worktree.join(".git").exists().then(|| Self { git_dir: root.join(project), worktree: worktree.to_owned() })
    }

    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// Writes the work tree as it is now; the tree's id.
    pub fn track(&self) -> Result<String> {
        self.init()?;
        self.git(&["add", "--all", "."])?;
        self.git(&["write-tree"])
    }

    /// The files that differ between trees `from` and `to`, as absolute paths.
    pub fn changed_files(&self, from: &str, to: &str) -> Result<Vec<PathBuf>> {
        let names = self.git(&["diff", "--no-ext-diff", "--no-renames", "--name-only", "-z", from, to, "--", "."])?;
        Ok(names.split('\0').filter(|name| !name.is_empty()).map(|name| self.worktree.join(name)).collect())
    }

    /// The changes from tree `from` to tree `to`, per file, sorted by path.
    pub fn diff(&self, from: &str, to: &str) -> Result<Vec<FileChange>> {
        let statuses =
            self.git(&["diff", "--no-ext-diff", "--no-renames", "--name-status", "-z", from, to, "--", "."])?;
        let counts = self.git(&["diff", "--no-ext-diff", "--no-renames", "--numstat", "-z", from, to, "--", "."])?;
        let patches = self.git_raw(&["diff", "--no-ext-diff", "--no-renames", "--patch", from, to, "--", "."])?;
        let patches = split_patches(&patches);
        let counts = numstat(&counts);
        let fields: Vec<&str> = statuses.split('\0').collect();
        let mut changes = Vec::new();
        let mut total = 0;
        for pair in fields.chunks(2) {
            let [code, file] = pair else { continue };
            if file.is_empty() {
                continue;
            }
            let kind = match code.chars().next() {
                Some('A') => ChangeKind::Added,
                Some('D') => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            let (additions, deletions) = counts.iter().find(|(name, _)| name == file).map_or((0, 0), |(_, c)| *c);
            let mut patch = patches.iter().find(|(name, _)| name == file).map(|(_, p)| p.clone()).unwrap_or_default();
            total += patch.len();
            if total > MAX_PATCH_BYTES {
                patch.clear();
            }
            changes.push(FileChange { file: (*file).to_owned(), patch, additions, deletions, kind });
        }
        changes.sort_by(|a, b| a.file.cmp(&b.file));
        Ok(changes)
    }

    /// The unified diff from tree `from` to tree `to` (what an undo changed, shown on redo).
    pub fn diff_text(&self, from: &str, to: &str) -> Result<String> {
        self.git_raw(&["diff", "--no-ext-diff", "--no-renames", from, to, "--", "."])
    }

    /// Puts files back as they were: for each `(tree, files)` in order, each file not yet put back
    /// is checked out from that tree, or removed when the tree did not have it. The first patch that
    /// names a file decides, so patches go oldest first.
    pub fn revert(&self, patches: &[(String, Vec<PathBuf>)]) -> Result<()> {
        let mut done: Vec<&Path> = Vec::new();
        for (tree, files) in patches {
            for file in files {
                if done.contains(&file.as_path()) {
                    continue;
                }
                done.push(file);
                let Ok(relative) = file.strip_prefix(&self.worktree) else { continue };
                let relative = relative.to_string_lossy();
                let listed = self.git(&["ls-tree", tree, "--", &relative])?;
                if listed.is_empty() {
                    match std::fs::remove_file(file) {
                        Ok(()) => {}
                        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                        Err(err) => return Err(self.error("rm", err.to_string())),
                    }
                } else {
                    self.git(&["checkout", tree, "--", &relative])?;
                }
            }
        }
        Ok(())
    }

    /// Makes the work tree's files what tree `tree` has: changed and deleted files come back, files
    /// it did not have are removed (ignored files are left alone).
    pub fn restore(&self, tree: &str) -> Result<()> {
        let now = self.track()?;
        let removed =
            self.git(&["diff", "--no-renames", "--name-only", "--diff-filter=A", "-z", tree, &now, "--", "."])?;
        self.git(&["read-tree", tree])?;
        self.git(&["checkout-index", "--all", "--force"])?;
        for name in removed.split('\0').filter(|name| !name.is_empty()) {
            let _already_gone = std::fs::remove_file(self.worktree.join(name));
        }
        Ok(())
    }

    /// Creates the private repository on first use.
    fn init(&self) -> Result<()> {
        if self.git_dir.join("HEAD").exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.git_dir).map_err(|err| self.error("init", err.to_string()))?;
        self.git(&["init", "--quiet"])?;
        // Line endings and file modes as they are on disk: a snapshot records, it does not convert.
        self.git(&["config", "core.autocrlf", "false"])?;
        self.git(&["config", "core.longpaths", "true"])?;
        self.git(&["config", "core.symlinks", "true"])?;
        self.git(&["config", "core.fsmonitor", "false"]).map(drop)
    }

    /// A git command's output without its final line break (ids, names).
    fn git(&self, args: &[&str]) -> Result<String> {
        let text = self.git_raw(args)?;
        Ok(text.strip_suffix('\n').unwrap_or(&text).to_owned())
    }

    /// A git command's output as it is (patches end with a line break).
    fn git_raw(&self, args: &[&str]) -> Result<String> {
        let output = Command::new("git")
            .arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.worktree)
            .args(["-c", "core.quotepath=false", "-c", "diff.noprefix=false"])
            .args(args)
            .current_dir(&self.worktree)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .map_err(|err| self.error(args[0], format!("cannot run git: {err}")))?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        let message = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("no message");
        Err(self.error(args[0], message.trim().to_owned()))
    }

    fn error(&self, command: &str, message: String) -> SnapshotError {
        SnapshotError { command: command.to_owned(), message }
    }
}

/// `git diff --numstat -z`: `(file, (added, removed))`; binary files count zero.
fn numstat(text: &str) -> Vec<(String, (u64, u64))> {
    text.split('\0')
        .filter_map(|entry| {
            let mut fields = entry.splitn(3, '\t');
            let added = fields.next()?.trim().parse().unwrap_or(0);
            let removed = fields.next()?.parse().unwrap_or(0);
            let file = fields.next()?;
            (!file.is_empty()).then(|| (file.to_owned(), (added, removed)))
        })
        .collect()
}

/// Splits a multi-file patch into one patch per file (keyed by the path after `b/`, or `a/` for a
/// deleted file).
fn split_patches(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in text.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff --git ") {
            if let Some(done) = current.take() {
                out.push(done);
            }
            let name = header.trim_end().rsplit_once(" b/").map(|(_, b)| b.to_owned()).unwrap_or_default();
            current = Some((name, String::new()));
        }
        if let Some((_, patch)) = current.as_mut() {
            patch.push_str(line);
        }
    }
    out.extend(current);
    out
}
