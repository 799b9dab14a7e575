//! Subtask prompts (what a `subtask: true` command sends): the user message carries the `subtask`
//! part, the runner runs it through the `task` machinery as a child session before the model
//! answers, the parent gets the `task` tool part, and a command's subtask adds the synthetic
//! summary prompt before the loop continues.

use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::ModelChoice;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeError;
use opencode_session_runtime::SUBTASK_SUMMARY_PROMPT;
use opencode_session_runtime::SubtaskPrompt;
use opencode_session_store::MessageInfo;
use opencode_session_store::PartKind;
use opencode_session_store::ToolState;
use opencode_tool_registry::PendingEvent;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::subagents::children;
use super::subagents::env;
use super::support::history;
use super::support::text;
use super::support::tool_call;
use super::support::transcript;

fn subtask(agent: &str, command: Option<&str>) -> SubtaskPrompt {
    SubtaskPrompt {
        prompt: "Review the parser".into(),
        description: "review the parser".into(),
        agent: agent.into(),
        model: None,
        command: command.map(str::to_owned),
    }
}

/// Waits until a permission is asked.
async fn first_ask(asked: &mut tokio::sync::broadcast::Receiver<PendingEvent>) {
    while !matches!(asked.recv().await.unwrap(), PendingEvent::Asked(_)) {}
}

fn request(session: &str, subtask: SubtaskPrompt) -> PromptRequest {
    PromptRequest { subtask: Some(subtask), ..PromptRequest::text(session, "") }
}

#[tokio::test]
async fn a_command_subtask_runs_in_a_child_session_and_the_model_then_summarises_it() {
    let e = env(json!({})).await;
    e.mock.push_all([text("The parser is fine."), text("Summary: the parser is fine.")]);
    let result = e.runtime.run(request(&e.session.id, subtask("reviewer", Some("review")))).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let child = children(&e.store, &e.session.id).remove(0);
    assert_eq!(
        (child.title.as_str(), child.agent.as_deref()),
        ("review the parser (@reviewer subagent)", Some("reviewer"))
    );
    // The child ran first, with the subagent's own model and prompt, on the subtask's prompt.
    let requests = e.mock.requests();
    assert_eq!(requests.len(), 2);
    let child_request = requests[0].body_json().unwrap();
    assert_eq!(child_request["model"], "m2");
    let child_messages = transcript(child_request["messages"].as_array().unwrap());
    assert_eq!(child_messages.last().unwrap(), "user: Review the parser");

    // The parent's transcript: the subtask part, the task call settled with the child's answer,
    // the synthetic summary prompt, then the session agent's answer.
    let messages = history(&e.store, &e.session.id);
    assert_eq!(messages.len(), 4);
    let MessageInfo::User(user) = &messages[0].info else { panic!("user message expected") };
    assert_eq!(user.agent, "build", "the user message keeps the session's agent");
    assert_eq!(
        messages[0].parts.iter().map(|p| p.kind.clone()).collect::<Vec<_>>(),
        vec![PartKind::Subtask {
            prompt: "Review the parser".into(),
            description: "review the parser".into(),
            agent: "reviewer".into(),
            model: None,
            command: Some("review".into()),
        }]
    );
    let MessageInfo::Assistant(task_message) = &messages[1].info else { panic!("assistant expected") };
    assert_eq!((task_message.agent.as_str(), task_message.parent_id.as_str()), ("reviewer", user.id.as_str()));
    assert!(task_message.time.completed.is_some() && task_message.error.is_none());
    let [part] = messages[1].parts.as_slice() else { panic!("one task part expected") };
    let PartKind::Tool { tool, state: ToolState::Completed { input, output, title, metadata, .. }, .. } = &part.kind
    else {
        panic!("a completed task part expected: {part:?}")
    };
    assert_eq!(tool, "task");
    assert_eq!(
        input,
        &json!({"prompt": "Review the parser", "description": "review the parser", "subagent_type": "reviewer", "command": "review"})
    );
    assert_eq!(
        output,
        &format!(
            "<task id=\"{}\" state=\"completed\">\n<task_result>\nThe parser is fine.\n</task_result>\n</task>",
            child.id
        )
    );
    assert_eq!(title, "review the parser");
    assert_eq!(
        (metadata["sessionId"].as_str(), metadata["model"].as_str()),
        (Some(child.id.as_str()), Some("mock/m2"))
    );
    let summary = &messages[2];
    assert!(
        matches!(&summary.parts[0].kind, PartKind::Text { text, synthetic: Some(true), .. } if text == SUBTASK_SUMMARY_PROMPT)
    );
    let MessageInfo::Assistant(answer) = &messages[3].info else { panic!("assistant expected") };
    assert_eq!((answer.agent.as_str(), answer.model_id.as_str()), ("build", "m"));

    // What the model saw: the user's subtask, the call and its result, the summary prompt.
    let parent_request = requests[1].body_json().unwrap();
    let seen = transcript(parent_request["messages"].as_array().unwrap());
    let tail: Vec<&str> = seen.iter().rev().take(4).rev().map(String::as_str).collect();
    assert_eq!(tail[0], "user: The following tool was executed by the user");
    assert!(tail[1].starts_with("assistant: task(") && tail[1].contains("Review the parser"), "{tail:?}");
    assert!(tail[2].starts_with("tool: <task id=") && tail[2].contains("The parser is fine."), "{tail:?}");
    assert_eq!(tail[3], format!("user: {SUBTASK_SUMMARY_PROMPT}"));
}

#[tokio::test]
async fn a_subtask_bypasses_the_callers_task_permission_and_may_name_a_primary_agent_and_a_model() {
    let e = env(json!({"permission": {"task": "deny"}})).await;
    e.mock.push_all([text("Built."), text("Done.")]);
    let mut delegated = subtask("build", Some("build-it"));
    delegated.model = Some(ModelChoice::parse("mock/m2").unwrap());
    let result = e.runtime.run(request(&e.session.id, delegated)).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let child = children(&e.store, &e.session.id).remove(0);
    assert_eq!(child.agent.as_deref(), Some("build"));
    // The subtask's model runs the child (its agent names none); the parent stays on its own.
    let requests = e.mock.requests();
    assert_eq!(
        (requests[0].body_json().unwrap()["model"].clone(), requests[1].body_json().unwrap()["model"].clone()),
        (json!("m2"), json!("m"))
    );
    let messages = history(&e.store, &e.session.id);
    assert!(matches!(&messages[0].parts[0].kind, PartKind::Subtask { model: Some(model), .. }
        if model == &json!({"providerID": "mock", "modelID": "m2"})));
    let task = super::subagents::settled(
        &e.store,
        &e.session.id,
        match &messages[1].parts[0].kind {
            PartKind::Tool { call_id, .. } => call_id,
            other => panic!("task part expected: {other:?}"),
        },
    );
    assert!(matches!(task, ToolState::Completed { ref output, .. } if output.contains("Built.")), "{task:?}");
}

#[tokio::test]
async fn a_subtask_without_a_command_adds_no_summary_prompt_and_the_loop_continues() {
    let e = env(json!({})).await;
    e.mock.push_all([text("Checked."), text("Noted.")]);
    let result = e.runtime.run(request(&e.session.id, subtask("general", None))).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let messages = history(&e.store, &e.session.id);
    let roles: Vec<&str> =
        messages.iter().map(|m| if matches!(m.info, MessageInfo::User(_)) { "user" } else { "assistant" }).collect();
    assert_eq!(roles, ["user", "assistant", "assistant"]);
    assert_eq!(e.mock.requests().len(), 2);
}

#[tokio::test]
async fn an_unknown_subtask_agent_is_refused_at_admission() {
    let e = env(json!({})).await;
    let err = e.runtime.prompt(request(&e.session.id, subtask("nobody", Some("x")))).await.unwrap_err();
    assert!(matches!(err, RuntimeError::UnknownAgent { ref name, .. } if name == "nobody"), "{err}");
    assert!(history(&e.store, &e.session.id).is_empty());
}

#[tokio::test]
async fn interrupting_a_running_subtask_settles_it_as_interrupted_without_a_summary_prompt() {
    let e = env(json!({})).await;
    let mut asked = e.permissions.subscribe();
    e.mock.push_all([tool_call("child_1", "bash", json!({"command": "echo never", "description": "wait"}))]);
    e.runtime.prompt(request(&e.session.id, subtask("reviewer", Some("review")))).await.unwrap();
    // The child waits on its permission ask; nobody answers it.
    first_ask(&mut asked).await;
    assert!(e.runtime.interrupt(&e.session.id));
    assert_eq!(e.runtime.wait_idle(&e.session.id).await, Some(DrainOutcome::Interrupted));

    let messages = history(&e.store, &e.session.id);
    assert_eq!(messages.len(), 2, "no summary prompt after an interrupted subtask");
    let MessageInfo::Assistant(task_message) = &messages[1].info else { panic!("assistant expected") };
    assert!(task_message.error.is_some());
    let PartKind::Tool { state: ToolState::Error { error, .. }, .. } = &messages[1].parts[0].kind else { panic!() };
    assert_eq!(error, opencode_session_store::INTERRUPTED_TOOL_ERROR);
    assert_eq!(e.mock.requests().len(), 1, "the model was not asked after the interrupt");
}

#[tokio::test]
async fn a_long_subtask_result_is_bounded_like_any_tool_output_and_spilled_to_a_managed_file() {
    let e = env(json!({"tool_output": {"max_lines": 20, "max_bytes": 4096}})).await;
    let answer: String = (1..=200).map(|n| format!("finding {n}\n")).collect();
    e.mock.push_all([text(&answer), text("Summarised.")]);
    let result = e.runtime.run(request(&e.session.id, subtask("reviewer", Some("review")))).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);

    let child = children(&e.store, &e.session.id).remove(0);
    let messages = history(&e.store, &e.session.id);
    let PartKind::Tool { state: ToolState::Completed { output, metadata, .. }, .. } = &messages[1].parts[0].kind else {
        panic!("a completed task part expected: {:?}", messages[1].parts)
    };
    // The registry's bounding: head and tail kept around the marker naming the managed file.
    assert!(output.starts_with(&format!("<task id=\"{}\" state=\"completed\">", child.id)), "{output}");
    assert!(output.ends_with("</task_result>\n</task>"), "{output}");
    assert!(output.contains("output truncated") && !output.contains("finding 100\n"), "{output}");
    assert!(output.len() <= 4096 && output.lines().count() <= 20, "{output}");
    let path = metadata["outputPath"].as_str().expect("the managed file is recorded");
    assert!(output.contains(path), "the preview names the file: {output}");
    let full = std::fs::read_to_string(path).unwrap();
    assert!(full.contains("finding 100\n") && full.ends_with("</task>"), "the file keeps everything");
    assert_eq!(metadata["sessionId"], json!(child.id), "the task's metadata survives bounding");

    // The model summarised the bounded text, not the whole answer.
    let parent_request = e.mock.requests()[1].body_json().unwrap().to_string();
    assert!(parent_request.contains("output truncated") && !parent_request.contains("finding 100\\n"));
}

#[tokio::test]
async fn a_subtask_cut_by_a_crash_is_failed_as_interrupted_on_restart_and_never_rerun() {
    let mock = opencode_mock_provider::MockProvider::start().await.unwrap();
    let (project, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let paths = opencode_config::Paths::under(data.path());
    let start = |paths: opencode_config::Paths| {
        let permissions = std::sync::Arc::new(opencode_tool_registry::Permissions::in_memory());
        super::support::runtime_with_standard_tools(super::subagents::config(&mock, json!({})), paths, permissions)
    };
    // The process that crashes runs on its own tokio runtime, shut down mid-subtask: none of its
    // code runs after that point, as after a kill. The child's provider turn never answers.
    let doomed = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (runtime, _) = {
        let _entered = doomed.enter();
        start(paths.clone())
    };
    mock.push(opencode_mock_provider::MockResponse::new(200).header("content-type", "text/event-stream").then_stall());
    let directory = project.path().to_owned();
    let (session, admitted) = doomed
        .spawn(async move {
            let session = runtime.create_session(&directory, Default::default()).await.unwrap();
            let admitted = runtime.prompt(request(&session.id, subtask("reviewer", Some("review")))).await.unwrap();
            (session, admitted)
        })
        .await
        .unwrap();
    while mock.requests().is_empty() {
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    doomed.shutdown_background();

    // A new process over the same files; the user asks again.
    let (runtime, store) = start(paths);
    mock.push(text("The review was interrupted."));
    let asked = runtime.run(PromptRequest::text(&session.id, "Did the review finish?")).await.unwrap();
    assert_eq!(asked.outcome, DrainOutcome::Completed);

    let messages = history(&store, &session.id);
    let roles: Vec<&str> =
        messages.iter().map(|m| if matches!(m.info, MessageInfo::User(_)) { "user" } else { "assistant" }).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"], "no summary prompt for a crashed subtask");
    assert_eq!(messages[0].info.id(), admitted.input.id);
    let MessageInfo::Assistant(task_message) = &messages[1].info else { panic!("assistant expected") };
    assert_eq!(task_message.error.as_ref().map(|e| e.name.as_str()), Some("MessageAbortedError"));
    let PartKind::Tool { tool, state: ToolState::Error { error, .. }, .. } = &messages[1].parts[0].kind else {
        panic!("a failed task part expected: {:?}", messages[1].parts)
    };
    assert_eq!((tool.as_str(), error.as_str()), ("task", opencode_session_store::INTERRUPTED_TOOL_ERROR));

    // The child ran once (the crashed turn), never again; the model saw the interrupted task.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let seen = transcript(requests[1].body_json().unwrap()["messages"].as_array().unwrap());
    let tail: Vec<&str> = seen.iter().rev().take(3).rev().map(String::as_str).collect();
    assert!(tail[0].starts_with("assistant: task("), "{tail:?}");
    assert_eq!(tail[1..], ["tool: Tool execution interrupted", "user: Did the review finish?"]);
}

#[tokio::test]
async fn interrupting_the_first_of_two_subtasks_promoted_together_settles_both_and_never_starts_the_second() {
    let e = env(json!({})).await;
    let mut asked = e.permissions.subscribe();
    e.mock.push_all([tool_call("child_1", "bash", json!({"command": "echo never", "description": "wait"}))]);
    let first = PromptRequest { admit_only: true, ..request(&e.session.id, subtask("reviewer", Some("review"))) };
    e.runtime.prompt(first).await.unwrap();
    e.runtime.prompt(request(&e.session.id, subtask("quiet", Some("check")))).await.unwrap();
    first_ask(&mut asked).await;
    assert!(e.runtime.interrupt(&e.session.id));
    assert_eq!(e.runtime.wait_idle(&e.session.id).await, Some(DrainOutcome::Interrupted));

    let messages = history(&e.store, &e.session.id);
    let roles: Vec<&str> =
        messages.iter().map(|m| if matches!(m.info, MessageInfo::User(_)) { "user" } else { "assistant" }).collect();
    assert_eq!(roles, ["user", "user", "assistant", "assistant"], "both prompts, then both task messages");
    for message in &messages[2..] {
        let MessageInfo::Assistant(task_message) = &message.info else { panic!("assistant expected") };
        assert!(task_message.error.is_some() && task_message.time.completed.is_some());
        let PartKind::Tool { state: ToolState::Error { error, .. }, .. } = &message.parts[0].kind else {
            panic!("an interrupted task part expected: {:?}", message.parts)
        };
        assert_eq!(error, opencode_session_store::INTERRUPTED_TOOL_ERROR);
    }
    assert_eq!(children(&e.store, &e.session.id).len(), 1, "the second subtask never started a child");
    assert_eq!(e.mock.requests().len(), 1);
}
