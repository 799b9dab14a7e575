//! Git repositories for tests: `git` run in a directory with a fixed author, failing loudly.

use std::path::Path;
use std::process::Command;

/// Runs `git -C dir args` as the test author "t"; its standard output without the trailing line break. Panics with git's
/// own message when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output();
    let output = match output {
        Ok(output) => output,
        Err(err) => panic!("cannot run git: {err}"),
    };
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).trim_end().to_owned()
}

/// Makes `dir` a repository with everything in it committed once (a project of its own).
pub fn init_committed(dir: &Path) {
    git(dir, &["init", "--quiet"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "--quiet", "--allow-empty", "-m", "start"]);
}
