//! Work-tree snapshots around each step, as OpenCode takes them (config `snapshot`, on by
//! default; only in git work trees): the tree before a step goes on its `step-start` part, the tree
//! after on its `step-finish` part, and the files it changed on a `patch` part (with the tree
//! before, which undo puts them back to). When a step changed files, the turn's diff becomes the
//! user message's `summary.diffs`, the session's diff its `summary` counts and a `session.diff`
//! event (what the TUI's and web app's changed-files views show). Snapshots never fail a turn: a
//! git failure is logged and the step goes on without one.

use opencode_session_store::EventKind;
use std::path::Path;
use std::sync::Arc;

use opencode_session_store::FileDiff;
use opencode_session_store::GLOBAL_PROJECT;
use opencode_session_store::MessageInfo;
use opencode_session_store::Revert;
use opencode_session_store::Session;
use opencode_session_store::SessionSummary;
use opencode_session_store::Store;
use opencode_session_store::UserSummary;
use opencode_snapshot::FileChange;
use opencode_snapshot::Snapshots;
use serde_json::json;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::runtime::Inner;

impl Inner {
    /// The snapshots of `session`'s work tree, when it is a git work tree and the session's config
    /// leaves snapshots on.
    pub(crate) fn snapshots(&self, session: &Session) -> Option<Snapshots> {
        let enabled = self.settings(&session.directory).map_or(true, |s| s.config.snapshot != Some(false));
        if !enabled {
            return None;
        }
        let worktree = opencode_config::find_worktree(Path::new(&session.directory))?;
        // A project's snapshots are kept under its id; a session outside any stored project (the
        // CLI's) under a name made from its work tree's path.
        let key = match session.project_id.as_str() {
            GLOBAL_PROJECT => format!("worktree-{:016x}", fnv1a(worktree.to_string_lossy().as_bytes())),
            project => project.to_owned(),
        };
        Snapshots::of(&self.snapshot_root, &key, &worktree)
    }
}

/// FNV-1a, 64 bits: a stable name for a path (std's hasher may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

/// The work tree's snapshot now, or `None` (logged) when git fails.
pub(crate) async fn track(snapshots: Option<&Snapshots>) -> Option<String> {
    let snapshots = snapshots?.clone();
    let tracked = tokio::task::spawn_blocking(move || snapshots.track()).await.ok()?;
    tracked.inspect_err(|err| tracing::warn!("{err}; the step goes on without a snapshot")).ok()
}

/// The files that differ between trees `before` and `after`, as absolute paths (empty when unknown).
pub(crate) async fn changed_files(snapshots: Option<&Snapshots>, before: &str, after: &str) -> Vec<String> {
    let Some(snapshots) = snapshots.cloned() else { return Vec::new() };
    let (before, after) = (before.to_owned(), after.to_owned());
    let changed = tokio::task::spawn_blocking(move || snapshots.changed_files(&before, &after)).await;
    match changed {
        Ok(Ok(files)) => files.into_iter().map(|file| file.to_string_lossy().into_owned()).collect(),
        Ok(Err(err)) => {
            tracing::warn!("{err}; the step's changed files are not recorded");
            Vec::new()
        }
        Err(_) => Vec::new(),
    }
}

/// After a step that changed files: the user message's turn diff, the session's diff and its
/// counts, written in one transaction with the `session.diff` event.
pub(crate) async fn summarize(
    store: Arc<Store>,
    snapshots: Snapshots,
    session_id: String,
    user: String,
    after: String,
) {
    let work = move || -> Result<(), String> {
        let read = |after: Option<&str>| {
            store.read(|r| r.first_step_snapshot(&session_id, after)).map_err(|err| err.to_string())
        };
        let (Some(turn_start), Some(session_start)) = (read(Some(&user))?, read(None)?) else { return Ok(()) };
        let turn = snapshots.diff(&turn_start, &after).map_err(|err| err.to_string())?;
        let whole = snapshots.diff(&session_start, &after).map_err(|err| err.to_string())?;
        let summary = SessionSummary {
            additions: whole.iter().map(|c| c.additions).sum(),
            deletions: whole.iter().map(|c| c.deletions).sum(),
            files: whole.len() as u64,
            diffs: None,
        };
        let diff: Vec<FileDiff> = whole.into_iter().map(file_diff).collect();
        store
            .write(|tx| {
                if let Some(MessageInfo::User(mut message)) = tx.reader().message_info(&user)? {
                    let summary = message.summary.get_or_insert_with(UserSummary::default);
                    summary.diffs = turn.into_iter().map(file_diff).collect();
                    tx.upsert_message(&MessageInfo::User(message))?;
                }
                tx.update_session(&session_id, |s| s.summary = Some(summary))?;
                tx.append_event(&session_id, EventKind::SessionDiff, json!({ "diff": diff })).map(drop)
            })
            .map_err(|err| err.to_string())
    };
    if let Ok(Err(err)) = tokio::task::spawn_blocking(work).await {
        tracing::warn!("the turn's diff is not recorded: {err}");
    }
}

/// A snapshot change as OpenCode's `SnapshotFileDiff`.
fn file_diff(change: FileChange) -> FileDiff {
    FileDiff {
        file: Some(change.file),
        patch: Some(change.patch),
        additions: change.additions,
        deletions: change.deletions,
        status: Some(change.kind.as_str().to_owned()),
    }
}

/// What an undo did to the work tree (OpenCode's revert of files: the reverted steps' patches
/// put back, oldest first).
#[derive(Debug, Clone)]
struct Undone {
    /// The tree before the undo (redo restores it).
    pub saved: String,
    /// The unified diff from the saved tree to the work tree now.
    pub text: String,
    /// The undone changes, per file (what the reverted steps had changed).
    pub changes: Vec<FileChange>,
}

/// Puts back the files the reverted steps changed: `patches` are the session's `patch` parts from
/// the revert point on, oldest first (`Reader::patches_from`); `saved` is a staged undo's saved tree,
/// if one is staged. Blocking (runs git).
fn undo_files(
    snapshots: &Snapshots,
    saved: Option<String>,
    patches: Vec<(String, Vec<String>)>,
) -> Result<Undone, opencode_snapshot::SnapshotError> {
    // A second undo keeps the first one's saved tree, so redo returns to before any undo.
    let saved = match saved {
        Some(saved) => saved,
        None => snapshots.track()?,
    };
    let patches: Vec<(String, Vec<std::path::PathBuf>)> = patches
        .into_iter()
        .map(|(tree, files)| (tree, files.into_iter().map(std::path::PathBuf::from).collect()))
        .collect();
    snapshots.revert(&patches)?;
    let now = snapshots.track()?;
    Ok(Undone { text: snapshots.diff_text(&saved, &now)?, changes: snapshots.diff(&now, &saved)?, saved })
}

/// Stages a revert of `session` from `message_id` (or `part_id`) on. Where the session keeps
/// work-tree snapshots, the files the reverted steps changed are put back first (OpenCode's undo),
/// the tree before is saved in `revert.snapshot` for redo, and `session.diff` reports what was
/// undone. The caller holds the session, so no turn runs meanwhile.
pub(crate) async fn revert(
    inner: &Inner,
    session: Session,
    message_id: String,
    part_id: Option<String>,
) -> Result<Session> {
    let mut revert = Revert { message_id, part_id, snapshot: None, diff: None };
    let mut undone = None;
    if let Some(snapshots) = inner.snapshots(&session) {
        let (session_id, from) = (session.id.clone(), revert.message_id.clone());
        let patches = blocking_store(inner, move |r| r.patches_from(&session_id, &from)).await?;
        let saved = session.revert.and_then(|staged| staged.snapshot);
        let files = tokio::task::spawn_blocking(move || undo_files(&snapshots, saved, patches))
            .await
            .map_err(RuntimeError::internal)?
            .map_err(files_unchanged)?;
        revert.snapshot = Some(files.saved);
        revert.diff = Some(files.text);
        undone = Some(files.changes);
    }
    let (store, id) = (Arc::clone(&inner.store), session.id);
    crate::store::blocking(move || {
        store.write(|tx| {
            let mut session = tx.set_revert(&id, revert)?;
            if let Some(changes) = undone {
                let summary = SessionSummary {
                    additions: changes.iter().map(|c| c.additions).sum(),
                    deletions: changes.iter().map(|c| c.deletions).sum(),
                    files: changes.len() as u64,
                    diffs: None,
                };
                session = tx.update_session(&id, |s| s.summary = Some(summary))?;
                let diff: Vec<FileDiff> = changes.into_iter().map(file_diff).collect();
                tx.append_event(&id, EventKind::SessionDiff, json!({ "diff": diff }))?;
            }
            Ok(session)
        })
    })
    .await
}

/// Undoes a staged revert of `session`; the files an undo put back return to the saved tree. The
/// caller holds the session.
pub(crate) async fn unrevert(inner: &Inner, session: Session) -> Result<Session> {
    let saved = session.revert.as_ref().and_then(|staged| staged.snapshot.clone());
    if let (Some(snapshots), Some(saved)) = (inner.snapshots(&session), saved) {
        tokio::task::spawn_blocking(move || snapshots.restore(&saved))
            .await
            .map_err(RuntimeError::internal)?
            .map_err(files_unchanged)?;
    }
    let (store, id) = (Arc::clone(&inner.store), session.id);
    crate::store::blocking(move || store.write(|tx| tx.clear_revert(&id))).await
}

async fn blocking_store<T: Send + 'static>(
    inner: &Inner,
    read: impl FnOnce(&opencode_session_store::Reader<'_>) -> opencode_session_store::Result<T> + Send + 'static,
) -> Result<T> {
    let store = Arc::clone(&inner.store);
    crate::store::blocking(move || store.read(read)).await
}

fn files_unchanged(err: opencode_snapshot::SnapshotError) -> RuntimeError {
    RuntimeError::Internal(format!("{err}; the session's files were not changed back"))
}
