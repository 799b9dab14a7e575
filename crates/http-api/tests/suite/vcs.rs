//! `/vcs...` over a real git repository in a temporary directory, and `/session/{id}/diff`.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use opencode_session_store::FileDiff;
use opencode_session_store::MessageInfo;
use opencode_session_store::UserSummary;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::TestServer;
use super::directory_query;
use super::start;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A repository on `main` with `keep.txt` (two lines) and `gone.txt` committed.
fn repo(t: &TestServer, name: &str) -> PathBuf {
    let dir = t.root.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), "one\ntwo\n").unwrap();
    std::fs::write(dir.join("gone.txt"), "bye\n").unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    dir.canonicalize().unwrap()
}

/// Modifies `keep.txt` (1 added, 1 removed), deletes `gone.txt`, adds untracked `new.txt` (3 lines).
fn change(dir: &Path) {
    std::fs::write(dir.join("keep.txt"), "one\n2\n").unwrap();
    std::fs::remove_file(dir.join("gone.txt")).unwrap();
    std::fs::write(dir.join("new.txt"), "a\nb\nc\n").unwrap();
}

fn field<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array().unwrap().iter().map(|item| item[key].as_str().unwrap()).collect()
}

#[tokio::test]
async fn vcs_names_the_branch_and_the_default_branch() {
    let t = start().await;
    let dir = repo(&t, "repo");
    let q = directory_query(&dir);
    assert_eq!(t.get(&format!("/vcs?{q}")).await, (200, json!({ "branch": "main", "default_branch": "main" })));

    git(&dir, &["checkout", "-q", "-b", "feature/x"]);
    assert_eq!(t.get(&format!("/vcs?{q}")).await, (200, json!({ "branch": "feature/x", "default_branch": "main" })));

    // A detached HEAD has no branch.
    let head = git(&dir, &["rev-parse", "HEAD"]);
    git(&dir, &["checkout", "-q", head.trim()]);
    assert_eq!(t.get(&format!("/vcs?{q}")).await, (200, json!({ "default_branch": "main" })));

    // Outside git: nothing, and empty lists.
    assert_eq!(t.get("/vcs").await, (200, json!({})));
    assert_eq!(t.get("/vcs/status").await, (200, json!([])));
    assert_eq!(t.get("/vcs/diff?mode=git").await, (200, json!([])));
    let raw = t.http.get(t.at("/vcs/diff/raw")).send().await.unwrap();
    assert_eq!(raw.status(), 200);
    assert_eq!(raw.text().await.unwrap(), "");
}

#[tokio::test]
async fn status_lists_changed_files_with_line_counts() {
    let t = start().await;
    let dir = repo(&t, "repo");
    let q = directory_query(&dir);
    assert_eq!(t.get(&format!("/vcs/status?{q}")).await, (200, json!([])));
    change(&dir);
    let (status, files) = t.get(&format!("/vcs/status?{q}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        files,
        json!([
            { "file": "gone.txt", "additions": 0, "deletions": 1, "status": "deleted" },
            { "file": "keep.txt", "additions": 1, "deletions": 1, "status": "modified" },
            { "file": "new.txt", "additions": 3, "deletions": 0, "status": "added" },
        ])
    );

    // From a subdirectory only its files are listed, with paths from the repository root.
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/inner.txt"), "x\n").unwrap();
    let (_, sub) = t.get(&format!("/vcs/status?{}", directory_query(&dir.join("sub")))).await;
    assert_eq!(field(&sub, "file"), ["sub/inner.txt"]);
}

#[tokio::test]
async fn diff_in_git_mode_carries_each_files_patch() {
    let t = start().await;
    let dir = repo(&t, "repo");
    let q = directory_query(&dir);
    change(&dir);
    let (status, files) = t.get(&format!("/vcs/diff?mode=git&{q}")).await;
    assert_eq!(status, 200);
    assert_eq!(field(&files, "file"), ["gone.txt", "keep.txt", "new.txt"]);
    assert_eq!(field(&files, "status"), ["deleted", "modified", "added"]);
    let keep = &files[1];
    assert_eq!((keep["additions"].clone(), keep["deletions"].clone()), (json!(1), json!(1)));
    let patch = keep["patch"].as_str().unwrap();
    assert!(patch.starts_with("diff --git a/keep.txt b/keep.txt"), "{patch}");
    // The whole file is context by default.
    assert!(patch.contains(" one\n-two\n+2\n"), "{patch}");
    let new = files[2]["patch"].as_str().unwrap();
    assert!(new.contains("+++ b/new.txt") && new.contains("+a\n+b\n+c\n"), "{new}");
    assert_eq!(files[2]["additions"], json!(3));
    assert!(files[0]["patch"].as_str().unwrap().contains("-bye"));

    // `context` narrows the patch.
    std::fs::write(dir.join("keep.txt"), "one\ntwo\nthree\nfour\nfive\nsix\n").unwrap();
    git(&dir, &["commit", "-q", "-am", "more"]);
    std::fs::write(dir.join("keep.txt"), "one\ntwo\nthree\nfour\nfive\nSIX\n").unwrap();
    let (_, narrow) = t.get(&format!("/vcs/diff?mode=git&context=0&{q}")).await;
    let keep = narrow.as_array().unwrap().iter().find(|f| f["file"] == "keep.txt").unwrap();
    let patch = keep["patch"].as_str().unwrap();
    assert!(patch.contains("-six\n+SIX\n") && !patch.contains("\n five\n"), "{patch}");

    assert_eq!(t.get(&format!("/vcs/diff?{q}")).await.0, 400);
    assert_eq!(t.get(&format!("/vcs/diff?mode=svn&{q}")).await.0, 400);
    assert_eq!(t.get(&format!("/vcs/diff?mode=git&context=-1&{q}")).await.0, 400);
}

#[tokio::test]
async fn diff_in_branch_mode_compares_with_the_default_branch() {
    let t = start().await;
    let dir = repo(&t, "repo");
    let q = directory_query(&dir);
    // On the default branch itself there is nothing to compare.
    std::fs::write(dir.join("keep.txt"), "changed\n").unwrap();
    assert_eq!(t.get(&format!("/vcs/diff?mode=branch&{q}")).await, (200, json!([])));
    git(&dir, &["checkout", "-q", "."]);

    git(&dir, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(dir.join("feature.txt"), "f\n").unwrap();
    git(&dir, &["add", "feature.txt"]);
    git(&dir, &["commit", "-q", "-m", "feature"]);
    std::fs::write(dir.join("scratch.txt"), "s\n").unwrap();
    let (status, files) = t.get(&format!("/vcs/diff?mode=branch&{q}")).await;
    assert_eq!(status, 200);
    // Committed on the branch and untracked both count; `git` mode sees only the untracked file.
    assert_eq!(field(&files, "file"), ["feature.txt", "scratch.txt"]);
    assert_eq!(field(&files, "status"), ["added", "added"]);
    let (_, working) = t.get(&format!("/vcs/diff?mode=git&{q}")).await;
    assert_eq!(field(&working, "file"), ["scratch.txt"]);
}

#[tokio::test]
async fn raw_diff_is_one_patch_of_uncommitted_changes() {
    let t = start().await;
    let dir = repo(&t, "repo");
    change(&dir);
    let response = t.http.get(t.at(&format!("/vcs/diff/raw?{}", directory_query(&dir)))).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/x-diff; charset=utf-8");
    let text = response.text().await.unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("diff --git")).count(), 3, "{text}");
    assert!(text.contains("-two\n+2\n") && text.contains("+a\n+b\n+c\n"), "{text}");
    // The patch applies in reverse: it is exactly the working tree's change.
    let patch = dir.join("..").join("changes.patch");
    std::fs::write(&patch, &text).unwrap();
    git(&dir, &["apply", "--check", "-R", patch.to_str().unwrap()]);
}

#[tokio::test]
async fn a_repository_without_commits_counts_everything_as_added() {
    let t = start().await;
    let dir = t.root.path().join("fresh");
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("a.txt"), "1\n2\n").unwrap();
    let q = directory_query(&dir.canonicalize().unwrap());
    assert_eq!(t.get(&format!("/vcs?{q}")).await, (200, json!({ "branch": "main" })));
    assert_eq!(
        t.get(&format!("/vcs/status?{q}")).await,
        (200, json!([{ "file": "a.txt", "additions": 2, "deletions": 0, "status": "added" }]))
    );
    let (_, files) = t.get(&format!("/vcs/diff?mode=git&{q}")).await;
    assert_eq!(field(&files, "file"), ["a.txt"]);
    assert!(files[0]["patch"].as_str().unwrap().contains("+1\n+2\n"));
}

#[tokio::test]
async fn session_diff_serves_the_user_messages_stored_diffs() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let sid = session["id"].as_str().unwrap().to_owned();
    let (_, reply) =
        t.post(&format!("/session/{sid}/message"), json!({ "parts": [{ "type": "text", "text": "hi" }] })).await;
    let assistant = reply["info"]["id"].as_str().unwrap().to_owned();
    let (_, messages) = t.get(&format!("/session/{sid}/message")).await;
    let user = messages[0]["info"]["id"].as_str().unwrap().to_owned();

    // Nothing is stored yet; without a message OpenCode answers an empty list too.
    assert_eq!(t.get(&format!("/session/{sid}/diff?messageID={user}")).await, (200, json!([])));
    assert_eq!(t.get(&format!("/session/{sid}/diff")).await, (200, json!([])));

    let lookup = user.clone();
    t.store
        .write(move |tx| {
            let Some(MessageInfo::User(mut info)) = tx.reader().message_info(&lookup)? else { panic!("not a user") };
            let diff = |file: &str| FileDiff {
                file: Some(file.into()),
                patch: Some("@@".into()),
                additions: 2,
                deletions: 1,
                status: Some("modified".into()),
            };
            info.summary = Some(UserSummary {
                title: None,
                body: None,
                diffs: vec![diff("src/a.rs"), diff(r#""caf\303\251.rs""#)],
            });
            tx.upsert_message(&MessageInfo::User(info)).map(drop)
        })
        .unwrap();
    let (status, diffs) = t.get(&format!("/session/{sid}/diff?messageID={user}")).await;
    assert_eq!(status, 200);
    assert_eq!(field(&diffs, "file"), ["src/a.rs", "café.rs"]);
    assert_eq!(
        diffs[0],
        json!({ "file": "src/a.rs", "patch": "@@", "additions": 2, "deletions": 1, "status": "modified" })
    );

    // An assistant message has no diffs; unknown sessions and malformed ids are refused.
    assert_eq!(t.get(&format!("/session/{sid}/diff?messageID={assistant}")).await, (200, json!([])));
    assert_eq!(t.get("/session/ses_nope/diff").await.0, 404);
    assert_eq!(t.get(&format!("/session/{sid}/diff?messageID=nope")).await.0, 400);
}
