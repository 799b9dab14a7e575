//! Per-agent permission matrix, pending request lifecycle and agent pinning.

use std::sync::Arc;

use indexmap::IndexMap;
use opencode_config::AgentConfig;
use opencode_config::PermissionAction::Allow;
use opencode_config::PermissionAction::Ask;
use opencode_config::PermissionAction::Deny;
use opencode_config::PermissionConfig;
use opencode_tool_registry::AgentDirs;
use opencode_tool_registry::Agents;
use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::PermissionAsk;
use opencode_tool_registry::PermissionFailure;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::Reply;
use opencode_tool_registry::ToolError;
use tokio_util::sync::CancellationToken;

use super::support::Env;

async fn next_ask(
    events: &mut tokio::sync::broadcast::Receiver<PendingEvent>,
) -> opencode_tool_registry::PendingRequest {
    loop {
        if let PendingEvent::Asked(request) = events.recv().await.unwrap() {
            return request;
        }
    }
}

fn ask(permission: &str, pattern: &str) -> PermissionAsk {
    PermissionAsk {
        permission: permission.into(),
        patterns: vec![pattern.into()],
        always: vec![pattern.into()],
        ..Default::default()
    }
}

#[test]
fn permission_matrix_per_builtin_agent() {
    let env = Env::new();
    let plan_file = format!("{}/plans/p.md", env.data.display());
    let cases = [
        // (permission, pattern, build, plan, general, explore, title)
        ("edit", "src/main.rs", Allow, Deny, Allow, Deny, Deny),
        ("edit", ".opencode/plans/x.md", Allow, Allow, Allow, Deny, Deny),
        ("edit", plan_file.as_str(), Allow, Allow, Allow, Deny, Deny),
        ("bash", "ls", Allow, Allow, Allow, Allow, Deny),
        ("read", "src/main.rs", Allow, Allow, Allow, Allow, Deny),
        ("read", ".env", Ask, Ask, Ask, Allow, Deny),
        ("read", ".env.example", Allow, Allow, Allow, Allow, Deny),
        ("question", "*", Allow, Allow, Deny, Deny, Deny),
        ("plan_enter", "*", Allow, Deny, Deny, Deny, Deny),
        ("plan_exit", "*", Deny, Allow, Deny, Deny, Deny),
        ("task", "general", Allow, Deny, Allow, Deny, Deny),
        ("task", "explore", Allow, Allow, Allow, Deny, Deny),
        ("todowrite", "*", Allow, Allow, Deny, Deny, Deny),
        ("doom_loop", "read", Ask, Ask, Ask, Deny, Deny),
        ("external_directory", "/etc/*", Ask, Ask, Ask, Deny, Deny),
        ("webfetch", "https://x", Allow, Allow, Allow, Allow, Deny),
    ];
    for (permission, pattern, build, plan, general, explore, title) in cases {
        for (agent, expected) in
            [("build", build), ("plan", plan), ("general", general), ("explore", explore), ("title", title)]
        {
            let actual = env.agent(agent).permission.evaluate(permission, pattern);
            assert_eq!(actual, expected, "{agent}: {permission} {pattern}");
        }
    }
    let external = format!("{}/tool-output/tool_1", env.data.display());
    for agent in ["build", "plan", "general", "explore"] {
        assert_eq!(env.agent(agent).permission.evaluate("external_directory", &external), Allow, "{agent}");
    }
}

#[test]
fn builtin_agents_and_custom_agents_load() {
    let env = Env::new();
    let names: Vec<_> = env.agents.iter().map(|agent| agent.name.clone()).collect();
    assert_eq!(names, ["build", "plan", "general", "explore", "compaction", "title", "summary"]);
    assert_eq!(env.agents.default_agent(None).unwrap().name, "build");
    assert_eq!(env.agents.default_agent(Some("title")).unwrap().name, "build");
    assert_eq!(env.agents.default_agent(Some("plan")).unwrap().name, "plan");
    let subagents: Vec<_> = env.agents.subagents().map(|agent| agent.name.clone()).collect();
    assert_eq!(subagents, ["general", "explore"]);

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("agent/review")).unwrap();
    std::fs::write(
        dir.path().join("agent/review/strict.md"),
        "---\ndescription: Strict reviewer\nmode: subagent\ntools:\n  write: false\npermission:\n  bash:\n    \"*\": ask\n    \"git diff *\": allow\n---\nReview harshly.\n",
    )
    .unwrap();
    let env = opencode_config::Env::from_pairs([("OPENCODE_CONFIG_DIR", dir.path().to_str().unwrap())]);
    let loaded = opencode_config::load(&opencode_config::LoadOptions::new(env, dir.path()));
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut configs = loaded.config.agent;
    let user: PermissionConfig = serde_json::from_str(r#"{"webfetch":"deny"}"#).unwrap();
    configs.insert("plan".into(), AgentConfig { model: Some("openai/gpt-5".into()), ..AgentConfig::default() });
    configs.insert("general".into(), AgentConfig { disable: Some(true), ..AgentConfig::default() });
    let agents = Agents::new(&AgentDirs::default(), Some(&user), &configs);
    let strict = agents.get("review/strict").unwrap();
    assert_eq!(strict.description.as_deref(), Some("Strict reviewer"));
    assert_eq!(strict.prompt.as_deref(), Some("Review harshly."));
    assert_eq!(strict.permission.evaluate("edit", "a.rs"), Deny);
    assert!(strict.permission.hides_tool("write"));
    assert_eq!(strict.permission.evaluate("bash", "git diff HEAD"), Allow);
    assert_eq!(strict.permission.evaluate("bash", "rm x"), Ask);
    assert_eq!(strict.permission.evaluate("webfetch", "x"), Deny);
    assert_eq!(agents.get("plan").unwrap().model.as_deref(), Some("openai/gpt-5"));
    assert_eq!(agents.get("plan").unwrap().permission.evaluate("webfetch", "x"), Deny);
    assert!(agents.get("general").is_none());
}

#[tokio::test]
async fn pending_request_lifecycle_once_always_reject() {
    let env = Env::new();
    let build = env.agent("build");
    let permissions = Arc::clone(&env.permissions);
    let cancel = CancellationToken::new();
    let mut events = permissions.subscribe();

    // once: allowed this time only
    let waiting = {
        let (permissions, build, cancel) = (Arc::clone(&permissions), Arc::clone(&build), cancel.clone());
        tokio::spawn(async move { permissions.ask("s1", &build, None, ask("read", ".env"), &cancel).await })
    };
    let first = next_ask(&mut events).await;
    assert_eq!(permissions.pending(Some("s1")), vec![first.clone()]);
    permissions.reply(&first.id, Reply::Once).unwrap();
    waiting.await.unwrap().unwrap();
    assert!(permissions.pending(None).is_empty());
    assert_eq!(permissions.evaluate(&build.permission, &ask("read", ".env")), Ask);

    // always: approves the pattern and settles another pending request it covers
    let spawn_ask = |session: &'static str, pattern: &'static str| {
        let (permissions, build, cancel) = (Arc::clone(&permissions), Arc::clone(&build), cancel.clone());
        tokio::spawn(async move { permissions.ask(session, &build, None, ask("read", pattern), &cancel).await })
    };
    let a = spawn_ask("s1", ".env");
    let request_a = next_ask(&mut events).await;
    let b = spawn_ask("s1", ".env");
    let _ = next_ask(&mut events).await;
    let c = spawn_ask("s1", "prod.env");
    let request_c = next_ask(&mut events).await;
    permissions.reply(&request_a.id, Reply::Always).unwrap();
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
    assert_eq!(permissions.pending(None), vec![request_c.clone()]);
    assert_eq!(permissions.evaluate(&build.permission, &ask("read", ".env")), Allow);

    // reject with feedback: the model reads it; other pending requests of the session are rejected
    let d = spawn_ask("s1", "staging.env");
    let _ = next_ask(&mut events).await;
    permissions.reply(&request_c.id, Reply::Reject { message: Some("use the example file".into()) }).unwrap();
    let err = c.await.unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        "The user rejected permission to use this specific tool call with the following feedback: use the example file"
    );
    assert!(matches!(d.await.unwrap().unwrap_err(), ToolError::Permission { kind: PermissionFailure::Rejected, .. }));
    assert!(permissions.pending(None).is_empty());
    assert!(permissions.reply("per_unknown", Reply::Once).is_err());
}

#[tokio::test]
async fn interrupting_a_wait_closes_the_request() {
    let permissions = Arc::new(Permissions::in_memory());
    let env = Env::new();
    let build = env.agent("build");
    let cancel = CancellationToken::new();
    let mut events = permissions.subscribe();
    let waiting = {
        let (permissions, cancel) = (Arc::clone(&permissions), cancel.clone());
        tokio::spawn(async move { permissions.ask("s1", &build, None, ask("read", "x.env"), &cancel).await })
    };
    let _ = next_ask(&mut events).await;
    cancel.cancel();
    assert_eq!(waiting.await.unwrap(), Err(ToolError::Interrupted));
    assert!(permissions.pending(None).is_empty());
}

#[tokio::test]
async fn a_call_keeps_the_agent_of_its_provider_turn() {
    let env = Env::new();
    // The call was issued while `plan` was active; the session then switched to `build`.
    let issued_under_plan = env.ctx("plan");
    let _switched = env.ctx("build");
    let err = issued_under_plan.ask(ask("edit", "src/main.rs")).await.unwrap_err();
    assert!(matches!(err, ToolError::Permission { kind: PermissionFailure::Denied, .. }));

    // A pending request records its agent and is re-evaluated under that agent's rules only.
    let mut events = env.permissions.subscribe();
    let ctx = env.ctx("plan");
    ctx.ask(ask("bash", "make")).await.unwrap(); // plan allows bash: no request is created
    let general = env.ctx("general");
    let pending = tokio::spawn(async move { general.ask(ask("read", "x.env")).await });
    let request = next_ask(&mut events).await;
    assert_eq!(request.agent, "general");
    env.permissions.reply(&request.id, Reply::Once).unwrap();
    pending.await.unwrap().unwrap();
}

#[tokio::test]
async fn doom_loop_asks_on_the_third_identical_call() {
    let env = Env::new();
    env.registry.register(opencode_tool_registry::typed(Noop)).unwrap();
    let mut agent = (*env.agent("build")).clone();
    agent.permission.push(opencode_tool_registry::Rule::new("doom_loop", "*", Deny));
    let ctx = env.ctx_with(Arc::new(agent));
    let call = opencode_tool_registry::ToolCall {
        call_id: "c".into(),
        name: "noop".into(),
        input: serde_json::json!({"a": 1}),
    };
    let other = opencode_tool_registry::ToolCall { input: serde_json::json!({"a": 2}), ..call.clone() };
    use opencode_tool_registry::SettlementStatus::*;
    let mut statuses = Vec::new();
    for call in [&call, &call, &other, &call, &call, &call] {
        statuses.push(env.registry.execute(call, &ctx).await.unwrap().status);
    }
    assert_eq!(statuses, [Completed, Completed, Completed, Completed, Completed, Error]);
}

struct Noop;
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoopInput {
    #[allow(dead_code, reason = "only compared as raw input")]
    a: u32,
}
impl opencode_tool_registry::TypedTool for Noop {
    type Input = NoopInput;
    const NAME: &'static str = "noop";
    fn description(&self) -> String {
        "does nothing".into()
    }
    fn run<'a>(
        &'a self,
        _: NoopInput,
        _: &'a opencode_tool_registry::ToolContext,
    ) -> futures_util::future::BoxFuture<'a, Result<opencode_tool_registry::ToolOutput, ToolError>> {
        Box::pin(async { Ok(opencode_tool_registry::ToolOutput::text("ok")) })
    }
}

#[test]
fn user_config_layers_after_agent_defaults() {
    let user: PermissionConfig = serde_json::from_str(r#"{"edit":"ask","bash":{"*":"ask","git *":"allow"}}"#).unwrap();
    let mut configs = IndexMap::new();
    configs.insert(
        "build".into(),
        AgentConfig {
            permission: Some(serde_json::from_str(r#"{"bash":{"git push *":"deny"}}"#).unwrap()),
            ..AgentConfig::default()
        },
    );
    let agents = Agents::new(&AgentDirs::default(), Some(&user), &configs);
    let build = agents.get("build").unwrap();
    assert_eq!(build.permission.evaluate("edit", "a"), Ask);
    assert_eq!(build.permission.evaluate("bash", "git status"), Allow);
    assert_eq!(build.permission.evaluate("bash", "git push origin"), Deny);
    assert_eq!(build.permission.evaluate("bash", "make"), Ask);
    assert_eq!(agents.get("plan").unwrap().permission.evaluate("bash", "git log"), Allow);
}

/// Saved approvals per scope, as the session store would return them.
struct SavedApprovals(opencode_tool_registry::MemoryPendingStore);

impl opencode_tool_registry::PendingStore for SavedApprovals {
    fn insert(&self, request: &opencode_tool_registry::PendingRequest) -> Result<(), String> {
        self.0.insert(request)
    }

    fn resolve(&self, id: &str, reply: &Reply) -> Result<(), String> {
        self.0.resolve(id, reply)
    }

    fn pending(&self, session_id: Option<&str>) -> Vec<opencode_tool_registry::PendingRequest> {
        self.0.pending(session_id)
    }

    fn approvals(&self, scope: &str) -> Vec<opencode_tool_registry::Rule> {
        match scope {
            "saved" => vec![opencode_tool_registry::Rule::new("read", ".env", Allow)],
            _ => Vec::new(),
        }
    }
}

#[tokio::test]
async fn always_approvals_stay_in_their_scope_and_saved_ones_load() {
    let env = Env::new();
    let build = env.agent("build");
    let root = Permissions::new(Arc::new(SavedApprovals(Default::default())));
    let (a, b) = (root.scoped("a"), root.scoped("b"));
    let mut events = root.subscribe();
    let cancel = CancellationToken::new();

    let waiting = {
        let (a, build, cancel) = (Arc::clone(&a), Arc::clone(&build), cancel.clone());
        tokio::spawn(async move { a.ask("s1", &build, None, ask("read", ".env"), &cancel).await })
    };
    let request = next_ask(&mut events).await;
    assert!(request.id.starts_with("per_"), "{}", request.id);
    // Any view answers: the request knows the scope that asked.
    root.reply(&request.id, Reply::Always).unwrap();
    waiting.await.unwrap().unwrap();
    assert_eq!(a.evaluate(&build.permission, &ask("read", ".env")), Allow);
    assert_eq!(root.scoped("a").evaluate(&build.permission, &ask("read", ".env")), Allow);
    assert_eq!(b.evaluate(&build.permission, &ask("read", ".env")), Ask);
    assert_eq!(root.evaluate(&build.permission, &ask("read", ".env")), Ask);
    // A scope's saved approvals apply from its first view on.
    assert_eq!(root.scoped("saved").evaluate(&build.permission, &ask("read", ".env")), Allow);
    assert_eq!(root.scoped("saved").approved().0.len(), 1);
}

#[tokio::test]
async fn questions_have_opencode_question_ids() {
    let env = Env::new();
    let build = env.agent("build");
    let permissions = Arc::clone(&env.permissions);
    let mut events = permissions.subscribe();
    let cancel = CancellationToken::new();
    let question = opencode_tool_registry::Question {
        question: "Which?".into(),
        header: "Which".into(),
        options: vec![],
        multiple: None,
    };
    let waiting = {
        let (permissions, build, cancel) = (Arc::clone(&permissions), Arc::clone(&build), cancel.clone());
        tokio::spawn(async move { permissions.question("s1", &build, None, vec![question], &cancel).await })
    };
    let request = next_ask(&mut events).await;
    assert!(request.id.starts_with("que_"), "{}", request.id);
    permissions.reply(&request.id, Reply::Answer { answers: vec![vec!["x".into()]] }).unwrap();
    assert_eq!(waiting.await.unwrap().unwrap(), vec![vec!["x".to_owned()]]);
}

/// What a hook was asked: session, agent, call id, patterns.
type Query = (String, String, Option<String>, Vec<String>);

/// Allows `.env` reads, denies `prod.env`, leaves the rest to the user; records what it saw.
#[derive(Default)]
struct Gate {
    seen: std::sync::Mutex<Vec<Query>>,
}

impl opencode_tool_registry::PermissionHook for Gate {
    fn decide<'a>(
        &'a self,
        query: opencode_tool_registry::PermissionQuery<'a>,
    ) -> futures_util::future::BoxFuture<'a, opencode_config::PermissionAction> {
        let call = query.tool.map(|tool| tool.call_id.clone());
        let patterns = query.ask.patterns.clone();
        self.seen.lock().unwrap().push((query.session_id.to_owned(), query.agent.to_owned(), call, patterns.clone()));
        Box::pin(async move {
            match patterns.first().map(String::as_str) {
                Some(".env") => Allow,
                Some("prod.env") => Deny,
                _ => Ask,
            }
        })
    }
}

#[tokio::test]
async fn a_permission_hook_decides_what_the_rules_leave_at_ask() {
    let env = Env::new();
    let gate = Arc::new(Gate::default());
    env.permissions.set_hook(Arc::clone(&gate) as Arc<dyn opencode_tool_registry::PermissionHook>);
    let mut events = env.permissions.subscribe();
    let ctx = env.ctx("build");

    // allow and deny settle without a pending request
    ctx.ask(ask("read", ".env")).await.unwrap();
    let err = ctx.ask(ask("read", "prod.env")).await.unwrap_err();
    assert_eq!(err.to_string(), "A plugin denied permission to use this specific tool call.");
    assert!(matches!(err, ToolError::Permission { kind: PermissionFailure::Denied, .. }));
    assert!(env.permissions.pending(None).is_empty());
    // a rule's allow or deny is final: the hook is not asked
    ctx.ask(ask("read", "src/main.rs")).await.unwrap();
    // ask goes on to the user
    let waiting = {
        let ctx = ctx.clone();
        tokio::spawn(async move { ctx.ask(ask("read", "staging.env")).await })
    };
    let request = next_ask(&mut events).await;
    env.permissions.reply(&request.id, Reply::Once).unwrap();
    waiting.await.unwrap().unwrap();

    let seen = gate.seen.lock().unwrap().clone();
    let expected: Vec<_> = [".env", "prod.env", "staging.env"]
        .iter()
        .map(|p| ("ses_1".to_owned(), "build".to_owned(), Some(ctx.call_id.clone()), vec![(*p).to_owned()]))
        .collect();
    assert_eq!(seen, expected);
}
