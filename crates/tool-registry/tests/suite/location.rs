//! Location authority: escapes by `..`, absolute paths, symlinks and swaps are denied or asked.

use std::os::unix::fs::symlink;
use std::sync::Arc;

use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::PermissionFailure;
use opencode_tool_registry::Reply;
use opencode_tool_registry::Scope;
use opencode_tool_registry::ToolError;

use super::support::Env;

fn is_denied(err: &ToolError) -> bool {
    matches!(err, ToolError::Permission { kind: PermissionFailure::Denied, .. })
}

#[test]
fn paths_are_classified() {
    let env = Env::new();
    let location = env.registry.location();
    env.write("src/lib.rs", "x");
    std::fs::write(env.outside.join("secret"), "s").unwrap();
    symlink(env.outside.join("secret"), env.project.join("link-out")).unwrap();
    symlink(env.project.join("src/lib.rs"), env.project.join("link-in")).unwrap();
    symlink(env.project.join("chain-2"), env.project.join("chain-1")).unwrap();
    symlink(env.outside.clone(), env.project.join("chain-2")).unwrap();
    let scope = |input: &str| location.resolve(input).unwrap().scope;
    assert_eq!(scope("src/lib.rs"), Scope::Inside);
    assert_eq!(scope("src/../src/./lib.rs"), Scope::Inside);
    assert_eq!(scope("new/file.txt"), Scope::Inside);
    assert_eq!(scope("../outside/secret"), Scope::External);
    assert_eq!(scope("src/../../outside/secret"), Scope::External);
    assert_eq!(scope("/etc/passwd"), Scope::External);
    assert_eq!(scope(&env.project.join("src/lib.rs").display().to_string()), Scope::Inside);
    assert_eq!(scope("link-out"), Scope::External);
    assert_eq!(scope("link-in"), Scope::Inside);
    assert_eq!(scope("chain-1/secret"), Scope::External);
    assert_eq!(scope("chain-1/not-yet"), Scope::External);
    let managed = env.data.join("tool-output/tool_abc");
    assert_eq!(scope(&managed.display().to_string()), Scope::ToolOutput);
    assert!(location.resolve("").is_err());
}

#[tokio::test]
async fn external_paths_ask_and_a_rejection_denies() {
    let env = Env::new();
    std::fs::write(env.outside.join("secret"), "s").unwrap();
    let ctx = env.ctx("build");
    let mut events = env.permissions.subscribe();
    let permissions = Arc::clone(&env.permissions);
    let answer = tokio::spawn(async move {
        let PendingEvent::Asked(request) = events.recv().await.unwrap() else { panic!("expected an ask") };
        permissions.reply(&request.id, Reply::Reject { message: None }).unwrap();
        request
    });
    let path = env.outside.join("secret").display().to_string();
    let err = env.registry.location().authorize(&ctx, &path, false).await.unwrap_err();
    assert!(matches!(err, ToolError::Permission { kind: PermissionFailure::Rejected, .. }));
    let request = answer.await.unwrap();
    assert_eq!(request.agent, "build");
    let opencode_tool_registry::PendingKind::Permission(ask) = request.kind else { panic!() };
    assert_eq!(ask.permission, "external_directory");
    assert_eq!(ask.patterns, vec![format!("{}/*", env.outside.display())]);
}

#[tokio::test]
async fn explore_may_read_managed_output_without_asking() {
    let env = Env::new();
    let managed = env.registry.output().bound(&"x\n".repeat(5000)).managed_path.unwrap();
    let ctx = env.ctx("explore");
    let resolved = env.registry.location().authorize(&ctx, &managed.display().to_string(), false).await.unwrap();
    assert_eq!(resolved.scope, Scope::ToolOutput);
    let file = env.registry.location().open_read(&resolved).unwrap();
    assert_eq!(file.metadata().unwrap().len(), 10_000);
}

#[tokio::test]
async fn a_denying_rule_blocks_external_paths() {
    let env = Env::new();
    let mut agent = (*env.agent("build")).clone();
    agent.permission.push(opencode_tool_registry::Rule::new(
        "external_directory",
        "*",
        opencode_config::PermissionAction::Deny,
    ));
    let ctx = env.ctx_with(Arc::new(agent));
    for input in ["../outside/secret", "/etc/passwd"] {
        let err = env.registry.location().authorize(&ctx, input, false).await.unwrap_err();
        assert!(is_denied(&err), "{input}: {err}");
    }
}

#[test]
fn a_file_swapped_for_a_symlink_after_the_check_is_not_read() {
    let env = Env::new();
    env.write("a.txt", "inside");
    std::fs::write(env.outside.join("secret"), "secret").unwrap();
    let location = env.registry.location();
    let resolved = location.resolve("a.txt").unwrap();
    assert_eq!(resolved.scope, Scope::Inside);
    std::fs::remove_file(env.project.join("a.txt")).unwrap();
    symlink(env.outside.join("secret"), env.project.join("a.txt")).unwrap();
    let err = location.open_read(&resolved).unwrap_err();
    assert!(is_denied(&err), "{err}");
}

#[test]
fn a_directory_swapped_for_a_symlink_after_the_check_is_not_read_or_written() {
    let env = Env::new();
    env.write("dir/a.txt", "inside");
    std::fs::write(env.outside.join("a.txt"), "secret").unwrap();
    let location = env.registry.location();
    let read = location.resolve("dir/a.txt").unwrap();
    let write = location.resolve("dir/b.txt").unwrap();
    std::fs::remove_dir_all(env.project.join("dir")).unwrap();
    symlink(&env.outside, env.project.join("dir")).unwrap();
    assert!(is_denied(&location.open_read(&read).unwrap_err()));
    assert!(is_denied(&location.write_atomic(&write, b"pwned").unwrap_err()));
    assert!(!env.outside.join("b.txt").exists());
}

#[test]
fn a_write_replaces_a_swapped_in_symlink_instead_of_following_it() {
    let env = Env::new();
    env.write("a.txt", "inside");
    std::fs::write(env.outside.join("secret"), "secret").unwrap();
    let location = env.registry.location();
    let resolved = location.resolve("a.txt").unwrap();
    std::fs::remove_file(env.project.join("a.txt")).unwrap();
    symlink(env.outside.join("secret"), env.project.join("a.txt")).unwrap();
    location.write_atomic(&resolved, b"new").unwrap();
    assert_eq!(std::fs::read_to_string(env.outside.join("secret")).unwrap(), "secret");
    assert_eq!(std::fs::read_to_string(env.project.join("a.txt")).unwrap(), "new");
    assert!(!std::fs::symlink_metadata(env.project.join("a.txt")).unwrap().file_type().is_symlink());
}
