//! `bash` asks OpenCode's permissions: one pattern per simple command not yet allowed, `always`
//! by arity prefix, and `external_directory` for paths file commands name outside the Location.

use std::sync::Arc;

use opencode_config::PermissionAction::*;
use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::PendingKind;
use opencode_tool_registry::PermissionAsk;
use opencode_tool_registry::Reply;
use opencode_tool_registry::Rule;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::tools::NoEnv;
use serde_json::json;

use super::support::Env;

fn env() -> Env {
    let env = Env::new();
    opencode_tool_registry::tools::register_filesystem_and_shell(&env.registry, Arc::new(NoEnv)).unwrap();
    env
}

/// Runs `command` as `build` with extra rules; every request asked is answered `reply` and
/// returned with the settlement.
async fn asks(
    env: &Env,
    rules: &[(&str, &str, opencode_config::PermissionAction)],
    command: &str,
    reply: Reply,
) -> (Settlement, Vec<PermissionAsk>) {
    let mut agent = (*env.agent("build")).clone();
    for (permission, pattern, action) in rules {
        agent.permission.push(Rule::new(*permission, *pattern, *action));
    }
    let ctx = env.ctx_with(Arc::new(agent));
    let mut events = env.permissions.subscribe();
    let permissions = Arc::clone(&env.permissions);
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    let answerer = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            if let PendingEvent::Asked(request) = event {
                if let PendingKind::Permission(ask) = &request.kind {
                    sender.send(ask.clone()).unwrap();
                }
                permissions.reply(&request.id, reply.clone()).unwrap();
            }
        }
    });
    let call = ToolCall { call_id: ctx.call_id.clone(), name: "bash".into(), input: json!({"command": command}) };
    let settled = env.registry.execute(&call, &ctx).await.unwrap();
    answerer.abort();
    let mut asked = Vec::new();
    while let Ok(ask) = receiver.try_recv() {
        asked.push(ask);
    }
    (settled, asked)
}

#[tokio::test]
async fn each_command_not_allowed_is_asked_with_its_arity_prefix() {
    let env = env();
    let rules = [("bash", "*", Ask), ("bash", "echo *", Allow), ("bash", "false", Allow)];
    // `false &&` keeps git and npm from running; their patterns are asked all the same.
    let command = "echo start && false && git commit -m 'a b' -q 2>/dev/null; false && npm run build | wc -l || true";
    let (settled, asked) = asks(&env, &rules, command, Reply::Once).await;
    assert_eq!(settled.status, SettlementStatus::Completed, "{}", settled.text);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].permission, "bash");
    assert_eq!(asked[0].patterns, ["git commit -m 'a b' -q", "npm run build", "wc -l", "true"]);
    assert_eq!(asked[0].always, ["git commit *", "npm run build *", "wc *", "true *"]);
}

#[tokio::test]
async fn substitutions_are_asked_and_a_denied_inner_command_refuses_all() {
    let env = env();
    let rules = [("bash", "*", Allow), ("bash", "rm *", Deny)];
    let (settled, asked) = asks(&env, &rules, "echo $(rm -rf build)", Reply::Once).await;
    assert_eq!(settled.status, SettlementStatus::Error, "{}", settled.text);
    assert!(asked.is_empty());
    assert!(settled.text.contains("prevents you from using"), "{}", settled.text);
    // Fully allowed: nothing is asked.
    let (settled, asked) = asks(&env, &[("bash", "*", Allow)], "echo $(printf ok)", Reply::Once).await;
    assert_eq!(settled.status, SettlementStatus::Completed);
    assert!(asked.is_empty(), "{asked:?}");
    assert!(settled.text.contains("ok"));
}

#[tokio::test]
async fn file_commands_leaving_the_location_ask_external_directory() {
    let env = env();
    let outside = env.outside.display().to_string();
    let command = format!("mkdir -p sub && touch sub/a && cp sub/a {outside}/copied && cd {outside}");
    let (settled, asked) = asks(&env, &[("bash", "*", Allow)], &command, Reply::Once).await;
    assert_eq!(settled.status, SettlementStatus::Completed, "{}", settled.text);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].permission, "external_directory");
    assert_eq!(asked[0].patterns, [format!("{outside}/*")]);
    assert!(env.outside.join("copied").exists());

    // `..` escapes are caught too, and a rejection stops the command before it runs.
    let (settled, _) =
        asks(&env, &[("bash", "*", Allow)], "rm -rf ../outside/copied", Reply::Reject { message: None }).await;
    assert_eq!(settled.status, SettlementStatus::Declined);
    assert!(env.outside.join("copied").exists(), "nothing ran");
}
