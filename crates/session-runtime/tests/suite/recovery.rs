//! Restart after a crash: a tool call left running is failed as interrupted and never re-executed;
//! the admitted prompt completes from durable state.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use opencode_llm::ToolDefinition;
use opencode_session_runtime::DrainOutcome;
use opencode_session_runtime::FnTools;
use opencode_session_store::AssistantMessage;
use opencode_session_store::AssistantTime;
use opencode_session_store::CreatedTime;
use opencode_session_store::Delivery;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessagePath;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::ToolStartTime;
use opencode_session_store::ToolState;
use opencode_session_store::UserMessage;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Limits;
use super::support::harness;
use super::support::requests;
use super::support::runtime_at;
use super::support::text;
use super::support::transcript;

#[tokio::test]
async fn a_tool_left_running_by_a_crash_is_failed_never_rerun_and_the_pending_prompt_completes() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let tools = FnTools::new().tool(ToolDefinition::new("deploy", "Deploy", json!({"type": "object"})), move |_, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok("deployed".to_owned()) })
    });
    let h = harness(tools.clone()).await;
    let session = h.session.id.clone();
    // What a process killed mid-tool leaves behind: a promoted prompt, an assistant message that never
    // completed with its tool call running, and a prompt admitted meanwhile.
    h.store
        .write(|tx| {
            tx.admit_input(
                &session,
                Some("msg_000000000001aaaaaaaaaaaaaa".into()),
                json!({"text": "Deploy"}),
                Delivery::Steer,
            )?;
            let user = MessageInfo::User(UserMessage {
                id: String::new(),
                session_id: String::new(),
                time: CreatedTime { created: 1 },
                format: None,
                summary: None,
                agent: "build".into(),
                model: ModelRef { provider_id: "mock".into(), model_id: "m".into(), variant: None },
                system: None,
                tools: None,
            });
            let prompt = Part {
                id: "prt_000000000001aaaaaaaaaaaaaa".into(),
                session_id: session.clone(),
                message_id: String::new(),
                kind: PartKind::Text {
                    text: "Deploy".into(),
                    synthetic: None,
                    ignored: None,
                    time: None,
                    metadata: None,
                },
            };
            tx.promote_input("msg_000000000001aaaaaaaaaaaaaa", user, vec![prompt])?;
            tx.append_message(&MessageInfo::Assistant(AssistantMessage {
                id: "msg_000000000002aaaaaaaaaaaaaa".into(),
                session_id: session.clone(),
                time: AssistantTime { created: 2, completed: None },
                error: None,
                parent_id: "msg_000000000001aaaaaaaaaaaaaa".into(),
                model_id: "m".into(),
                provider_id: "mock".into(),
                mode: "build".into(),
                agent: "build".into(),
                path: MessagePath { cwd: "/".into(), root: "/".into() },
                summary: None,
                cost: 0.0,
                tokens: Default::default(),
                structured: None,
                variant: None,
                finish: None,
            }))?;
            tx.upsert_part(&Part {
                id: "prt_000000000003aaaaaaaaaaaaaa".into(),
                session_id: session.clone(),
                message_id: "msg_000000000002aaaaaaaaaaaaaa".into(),
                kind: PartKind::Tool {
                    call_id: "call_1".into(),
                    tool: "deploy".into(),
                    state: ToolState::Running {
                        input: json!({}),
                        title: None,
                        metadata: None,
                        time: ToolStartTime { start: 2 },
                    },
                    metadata: None,
                },
            })?;
            tx.admit_input(&session, None, json!({"text": "Did it finish?"}), Delivery::Steer)
        })
        .unwrap();
    drop(h.runtime);

    // A new process over the same files.
    let runtime = runtime_at(&h.mock, h.data.path(), tools, Limits::default(), json!({}));
    h.mock.push(text("It was interrupted; I will not rerun it blindly."));
    runtime.wake(&session);
    assert_eq!(runtime.wait_idle(&session).await, Some(DrainOutcome::Completed));

    assert_eq!(runs.load(Ordering::SeqCst), 0, "the interrupted call was never executed again");
    let requests = requests(&h.mock);
    assert_eq!(requests.len(), 1);
    assert_eq!(
        transcript(&requests[0])[1..],
        ["user: Deploy", "assistant: deploy({})", "tool: Tool execution interrupted", "user: Did it finish?",]
    );
    let messages = runtime.store().read(|r| r.messages(&session, None, 100)).unwrap().messages;
    let MessageInfo::Assistant(crashed) = &messages[1].info else { panic!("assistant expected") };
    assert_eq!(crashed.error.as_ref().unwrap().name, "MessageAbortedError");
    assert!(runtime.store().read(|r| r.pending_inputs(&session, None)).unwrap().is_empty());
}
