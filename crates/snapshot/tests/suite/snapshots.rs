//! Snapshots of a real git work tree: what changed, the diff between two trees, undo and redo of
//! files, and the user's own repository left as it was.

use opencode_mock_provider::git::git;
use opencode_snapshot::ChangeKind;
use opencode_snapshot::Snapshots;
use pretty_assertions::assert_eq;

/// A work tree with a committed `a.txt`, an ignored `build/`; its snapshots under `data`.
fn project() -> (tempfile::TempDir, Snapshots) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("build")).unwrap();
    git(&work, &["init", "--quiet"]);
    std::fs::write(work.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(work.join(".gitignore"), "build/\n").unwrap();
    std::fs::write(work.join("build/out.bin"), "ignored").unwrap();
    git(&work, &["add", "."]);
    git(&work, &["commit", "--quiet", "-m", "start"]);
    let snapshots = Snapshots::of(&dir.path().join("data/snapshot"), "project", &work).unwrap();
    (dir, snapshots)
}

#[test]
fn a_directory_outside_git_has_no_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    assert!(Snapshots::of(dir.path(), "p", dir.path()).is_none());
}

#[test]
fn a_step_s_changes_are_listed_and_diffed_per_file() {
    let (_dir, snapshots) = project();
    let work = snapshots.worktree().to_owned();
    let before = snapshots.track().unwrap();
    assert_eq!(snapshots.track().unwrap(), before, "an unchanged tree has the same id");
    std::fs::write(work.join("a.txt"), "one\n2\n").unwrap();
    std::fs::write(work.join("new.txt"), "fresh\n").unwrap();
    std::fs::write(work.join("build/more.bin"), "ignored too").unwrap();
    let after = snapshots.track().unwrap();
    let mut changed = snapshots.changed_files(&before, &after).unwrap();
    changed.sort();
    assert_eq!(changed, [work.join("a.txt"), work.join("new.txt")]);

    let diff = snapshots.diff(&before, &after).unwrap();
    assert_eq!(
        diff.iter().map(|d| (d.file.as_str(), d.kind, d.additions, d.deletions)).collect::<Vec<_>>(),
        [("a.txt", ChangeKind::Modified, 1, 1), ("new.txt", ChangeKind::Added, 1, 0)]
    );
    assert!(diff[0].patch.starts_with("diff --git a/a.txt b/a.txt\n"), "{}", diff[0].patch);
    assert!(diff[0].patch.contains("\n-two\n+2\n"), "{}", diff[0].patch);
    assert!(diff[1].patch.contains("+fresh\n"), "{}", diff[1].patch);

    // The user's repository saw nothing: no new objects staged, the same status.
    assert_eq!(git(&work, &["status", "--porcelain"]), " M a.txt\n?? new.txt");
}

#[test]
fn undo_puts_files_back_and_redo_restores_what_undo_saved() {
    let (_dir, snapshots) = project();
    let work = snapshots.worktree().to_owned();
    let before = snapshots.track().unwrap();
    std::fs::write(work.join("a.txt"), "changed\n").unwrap();
    std::fs::write(work.join("new.txt"), "fresh\n").unwrap();
    // Undo: the state before is saved, then the patch's files go back.
    let saved = snapshots.track().unwrap();
    let files = snapshots.changed_files(&before, &saved).unwrap();
    snapshots.revert(&[(before.clone(), files)]).unwrap();
    assert_eq!(std::fs::read_to_string(work.join("a.txt")).unwrap(), "one\ntwo\n");
    assert!(!work.join("new.txt").exists());
    assert!(work.join("build/out.bin").exists(), "ignored files are left alone");
    let undone = snapshots.diff_text(&saved, &snapshots.track().unwrap()).unwrap();
    assert!(undone.contains("-changed\n") && undone.contains("-fresh\n"), "{undone}");

    // Redo: back to the saved tree.
    snapshots.restore(&saved).unwrap();
    assert_eq!(std::fs::read_to_string(work.join("a.txt")).unwrap(), "changed\n");
    assert_eq!(std::fs::read_to_string(work.join("new.txt")).unwrap(), "fresh\n");

    // Restoring the earlier tree removes what it did not have.
    snapshots.restore(&before).unwrap();
    assert!(!work.join("new.txt").exists());
    assert_eq!(git(&work, &["status", "--porcelain"]), "");
}

#[test]
fn the_first_patch_naming_a_file_decides_what_it_goes_back_to() {
    let (_dir, snapshots) = project();
    let work = snapshots.worktree().to_owned();
    let first = snapshots.track().unwrap();
    std::fs::write(work.join("a.txt"), "step one\n").unwrap();
    let second = snapshots.track().unwrap();
    let one = snapshots.changed_files(&first, &second).unwrap();
    std::fs::write(work.join("a.txt"), "step two\n").unwrap();
    let third = snapshots.track().unwrap();
    let two = snapshots.changed_files(&second, &third).unwrap();
    snapshots.revert(&[(first, one), (second, two)]).unwrap();
    assert_eq!(std::fs::read_to_string(work.join("a.txt")).unwrap(), "one\ntwo\n");
}
