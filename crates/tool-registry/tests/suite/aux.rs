//! todowrite/todoread, question, task (through a runner seam) and skill.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::PendingKind;
use opencode_tool_registry::Reply;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::ToolContext;
use opencode_tool_registry::ToolError;
use opencode_tool_registry::tools::skill;
use opencode_tool_registry::tools::task::SubagentRequest;
use opencode_tool_registry::tools::task::SubagentResult;
use opencode_tool_registry::tools::task::SubagentRunner;
use opencode_tool_registry::tools::todo::MemoryTodos;
use opencode_tool_registry::typed;
use serde_json::json;

use super::support::Env;

fn call(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall { call_id: "c".into(), name: name.into(), input }
}

#[tokio::test]
async fn todos_round_trip_per_session() {
    let env = Env::new();
    let store = Arc::new(MemoryTodos::default());
    env.registry.register(typed(opencode_tool_registry::tools::todo::TodoWrite(store.clone()))).unwrap();
    env.registry.register(typed(opencode_tool_registry::tools::todo::TodoRead(store.clone()))).unwrap();
    let todos = json!([{"content": "write tests", "status": "in_progress", "priority": "high"},
                       {"content": "ship", "status": "completed", "priority": "low"}]);
    let written = env.registry.execute(&call("todowrite", json!({"todos": todos})), &env.ctx("build")).await.unwrap();
    assert_eq!(written.title.as_deref(), Some("1 todos"));
    let read = env.registry.execute(&call("todoread", json!({})), &env.ctx("build")).await.unwrap();
    assert_eq!(serde_json::from_str::<serde_json::Value>(&read.text).unwrap(), todos);
    let denied = env.registry.execute(&call("todowrite", json!({"todos": []})), &env.ctx("general")).await.unwrap();
    assert_eq!(denied.status, SettlementStatus::Error, "general may not write todos");
    let bad = env
        .registry
        .execute(
            &call("todowrite", json!({"todos": [{"content": "x", "status": "later", "priority": "high"}]})),
            &env.ctx("build"),
        )
        .await
        .unwrap();
    assert!(bad.text.contains("unknown variant `later`"), "{}", bad.text);
}

#[tokio::test]
async fn questions_wait_for_answers() {
    let env = Env::new();
    env.registry.register(typed(opencode_tool_registry::tools::question::Question)).unwrap();
    let mut events = env.permissions.subscribe();
    let permissions = Arc::clone(&env.permissions);
    let answerer = tokio::spawn(async move {
        loop {
            if let PendingEvent::Asked(request) = events.recv().await.unwrap() {
                assert!(matches!(request.kind, PendingKind::Question { .. }));
                permissions.reply(&request.id, Reply::Answer { answers: vec![vec!["Rust".into()]] }).unwrap();
                return request.agent;
            }
        }
    });
    let input = json!({"questions": [{"question": "Which language?", "header": "Language",
        "options": [{"label": "Rust", "description": "fast"}, {"label": "Go", "description": "simple"}]}]});
    let settled = env.registry.execute(&call("question", input.clone()), &env.ctx("build")).await.unwrap();
    assert_eq!(
        settled.text,
        "User has answered your questions: \"Which language?\"=\"Rust\". You can now continue with the user's answers in mind."
    );
    assert_eq!(answerer.await.unwrap(), "build");
    let subagent = env.registry.execute(&call("question", input), &env.ctx("general")).await.unwrap();
    assert_eq!(subagent.status, SettlementStatus::Error, "subagents may not ask questions");
}

struct Runner;
impl SubagentRunner for Runner {
    fn run<'a>(
        &'a self,
        request: SubagentRequest,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<SubagentResult, ToolError>> {
        Box::pin(async move {
            Ok(SubagentResult {
                task_id: "ses_child".into(),
                output: format!("{} did: {}", request.agent, request.prompt),
                model: None,
            })
        })
    }
}

#[tokio::test]
async fn task_delegates_through_the_runner_under_task_permission() {
    let env = Env::new();
    let tool = opencode_tool_registry::tools::task::Task::new(Arc::new(Runner), env.agents.clone());
    env.registry.register(typed(tool)).unwrap();
    let description = &env.registry.definitions(&env.agent("build"))[0].description;
    assert!(description.contains("- general: ") && description.contains("- explore: "));
    let input = json!({"description": "find usages", "prompt": "find x", "subagent_type": "general"});
    let done = env.registry.execute(&call("task", input.clone()), &env.ctx("build")).await.unwrap();
    assert_eq!(
        done.text,
        "<task id=\"ses_child\" state=\"completed\">\n<task_result>\ngeneral did: find x\n</task_result>\n</task>"
    );
    let denied = env.registry.execute(&call("task", input), &env.ctx("plan")).await.unwrap();
    assert_eq!(denied.status, SettlementStatus::Error, "plan may not delegate to general");
    let unknown = env
        .registry
        .execute(&call("task", json!({"description": "d", "prompt": "p", "subagent_type": "title"})), &env.ctx("build"))
        .await
        .unwrap();
    assert_eq!(unknown.text, "Unknown agent type: title. Available: general, explore");
}

#[tokio::test]
async fn skills_are_discovered_and_loaded() {
    let env = Env::new();
    let config = env.data.join("config");
    let write = |path: std::path::PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        config.join("skills/release/SKILL.md"),
        "---\nname: release\ndescription: Cut a release\n---\nBump the version.\n",
    );
    write(
        env.project.join(".claude/skills/review/SKILL.md"),
        "---\nname: review\ndescription: Review code\n---\nBe strict.\n",
    );
    write(env.project.join(".agents/skills/broken/SKILL.md"), "no front matter");
    let skills = skill::discover(&[config], &env.project, Some(&env.project));
    let names: Vec<_> = skills.iter().map(|skill| skill.name.as_str()).collect();
    assert_eq!(names, ["release", "review"]);
    env.registry.register(typed(skill::SkillTool::new(skills))).unwrap();
    let loaded = env.registry.execute(&call("skill", json!({"name": "release"})), &env.ctx("build")).await.unwrap();
    assert!(
        loaded.text.starts_with("<skill_content name=\"release\">\n# Skill: release\n\nBump the version.\n"),
        "{}",
        loaded.text
    );
    let missing = env.registry.execute(&call("skill", json!({"name": "nope"})), &env.ctx("build")).await.unwrap();
    assert_eq!(missing.text, "Skill \"nope\" not found. Available skills: release, review");
}
