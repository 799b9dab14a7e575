//! Plan mode: plan_enter / plan_exit ask the user and hand the runtime an agent switch.

use std::sync::Arc;

use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::PendingKind;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::Reply;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::tools::plan::AgentSwitch;
use opencode_tool_registry::tools::plan::PlanFiles;
use opencode_tool_registry::tools::register_plan_mode;
use serde_json::json;
use tokio::task::JoinHandle;

use super::support::Env;

fn env_with_plan_mode() -> Env {
    let env = Env::new();
    register_plan_mode(&env.registry, PlanFiles::new(env.data.join("plans"))).unwrap();
    env
}

/// Answers the next question with `answer`; yields (question text, header, labels, asking agent).
fn answer_next(permissions: &Arc<Permissions>, answer: &str) -> JoinHandle<(String, String, Vec<String>, String)> {
    let mut events = permissions.subscribe();
    let permissions = Arc::clone(permissions);
    let answer = answer.to_owned();
    tokio::spawn(async move {
        loop {
            let PendingEvent::Asked(request) = events.recv().await.unwrap() else { continue };
            let PendingKind::Question { questions } = request.kind else { panic!("a question, not a permission") };
            permissions.reply(&request.id, Reply::Answer { answers: vec![vec![answer]] }).unwrap();
            let asked = &questions[0];
            let labels = asked.options.iter().map(|option| option.label.clone()).collect();
            return (asked.question.clone(), asked.header.clone(), labels, request.agent);
        }
    })
}

async fn call(env: &Env, tool: &str, agent: &str) -> Settlement {
    let call = ToolCall { call_id: "c".into(), name: tool.into(), input: json!({}) };
    env.registry.execute(&call, &env.ctx(agent)).await.unwrap()
}

fn names(env: &Env, agent: &str) -> Vec<String> {
    env.registry.definitions(&env.agent(agent)).into_iter().map(|d| d.name).collect()
}

#[tokio::test]
async fn each_agent_sees_only_its_way_out() {
    let env = env_with_plan_mode();
    assert_eq!(names(&env, "build"), vec!["plan_enter"]);
    assert_eq!(names(&env, "plan"), vec!["plan_exit"]);
    assert!(names(&env, "general").is_empty() && names(&env, "explore").is_empty());
    let refused = call(&env, "plan_exit", "build").await;
    assert_eq!(refused.status, SettlementStatus::Error);
    assert!(refused.text.starts_with("Model tried to call unavailable tool 'plan_exit'"), "{}", refused.text);
}

#[tokio::test]
async fn approved_plan_switches_to_build() {
    let env = env_with_plan_mode();
    let plan = env.data.join("plans").join("ses_1.md");
    let answerer = answer_next(&env.permissions, "Yes");
    let done = call(&env, "plan_exit", "plan").await;
    let (question, header, labels, agent) = answerer.await.unwrap();
    let shown = plan.display();
    assert_eq!(
        question,
        format!("Plan at {shown} is complete. Would you like to switch to the build agent and start implementing?")
    );
    assert_eq!((header.as_str(), labels, agent.as_str()), ("Build Agent", vec!["Yes".into(), "No".into()], "plan"));
    assert_eq!(done.status, SettlementStatus::Completed);
    assert_eq!(done.metadata["switchAgent"], "build");
    let switch = AgentSwitch::from_metadata(&done.metadata).unwrap();
    assert_eq!(
        switch,
        AgentSwitch {
            switch_agent: "build".into(),
            synthetic_text: format!("The plan at {shown} has been approved, you can now edit files. Execute the plan"),
            plan_path: plan,
        }
    );
}

#[tokio::test]
async fn declined_plan_keeps_planning() {
    let env = env_with_plan_mode();
    let answerer = answer_next(&env.permissions, "No");
    let done = call(&env, "plan_exit", "plan").await;
    answerer.await.unwrap();
    assert_eq!(done.status, SettlementStatus::Completed);
    assert!(done.text.starts_with("The user wants to keep planning: stay in plan mode"), "{}", done.text);
    assert_eq!(AgentSwitch::from_metadata(&done.metadata), None);
    let answerer = answer_next(&env.permissions, "Add a rollback step first");
    let feedback = call(&env, "plan_exit", "plan").await;
    answerer.await.unwrap();
    assert!(feedback.text.ends_with("The user said: Add a rollback step first"), "{}", feedback.text);
}

#[tokio::test]
async fn entering_plan_mode_in_a_git_worktree_plans_under_dot_opencode() {
    let env = env_with_plan_mode();
    std::fs::create_dir(env.project.join(".git")).unwrap();
    let answerer = answer_next(&env.permissions, "Yes");
    let done = call(&env, "plan_enter", "build").await;
    let (question, header, _, agent) = answerer.await.unwrap();
    assert_eq!(
        question,
        "Would you like to switch to the plan agent and create a plan saved to .opencode/plans/ses_1.md?"
    );
    assert_eq!((header.as_str(), agent.as_str()), ("Plan Mode", "build"));
    let switch = AgentSwitch::from_metadata(&done.metadata).unwrap();
    assert_eq!(switch.switch_agent, "plan");
    assert_eq!(switch.plan_path, env.project.join(".opencode/plans/ses_1.md"));
    let plan = env.agent("plan");
    let ask = opencode_tool_registry::PermissionAsk {
        permission: "edit".into(),
        patterns: vec![".opencode/plans/ses_1.md".into()],
        ..Default::default()
    };
    assert_eq!(
        env.permissions.evaluate(&plan.permission, &ask),
        opencode_config::PermissionAction::Allow,
        "the plan agent may write the file it is pointed at"
    );
    let answerer = answer_next(&env.permissions, "No");
    let declined = call(&env, "plan_enter", "build").await;
    answerer.await.unwrap();
    assert!(declined.text.starts_with("The user wants to stay with the build agent"), "{}", declined.text);
}
