//! The tool loop: one request per provider turn, tools executed with results fed back, continuing
//! while tools are called, and a text-only last turn when the step allowance is used up.

use std::path::PathBuf;

use opencode_llm::ToolDefinition;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::MAX_STEPS_PROMPT;
use opencode_session_runtime::PromptRequest;
use opencode_session_store::MessageInfo;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Limits;
use super::support::harness;
use super::support::harness_with;
use super::support::history;
use super::support::requests;
use super::support::text;
use super::support::tool_call;
use super::support::transcript;

/// `read` and `write` over files of the project directory.
pub fn file_tools() -> FnTools {
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}});
    FnTools::new()
        .tool(ToolDefinition::new("read", "Read a file", schema.clone()), |input, ctx| {
            Box::pin(async move {
                let path: PathBuf = ctx.directory.join(input["path"].as_str().unwrap_or_default());
                std::fs::read_to_string(&path).map_err(|err| format!("cannot read {}: {err}", path.display()))
            })
        })
        .tool(ToolDefinition::new("write", "Write a file", schema), |input, ctx| {
            Box::pin(async move {
                let path = ctx.directory.join(input["path"].as_str().unwrap_or_default());
                std::fs::write(&path, input["content"].as_str().unwrap_or_default()).map_err(|err| err.to_string())?;
                Ok(format!("wrote {}", path.display()))
            })
        })
}

#[tokio::test]
async fn a_multi_step_tool_loop_reads_edits_and_answers_with_one_request_per_turn() {
    let h = harness(file_tools()).await;
    std::fs::write(h.project.path().join("notes.txt"), "draft").unwrap();
    h.mock.push_all([
        tool_call("call_1", "read", json!({"path": "notes.txt"})),
        tool_call("call_2", "write", json!({"path": "notes.txt", "content": "final"})),
        text("Updated notes.txt."),
    ]);
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "Finish my notes")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    assert_eq!(std::fs::read_to_string(h.project.path().join("notes.txt")).unwrap(), "final");
    let requests = requests(&h.mock);
    assert_eq!(requests.len(), 3, "exactly one provider request per turn");
    let written = format!("wrote {}", h.project.path().join("notes.txt").display());
    assert_eq!(
        transcript(&requests[2])[1..],
        [
            "user: Finish my notes".to_owned(),
            r#"assistant: read({"path":"notes.txt"})"#.to_owned(),
            "tool: draft".to_owned(),
            r#"assistant: write({"path":"notes.txt","content":"final"})"#.to_owned(),
            format!("tool: {written}"),
        ]
    );
    let tools: Vec<String> = requests_tools(&h.mock, 0);
    assert_eq!(tools, ["read", "write"]);
    let roles: Vec<&str> = history(&h.store, &h.session.id).iter().map(|m| m.info.role()).collect();
    assert_eq!(roles, ["user", "assistant", "assistant", "assistant"]);
    assert_eq!(result.session.tokens.output, 10, "usage of the text turn is accumulated");
}

fn requests_tools(mock: &opencode_mock_provider::MockProvider, index: usize) -> Vec<String> {
    let body = mock.requests()[index].body_json().unwrap();
    body["tools"].as_array().map_or_else(Vec::new, |tools| {
        tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
    })
}

#[tokio::test]
async fn the_last_allowed_step_is_text_only() {
    let h = harness_with(file_tools(), Limits::default(), json!({"build": {"steps": 2}})).await;
    std::fs::write(h.project.path().join("a.txt"), "A").unwrap();
    h.mock.push_all([tool_call("call_1", "read", json!({"path": "a.txt"})), text("Out of steps; a.txt says A.")]);
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "Read a.txt")).await.unwrap();

    assert_eq!(result.outcome, DrainOutcome::Completed);
    let bodies: Vec<serde_json::Value> = h.mock.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[1].get("tools").is_none(), "no tools on the last step: {}", bodies[1]);
    let last = transcript(bodies[1]["messages"].as_array().unwrap()).pop().unwrap();
    assert_eq!(last, format!("assistant: {MAX_STEPS_PROMPT}"));
    let messages = history(&h.store, &h.session.id);
    let MessageInfo::Assistant(last) = &messages.last().unwrap().info else { panic!("assistant expected") };
    assert_eq!(last.finish.as_deref(), Some("stop"));
}

/// A retryable failure before any output is retried (with the LLM layer's back-off); a provider that
/// asks to be retried only after longer than the policy allows fails the turn with its own message
/// at once instead of a silent long wait.
#[tokio::test]
async fn retryable_failures_are_retried_but_a_too_long_retry_after_fails_at_once() {
    let h = super::support::harness(opencode_session_runtime::FnTools::new()).await;
    let overloaded = || {
        opencode_mock_provider::MockResponse::json(
            503,
            &json!({"error": {"message": "overloaded", "type": "server_error"}}),
        )
    };
    h.mock.push_all([overloaded(), super::support::text("Back.")]);
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "hi")).await.unwrap();
    assert_eq!(result.outcome, DrainOutcome::Completed);
    assert_eq!(h.mock.requests().len(), 2);

    let later = opencode_mock_provider::MockResponse::json(
        429,
        &json!({"error": {"message": "come back in two minutes", "type": "rate_limit_error"}}),
    )
    .header("retry-after", "120");
    h.mock.push(later);
    let result = h.runtime.run(PromptRequest::text(&h.session.id, "again")).await.unwrap();
    let DrainOutcome::Failed { message, .. } = &result.outcome else { panic!("{:?}", result.outcome) };
    assert!(message.contains("come back in two minutes"), "{message}");
    assert_eq!(h.mock.requests().len(), 3, "no retry after a retry-after beyond the policy's bound");
}

/// An `@file` mention (a local text file attached to the prompt) reaches the model as the file's
/// text, read when the prompt was admitted, not as a `file://` URL it cannot open.
#[tokio::test]
async fn a_mentioned_local_file_is_read_into_the_prompt() {
    let h = harness(FnTools::new()).await;
    let path = h.project.path().join("notes.txt");
    std::fs::write(&path, "the answer is 42\n").unwrap();
    h.mock.push(text("Noted."));
    let file = opencode_session_runtime::PromptFile {
        url: format!("file://{}", path.display()),
        mime: "text/plain".into(),
        name: Some("notes.txt".into()),
    };
    let request = PromptRequest { files: vec![file], ..PromptRequest::text(&h.session.id, "summarise @notes.txt") };
    h.runtime.run(request).await.unwrap();

    let sent = h.mock.requests()[0].body_json().unwrap().to_string();
    assert!(sent.contains("the answer is 42"), "{sent}");
    assert!(sent.contains("Called the Read tool") && !sent.contains("file://"), "{sent}");
}
