//! The runner over the real tool registry: reads and edits files in a temp project through the
//! built-in tools; the final tree is asserted.

use std::sync::Arc;

use opencode_config::Config;
use opencode_config::Paths;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::NewSession;
use opencode_tool_registry::Permissions;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::requests;
use super::support::text;
use super::support::tool_call;

#[tokio::test]
async fn the_registry_tools_read_and_edit_files_in_the_project() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/lib.rs"), "pub fn answer() -> u32 {\n    41\n}\n").unwrap();
    let config: Config = serde_json::from_value(mock.opencode_config(json!({}))).unwrap();
    let paths = Paths::under(data.path());
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, _store) = super::support::runtime_with_standard_tools(config, paths, Arc::clone(&permissions));
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([
        tool_call("call_1", "read", json!({"filePath": "src/lib.rs"})),
        tool_call("call_2", "edit", json!({"filePath": "src/lib.rs", "oldString": "41", "newString": "42"})),
        text("The answer is now 42."),
    ]);
    let result = runtime.run(PromptRequest::text(&session.id, "Fix the answer")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    assert_eq!(
        std::fs::read_to_string(project.path().join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    42\n}\n"
    );
    let requests = requests(&mock);
    assert_eq!(requests.len(), 3);
    let tools: Vec<String> = mock.requests()[0].body_json().unwrap()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(["read", "edit", "write", "bash"].iter().all(|name| tools.iter().any(|t| t == name)), "{tools:?}");
    let read = requests[1].iter().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(read.contains("41"), "{read}");
}

#[tokio::test]
async fn an_approved_plan_exit_switches_the_session_to_build_with_the_synthetic_message_and_a_new_epoch() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let config: Config = serde_json::from_value(mock.opencode_config(json!({}))).unwrap();
    let paths = Paths::under(data.path());
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, store) = super::support::runtime_with_standard_tools(config, paths, Arc::clone(&permissions));
    let new = NewSession { agent: Some("plan".into()), ..NewSession::default() };
    let session = runtime.create_session(project.path(), new).await.unwrap();
    // The user approves the switch when asked.
    let mut asked = permissions.subscribe();
    let answering = Arc::clone(&permissions);
    tokio::spawn(async move {
        while let Ok(event) = asked.recv().await {
            if let opencode_tool_registry::PendingEvent::Asked(request) = event {
                let reply = opencode_tool_registry::Reply::Answer { answers: vec![vec!["Yes".into()]] };
                answering.reply(&request.id, reply).unwrap();
            }
        }
    });
    mock.push_all([tool_call("call_1", "plan_exit", json!({})), text("Implementing.")]);
    let result = runtime.run(PromptRequest::text(&session.id, "Plan the change")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    assert_eq!(result.session.agent.as_deref(), Some("build"));
    let first_tools: Vec<String> = mock.requests()[0].body_json().unwrap()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(first_tools.contains(&"plan_exit".to_owned()), "{first_tools:?}");
    assert!(first_tools.contains(&"webfetch".to_owned()), "{first_tools:?}");
    let second = requests(&mock).pop().unwrap();
    let last = super::support::transcript(&second).pop().unwrap();
    assert!(
        last.starts_with("user: The plan at ")
            && last.ends_with("has been approved, you can now edit files. Execute the plan"),
        "{last}"
    );
    let epoch = store.read(|r| r.active_epoch(&session.id)).unwrap().unwrap();
    assert_eq!((epoch.epoch, epoch.agent.as_str()), (2, "build"), "the agent switch starts a new context epoch");
}

#[tokio::test]
async fn a_config_agent_is_one_agent_for_the_provider_request_and_the_tool_permissions() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("open.txt"), "one\n").unwrap();
    std::fs::write(project.path().join("locked.txt"), "one\n").unwrap();
    let models = json!({"m": {"tool_call": true, "limit": {"context": 200000, "output": 8000}},
                        "m2": {"tool_call": true, "temperature": true, "limit": {"context": 200000, "output": 8000}}});
    let config: Config = serde_json::from_value(json!({
        "model": "mock/m",
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
                              "options": {"baseURL": format!("{}/v1", mock.base_url())}, "models": models}},
        "agent": {"reviewer": {
            "model": "mock/m2", "prompt": "You review carefully.", "temperature": 0.25,
            "permission": {"bash": "deny", "edit": {"*": "allow", "locked.txt": "deny"}}
        }}
    }))
    .unwrap();
    let paths = Paths::under(data.path());
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, _store) = super::support::runtime_with_standard_tools(config, paths, Arc::clone(&permissions));
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([
        super::support::tool_calls(&[
            ("call_1", "edit", json!({"filePath": "open.txt", "oldString": "one", "newString": "two"})),
            ("call_2", "edit", json!({"filePath": "locked.txt", "oldString": "one", "newString": "two"})),
            ("call_3", "bash", json!({"command": "echo hi > bash.txt", "description": "write"})),
        ]),
        text("Reviewed."),
    ]);
    let mut request = PromptRequest::text(&session.id, "Review");
    request.agent = Some("reviewer".into());
    let result = runtime.run(request).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    // The runtime's view: the agent's model, prompt and temperature shape the provider request.
    let first = mock.requests()[0].body_json().unwrap();
    assert_eq!((first["model"].as_str(), first["temperature"].as_f64()), (Some("m2"), Some(0.25)));
    assert_eq!(first["messages"][0]["role"], "system");
    assert!(first["messages"][0]["content"].to_string().contains("You review carefully."), "{}", first["messages"][0]);
    // The tool host's view of the same agent: `bash` denied by `*` is hidden, `edit` is offered and
    // its per-pattern rule decides each call.
    let tools: Vec<&str> =
        first["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"edit") && !tools.contains(&"bash"), "{tools:?}");
    assert_eq!(std::fs::read_to_string(project.path().join("open.txt")).unwrap(), "two\n");
    assert_eq!(std::fs::read_to_string(project.path().join("locked.txt")).unwrap(), "one\n");
    assert!(!project.path().join("bash.txt").exists());
    let second = requests(&mock).pop().unwrap();
    let results: Vec<String> =
        second.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap().to_owned()).collect();
    assert_eq!(results.len(), 3, "{results:?}");
    assert_eq!(results[0], "Edit applied successfully.");
    assert!(results[1].contains("edit locked.txt deny"), "{results:?}");
    assert!(results[2].contains("unavailable tool 'bash'"), "{results:?}");
}

/// A long command's output shows on its running part while it runs, then the call settles with the
/// whole output; the progress writes never land after the settlement.
#[tokio::test]
async fn a_running_commands_output_shows_on_its_part_before_it_ends() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let config: Config = serde_json::from_value(mock.opencode_config(json!({}))).unwrap();
    let permissions = Arc::new(Permissions::in_memory());
    let (runtime, _store) =
        super::support::runtime_with_standard_tools(config, Paths::under(data.path()), Arc::clone(&permissions));
    let session = runtime.create_session(project.path(), NewSession::default()).await.unwrap();
    mock.push_all([
        tool_call("call_1", "bash", json!({"command": "echo first; sleep 1; echo second", "description": "Wait"})),
        text("Done."),
    ]);
    let mut events = runtime.subscribe();
    let result = runtime.run(PromptRequest::text(&session.id, "run it")).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);

    let mut states = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let opencode_session_runtime::RuntimeEvent::Durable(event) = event.as_ref()
            && event.kind == opencode_session_store::EventKind::PartUpdated
            && event.data["part"]["tool"] == "bash"
        {
            let state = &event.data["part"]["state"];
            states.push((state["status"].as_str().unwrap().to_owned(), state["metadata"]["output"].clone()));
        }
    }
    let live = states.iter().position(|(status, output)| status == "running" && output == "first\n");
    let settled = states.iter().position(|(status, _)| status == "completed").unwrap();
    assert!(live.is_some_and(|live| live < settled), "{states:?}");
    assert_eq!(states.last().unwrap(), &("completed".to_owned(), json!("first\nsecond\n")));
}
