//! The `task` tool over the real tool registry: a child session runs the subagent through the
//! ordinary runtime path; resume, the depth bound, unknown subagents, permission asks inside the
//! child, child failures and interrupting the parent.

use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Paths;
use opencode_mock_provider::MockProvider;
use opencode_mock_provider::MockResponse;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::SessionRuntime;
use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::Store;
use opencode_session_store::ToolState;
use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::Permissions;
use opencode_tool_registry::Reply;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;
use tempfile::TempDir;

use super::support::history;
use super::support::text;
use super::support::tool_call;

pub(super) struct Env {
    pub(super) mock: MockProvider,
    pub(super) runtime: SessionRuntime,
    pub(super) store: Arc<Store>,
    pub(super) permissions: Arc<Permissions>,
    pub(super) session: Session,
    _dirs: (TempDir, TempDir),
}

/// A runtime over the real tool registry with subagents `reviewer` (own model `m2`, asks for
/// `bash`) and `quiet`, plus `extra` config keys.
pub(super) async fn env(extra: Value) -> Env {
    let mock = MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let config = config(&mock, extra);
    let paths = Paths::under(data.path());
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, store) = super::support::runtime_with_standard_tools(config, paths, Arc::clone(&permissions));
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    Env { mock, runtime, store, permissions, session, _dirs: (project, data) }
}

/// [`env`]'s configuration.
pub(super) fn config(mock: &MockProvider, extra: Value) -> Config {
    let limits = json!({"context": 200000, "output": 8000});
    let mut config = mock.opencode_config(json!({
        "provider": {"mock": {"models": {"m2": {"tool_call": true, "limit": limits}}}},
        "agent": {"reviewer": {"mode": "subagent", "description": "Reviews code", "prompt": "You review code.",
                               "model": "mock/m2", "permission": {"bash": "ask"}},
                  "quiet": {"mode": "subagent"}}
    }));
    for (key, value) in extra.as_object().unwrap() {
        config[key] = value.clone();
    }
    serde_json::from_value(config).unwrap()
}

fn task(call: &str, subagent: &str, task_id: Option<&str>) -> MockResponse {
    let mut input = json!({"description": "check the answer", "prompt": "Find the answer", "subagent_type": subagent});
    if let Some(id) = task_id {
        input["task_id"] = json!(id);
    }
    tool_call(call, "task", input)
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"].as_array().map_or_else(Vec::new, |tools| {
        tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
    })
}

/// The settled state of the parent's tool call `call`.
pub(super) fn settled(store: &Store, session: &str, call: &str) -> ToolState {
    history(store, session)
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match &p.kind {
            PartKind::Tool { call_id, state, .. } if call_id == call => Some(state.clone()),
            _ => None,
        })
        .unwrap()
}

pub(super) fn children(store: &Store, parent: &str) -> Vec<Session> {
    store.read(|r| r.children(parent)).unwrap()
}

#[tokio::test]
async fn task_runs_the_subagent_in_a_child_session_and_returns_its_final_answer() {
    let e = env(json!({})).await;
    e.mock.push_all([task("call_1", "reviewer", None), text("The answer is 42."), text("It is 42.")]);
    let result = e.runtime.run(PromptRequest::text(&e.session.id, "What is the answer?")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let kids = children(&e.store, &e.session.id);
    assert_eq!(kids.len(), 1);
    let child = &kids[0];
    assert_eq!(child.parent_id.as_deref(), Some(e.session.id.as_str()));
    assert_eq!(child.title, "check the answer (@reviewer subagent)");
    assert_eq!(child.directory, e.session.directory);
    assert_eq!(child.agent.as_deref(), Some("reviewer"));
    let requests = e.mock.requests();
    assert_eq!(requests.len(), 3);
    // The parent's turn offers `task`, listing the callable subagents.
    let parent = requests[0].body_json().unwrap();
    let task_tool = parent["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "task").unwrap();
    let description = task_tool["function"]["description"].as_str().unwrap();
    assert!(description.contains("- reviewer: Reviews code") && description.contains("- general: "), "{description}");
    assert!(!description.contains("- build:"), "primary agents are not callable: {description}");
    assert!(description.contains("- quiet: This subagent should only be called manually by the user."));
    // The child's turn: the subagent's model and prompt, the delegated prompt, no `task` (depth 1).
    let child_request = requests[1].body_json().unwrap();
    assert_eq!(child_request["model"], "m2");
    assert!(child_request["messages"][0]["content"].to_string().contains("You review code."));
    let last = child_request["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["role"].as_str(), last["content"].to_string().contains("Find the answer")), (Some("user"), true));
    let child_tools = tool_names(&child_request);
    assert!(child_tools.contains(&"read".to_owned()) && !child_tools.contains(&"task".to_owned()), "{child_tools:?}");
    // The parent's tool result: the task id and the child's final text, with metadata.
    let ToolState::Completed { output, metadata, title, .. } = settled(&e.store, &e.session.id, "call_1") else {
        panic!("the task call should complete")
    };
    assert_eq!(
        output,
        format!(
            "<task id=\"{}\" state=\"completed\">\n<task_result>\nThe answer is 42.\n</task_result>\n</task>",
            child.id
        )
    );
    assert_eq!(title, "check the answer");
    assert_eq!(
        (metadata["sessionId"].as_str(), metadata["model"].as_str()),
        (Some(child.id.as_str()), Some("mock/m2"))
    );
    let tool_message = requests[2].body_json().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert!(tool_message["content"].as_str().unwrap().contains("The answer is 42."));
    // The child's messages are ordinary durable history of the child session.
    let child_history = history(&e.store, &child.id);
    assert_eq!(child_history.len(), 2);
    let MessageInfo::Assistant(answer) = &child_history[1].info else { panic!("assistant expected") };
    assert_eq!((answer.agent.as_str(), answer.model_id.as_str()), ("reviewer", "m2"));
}

#[tokio::test]
async fn a_subagent_without_a_model_runs_on_the_parent_turns_model() {
    let e = env(json!({})).await;
    e.mock.push_all([task("call_1", "general", None), text("Done."), text("Ok.")]);
    e.runtime.run(PromptRequest::text(&e.session.id, "Go")).await.unwrap();
    let child = &children(&e.store, &e.session.id)[0];
    assert_eq!(e.mock.requests()[1].body_json().unwrap()["model"], "m");
    let ToolState::Completed { metadata, .. } = settled(&e.store, &e.session.id, "call_1") else { panic!() };
    assert_eq!((metadata["sessionId"].as_str(), metadata["model"].as_str()), (Some(child.id.as_str()), Some("mock/m")));
}

#[tokio::test]
async fn a_task_id_resumes_the_same_child_and_a_foreign_one_is_refused() {
    let e = env(json!({})).await;
    e.mock.push_all([task("call_1", "reviewer", None), text("First look."), text("Noted.")]);
    e.runtime.run(PromptRequest::text(&e.session.id, "Look")).await.unwrap();
    let child = children(&e.store, &e.session.id).remove(0);

    e.mock.push_all([task("call_2", "reviewer", Some(&child.id)), text("Second look."), text("Noted again.")]);
    e.runtime.run(PromptRequest::text(&e.session.id, "Look again")).await.unwrap();
    assert_eq!(children(&e.store, &e.session.id).len(), 1, "no new child session");
    let ToolState::Completed { output, .. } = settled(&e.store, &e.session.id, "call_2") else { panic!() };
    assert!(output.starts_with(&format!("<task id=\"{}\"", child.id)) && output.contains("Second look."), "{output}");
    // The resumed child saw its earlier exchange.
    let resumed = e.mock.requests()[4].body_json().unwrap();
    let transcript = super::support::transcript(resumed["messages"].as_array().unwrap());
    assert!(transcript.iter().any(|line| line == "assistant: First look."), "{transcript:?}");

    // A session that is not a child of the caller cannot be resumed.
    let other =
        e.runtime.create_session(std::path::Path::new(&e.session.directory), NewSession::default()).await.unwrap();
    e.mock.push_all([task("call_3", "reviewer", Some(&other.id)), text("Understood.")]);
    let result = e.runtime.run(PromptRequest::text(&e.session.id, "Resume the other")).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);
    let ToolState::Error { error, .. } = settled(&e.store, &e.session.id, "call_3") else { panic!() };
    assert_eq!(error, format!("Task {} does not belong to session {}", other.id, e.session.id));
}

#[tokio::test]
async fn an_unknown_subagent_type_is_a_tool_error_listing_the_callable_ones() {
    let e = env(json!({})).await;
    e.mock.push_all([task("call_1", "build", None), text("I will do it myself.")]);
    let result = e.runtime.run(PromptRequest::text(&e.session.id, "Delegate")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let ToolState::Error { error, .. } = settled(&e.store, &e.session.id, "call_1") else { panic!() };
    assert!(error.starts_with("Unknown agent type: build. Available: "), "{error}");
    assert!(["general", "explore", "reviewer"].iter().all(|name| error.contains(name)), "{error}");
    assert!(children(&e.store, &e.session.id).is_empty());
}

#[tokio::test]
async fn a_deeper_subagent_depth_lets_the_child_delegate_and_zero_withholds_task_everywhere() {
    let e = env(json!({"subagent_depth": 2})).await;
    e.mock.push_all([task("call_1", "general", None), text("Child done."), text("Parent done.")]);
    e.runtime.run(PromptRequest::text(&e.session.id, "Go")).await.unwrap();
    assert!(tool_names(&e.mock.requests()[1].body_json().unwrap()).contains(&"task".to_owned()));

    let e = env(json!({"subagent_depth": 0})).await;
    e.mock.push_all([task("call_1", "general", None), text("Alone.")]);
    e.runtime.run(PromptRequest::text(&e.session.id, "Go")).await.unwrap();
    assert!(!tool_names(&e.mock.requests()[0].body_json().unwrap()).contains(&"task".to_owned()));
    let ToolState::Error { error, .. } = settled(&e.store, &e.session.id, "call_1") else { panic!() };
    assert!(error.starts_with("Model tried to call unavailable tool 'task'"), "{error}");
    assert!(children(&e.store, &e.session.id).is_empty());
}

#[tokio::test]
async fn a_permission_ask_inside_the_child_reaches_the_shared_permission_service() {
    let e = env(json!({})).await;
    let mut asked = e.permissions.subscribe();
    let answering = Arc::clone(&e.permissions);
    let answerer = tokio::spawn(async move {
        loop {
            if let PendingEvent::Asked(request) = asked.recv().await.unwrap() {
                answering.reply(&request.id, Reply::Once).unwrap();
                return (request.session_id, request.agent);
            }
        }
    });
    e.mock.push_all([
        task("call_1", "reviewer", None),
        tool_call("child_1", "bash", json!({"command": "echo checked", "description": "check"})),
        text("Checked."),
        text("Done."),
    ]);
    let result = e.runtime.run(PromptRequest::text(&e.session.id, "Check")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let child = children(&e.store, &e.session.id).remove(0);
    assert_eq!(answerer.await.unwrap(), (child.id.clone(), "reviewer".to_owned()));
    let ToolState::Completed { output, .. } = settled(&e.store, &child.id, "child_1") else { panic!() };
    assert!(output.contains("checked"), "{output}");
}

#[tokio::test]
async fn a_failing_child_is_a_tool_error_with_the_cause_and_the_parent_continues() {
    let e = env(json!({})).await;
    let rejection =
        MockResponse::json(400, &json!({"error": {"message": "bad request for m2", "type": "invalid_request_error"}}));
    e.mock.push_all([task("call_1", "reviewer", None), rejection, text("The subagent failed; continuing.")]);
    let result = e.runtime.run(PromptRequest::text(&e.session.id, "Delegate")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let ToolState::Error { error, .. } = settled(&e.store, &e.session.id, "call_1") else { panic!() };
    assert!(error.starts_with("the subagent failed: ") && error.contains("bad request for m2"), "{error}");
    assert_eq!(e.mock.requests().len(), 3);
}

#[tokio::test]
async fn interrupting_the_parent_aborts_the_running_child() {
    let e = env(json!({})).await;
    let mut asked = e.permissions.subscribe();
    e.mock.push_all([
        task("call_1", "reviewer", None),
        tool_call("child_1", "bash", json!({"command": "echo never", "description": "wait"})),
    ]);
    e.runtime.prompt(PromptRequest::text(&e.session.id, "Delegate")).await.unwrap();
    // The child is running once its permission ask is pending; nobody answers it.
    let child_session = loop {
        if let PendingEvent::Asked(request) = asked.recv().await.unwrap() {
            break request.session_id;
        }
    };
    assert!(e.runtime.active().contains(&child_session));

    assert!(e.runtime.interrupt(&e.session.id));
    assert_eq!(e.runtime.wait_idle(&e.session.id).await, Some(DrainOutcome::Interrupted));
    let child_outcome = e.runtime.wait_idle(&child_session).await;
    assert!(matches!(child_outcome, None | Some(DrainOutcome::Interrupted)), "{child_outcome:?}");
    assert!(!e.runtime.active().contains(&child_session), "the child's drain ended");
    let ToolState::Error { error, .. } = settled(&e.store, &child_session, "child_1") else { panic!() };
    assert_eq!(error, opencode_session_store::INTERRUPTED_TOOL_ERROR);
    assert_eq!(e.mock.requests().len(), 2, "nothing ran after the interrupt");
}

#[tokio::test]
async fn the_task_description_lists_only_the_subagents_the_calling_agent_may_use() {
    let e = env(json!({"permission": {"task": {"*": "allow", "reviewer": "deny"}}})).await;
    e.mock.push_all([text("Fine.")]);
    e.runtime.run(PromptRequest::text(&e.session.id, "Hi")).await.unwrap();

    let body = e.mock.requests()[0].body_json().unwrap();
    let task_tool = body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "task").unwrap();
    let description = task_tool["function"]["description"].as_str().unwrap();
    assert!(description.contains("- general: ") && description.contains("- quiet: "), "{description}");
    assert!(!description.contains("- reviewer:"), "a denied subagent is not offered: {description}");
}
