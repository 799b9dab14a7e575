//! `initialize` and `session/prompt`: what streams, how turns end, cancelling.

use agent_client_protocol::v1::schema::{
    CancelNotification, PlanEntryStatus, SessionUpdate, StopReason, ToolCallStatus, ToolKind,
};
use serde_json::json;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_reports_capabilities_and_the_version() {
    let fixture = Fixture::new(json!({})).await;
    let (response, signed_in, unknown) = fixture
        .client(choose_once(), async |conn: Conn| {
            let response = conn.init().await;
            let method = response.auth_methods[0].id().0.to_string();
            let authenticate = |id: String| agent_client_protocol::v1::schema::AuthenticateRequest::new(id);
            let signed_in = conn.cx.send_request(authenticate(method)).block_task().await;
            let unknown = conn.cx.send_request(authenticate("oauth".to_owned())).block_task().await;
            (response, signed_in, unknown)
        })
        .await;
    // A provider has credentials (the configured mock): signing in is already done.
    assert!(signed_in.is_ok(), "{signed_in:?}");
    assert_eq!(unknown.unwrap_err().code, agent_client_protocol::ErrorCode::INVALID_PARAMS);
    let capabilities = &response.agent_capabilities;
    assert!(capabilities.load_session);
    assert!(capabilities.prompt_capabilities.image && capabilities.prompt_capabilities.embedded_context);
    assert!(capabilities.mcp_capabilities.http);
    assert!(capabilities.session_capabilities.list.is_some());
    let info = response.agent_info.unwrap();
    assert_eq!((info.name.as_str(), info.version.as_str()), ("opencode", opencode_acp::AGENT_VERSION));
    assert_eq!(response.auth_methods.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_streams_the_answer_and_ends_the_turn_in_a_durable_session() {
    let fixture = Fixture::new(json!({})).await;
    fixture.push([text("Hello from the mock.")]);
    let work = fixture.work.clone();
    let (session, response, answer) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            let response = conn.prompt(&session, "Say hello").await.unwrap();
            // The context in use: the request's 100 input and 10 output tokens, of the model's 200,000.
            let usage = conn.updates(&session).iter().find_map(|update| match update {
                SessionUpdate::UsageUpdate(usage) => Some((usage.used, usage.size)),
                _ => None,
            });
            assert_eq!(usage, Some((110, 200_000)));
            (session.clone(), response, conn.agent_text(&session))
        })
        .await;
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(answer, "Hello from the mock.");
    // The ACP session is the project's own session, in this directory.
    let stored = fixture.store().read(|r| r.session(&session)).unwrap().unwrap();
    assert_eq!(stored.directory, fixture.work.display().to_string());
    let user = &super::support::requests_of(&fixture)[0];
    assert!(user.contains("Say hello"), "{user}");
    // Titled by the small model, like any session.
    for _ in 0..200 {
        if fixture.store().read(|r| r.session(&session)).unwrap().unwrap().title == "A session title" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(!fixture.titles.requests().is_empty());
    assert_eq!(fixture.store().read(|r| r.session(&session)).unwrap().unwrap().title, "A session title");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_shows_its_command_status_and_output() {
    let fixture = Fixture::new(json!({})).await;
    fixture.push([
        tool_call("call_1", "bash", json!({"command": "echo acp-works", "description": "Print a word"})),
        text("Done."),
    ]);
    let work = fixture.work.clone();
    let updates = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            assert_eq!(conn.prompt(&session, "run it").await.unwrap().stop_reason, StopReason::EndTurn);
            conn.updates(&session)
        })
        .await;
    let call = updates
        .iter()
        .find_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call.clone()),
            _ => None,
        })
        .expect("a tool_call update");
    assert_eq!(call.tool_call_id.0.as_ref(), "call_1");
    assert_eq!(call.kind, ToolKind::Execute);
    // The title is the command itself, as soon as the model's input names it.
    let titles: Vec<String> = updates
        .iter()
        .filter_map(|update| match update {
            SessionUpdate::ToolCall(call) => Some(call.title.clone()),
            SessionUpdate::ToolCallUpdate(update) => update.fields.title.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(titles.last().map(String::as_str), Some("echo acp-works"));
    assert!(titles.iter().all(|title| title == "bash" || title == "echo acp-works"), "{titles:?}");
    let done = updates
        .iter()
        .find_map(|update| match update {
            SessionUpdate::ToolCallUpdate(update) if update.fields.status == Some(ToolCallStatus::Completed) => {
                Some(update.clone())
            }
            _ => None,
        })
        .expect("the call completed");
    assert_eq!(done.tool_call_id.0.as_ref(), "call_1");
    assert_eq!(done.fields.raw_input.as_ref().unwrap()["command"], "echo acp-works");
    let output = done.fields.raw_output.unwrap();
    assert!(output["output"].as_str().unwrap().contains("acp-works"), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn todowrite_becomes_a_plan() {
    let fixture = Fixture::new(json!({})).await;
    let todos = json!({"todos": [
        {"content": "Write the parser", "status": "completed", "priority": "high"},
        {"content": "Test it", "status": "in_progress", "priority": "medium"}
    ]});
    fixture.push([tool_call("call_1", "todowrite", todos), text("Planned.")]);
    let work = fixture.work.clone();
    let updates = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "plan it").await.unwrap();
            conn.updates(&session)
        })
        .await;
    let plan = updates
        .iter()
        .find_map(|update| match update {
            SessionUpdate::Plan(plan) => Some(plan.clone()),
            _ => None,
        })
        .expect("a plan update");
    let entries: Vec<(&str, PlanEntryStatus)> =
        plan.entries.iter().map(|entry| (entry.content.as_str(), entry.status.clone())).collect();
    assert_eq!(entries, [("Write the parser", PlanEntryStatus::Completed), ("Test it", PlanEntryStatus::InProgress)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cut_at_the_output_limit_ends_with_max_tokens() {
    let fixture = Fixture::new(json!({})).await;
    fixture.push([truncated("A long answer that was cut")]);
    let work = fixture.work.clone();
    let response = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.prompt(&session, "write a lot").await.unwrap()
        })
        .await;
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_interrupts_the_turn_and_the_session_goes_on() {
    let fixture = Fixture::new(json!({})).await;
    fixture.push([stalled("Thinking about it"), text("Second answer.")]);
    let work = fixture.work.clone();
    let (first, second, busy) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            let blocks = vec![agent_client_protocol::v1::schema::ContentBlock::from("take your time".to_owned())];
            let running = conn
                .cx
                .send_request(agent_client_protocol::v1::schema::PromptRequest::new(session.clone(), blocks))
                .block_task();
            conn.wait_for(&session, |update| matches!(update, SessionUpdate::AgentMessageChunk(_))).await;
            // A second prompt while one runs is refused, not queued silently.
            let busy = conn.prompt(&session, "again").await.unwrap_err();
            conn.cx.send_notification(CancelNotification::new(session.clone())).unwrap();
            let first = running.await.unwrap();
            let second = conn.prompt(&session, "once more").await.unwrap();
            (first, second, busy)
        })
        .await;
    assert_eq!(first.stop_reason, StopReason::Cancelled);
    assert_eq!(second.stop_reason, StopReason::EndTurn);
    assert_eq!(busy.code, agent_client_protocol::ErrorCode::INVALID_REQUEST);
    assert!(busy.message.contains("already running"), "{}", busy.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_compact_compacts_and_commands_are_advertised() {
    let fixture =
        Fixture::new(json!({"command": {"review": {"template": "Review $ARGUMENTS", "description": "Review code"}}}))
            .await;
    fixture.push([text("First answer."), text("Summary of the conversation.")]);
    let work = fixture.work.clone();
    let (commands, compacted) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            conn.wait_for(&session, |update| matches!(update, SessionUpdate::AvailableCommandsUpdate(_))).await;
            conn.prompt(&session, "hello").await.unwrap();
            let compacted = conn.prompt(&session, "/compact").await.unwrap();
            let commands: Vec<String> = conn
                .updates(&session)
                .iter()
                .find_map(|update| match update {
                    SessionUpdate::AvailableCommandsUpdate(update) => {
                        Some(update.available_commands.iter().map(|command| command.name.clone()).collect())
                    }
                    _ => None,
                })
                .unwrap();
            (commands, compacted)
        })
        .await;
    assert_eq!(commands, ["compact", "init", "review"]);
    assert_eq!(compacted.stop_reason, StopReason::EndTurn);
    // The second provider request was the summary turn.
    assert_eq!(fixture.mock.requests().len(), 2);
    assert_eq!(fixture.mock.remaining(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugins_command_is_offered_and_answers_without_the_model() {
    let fixture = Fixture::new(json!({"magic_context": {"context_limit": 8000}})).await;
    let work = fixture.work.clone();
    let (offered, answer) = fixture
        .client(choose_once(), async move |conn: Conn| {
            let session = conn.start(&work).await;
            let response = conn.prompt(&session, "/ctx-status").await.unwrap();
            assert_eq!(response.stop_reason, agent_client_protocol::v1::schema::StopReason::EndTurn);
            let offered: Vec<String> = conn
                .updates(&session)
                .iter()
                .filter_map(|update| match update {
                    agent_client_protocol::v1::schema::SessionUpdate::AvailableCommandsUpdate(update) => {
                        Some(update.available_commands.iter().map(|c| c.name.clone()).collect::<Vec<_>>())
                    }
                    _ => None,
                })
                .flatten()
                .collect();
            (offered, conn.agent_text(&session))
        })
        .await;
    assert!(offered.iter().any(|name| name == "ctx-status") && offered.iter().any(|name| name == "ctx-flush"));
    assert!(answer.starts_with("Magic Context"), "{answer}");
    assert!(fixture.mock.requests().is_empty(), "no model call");
}
