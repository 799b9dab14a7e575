//! What a synchronous prompt answers with: the last assistant message of the turns it started,
//! through a subtask's synthetic summary request and a multi-step tool loop, and never the reply to
//! a prompt queued behind it.

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::runtime::RuntimeServer;
use super::runtime::first_of;
use super::runtime::prompt;
use super::runtime::start_runtime;
use super::runtime::text;
use super::runtime::texts;
use super::runtime::tool_call;

/// The session's messages over HTTP.
async fn messages(t: &RuntimeServer, id: &str) -> Vec<Value> {
    let (status, messages) = t.get(&format!("/session/{id}/message")).await;
    assert_eq!(status, 200, "{messages}");
    messages.as_array().unwrap().clone()
}

fn roles(messages: &[Value]) -> Vec<&str> {
    messages.iter().map(|m| m["info"]["role"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_subtask_command_answers_with_the_models_summary_not_the_task_message() {
    let t = start_runtime(json!({
        "command": { "check": { "template": "Check $1", "description": "check a file", "agent": "general", "subtask": true } }
    }))
    .await;
    let id = t.session().await;
    t.mock.push_all([text("The file is fine."), text("Summary: fine.")]);

    let (status, reply) =
        t.post(&format!("/session/{id}/command"), json!({ "command": "check", "arguments": "src/a.rs" })).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "Summary: fine.");
    let messages = messages(&t, &id).await;
    assert_eq!(roles(&messages), ["user", "assistant", "user", "assistant"]);
    // The reply is the last message, answering the synthetic summary request.
    assert_eq!(reply["info"]["id"], messages[3]["info"]["id"]);
    assert_eq!(reply["info"]["parentID"], messages[2]["info"]["id"]);
    assert_eq!(messages[1]["parts"][0]["tool"], "task");
}

#[tokio::test]
async fn a_message_with_a_subtask_part_answers_with_the_turn_after_the_task() {
    let t = start_runtime(json!({})).await;
    let id = t.session().await;
    t.mock.push_all([text("Checked."), text("Noted: checked.")]);
    let body = json!({ "parts": [{
        "type": "subtask", "prompt": "Check the parser", "description": "check the parser", "agent": "general"
    }] });

    let (status, reply) = t.post(&format!("/session/{id}/message"), body).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "Noted: checked.");
    let messages = messages(&t, &id).await;
    assert_eq!(roles(&messages), ["user", "assistant", "assistant"]);
    assert_eq!(reply["info"]["id"], messages[2]["info"]["id"]);
}

#[tokio::test]
async fn a_tool_loop_answers_with_its_last_turn_and_not_with_a_prompt_queued_behind_it() {
    let t = start_runtime(json!({ "permission": { "bash": "ask" } })).await;
    let id = t.session().await;
    t.mock.push_all([
        tool_call("call_1", "bash", json!({ "command": "echo approved", "description": "Say approved" })),
        text("Done."),
        text("The queued answer."),
    ]);
    let mut events = t.events().await;
    let (http, url) = (t.http.clone(), t.at(&format!("/session/{id}/message")));
    let sync = tokio::spawn(async move { super::send(http.post(url).json(&prompt("run it"))).await });

    // While the call waits for its permission, a prompt is queued behind the running loop.
    let asked = first_of(&mut events, &id, "permission.asked").await;
    let request = asked["properties"]["id"].as_str().unwrap().to_owned();
    let queued = json!({ "prompt": { "text": "and then?" }, "delivery": "queue" });
    assert_eq!(t.post(&format!("/api/session/{id}/prompt"), queued).await.0, 200);
    assert_eq!(t.post(&format!("/permission/{request}/reply"), json!({ "reply": "once" })).await.0, 200);

    let (status, reply) = sync.await.unwrap();
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "Done.");
    let messages = messages(&t, &id).await;
    assert_eq!(roles(&messages), ["user", "assistant", "assistant", "user", "assistant"]);
    assert_eq!(reply["info"]["id"], messages[2]["info"]["id"]);
    assert_eq!(texts(&messages[4]), "The queued answer.");
}
