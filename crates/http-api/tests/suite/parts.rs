//! `PATCH|DELETE /session/{id}/message/{messageID}/part/{partID}`.

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::events::Events;
use super::runtime::first_of;
use super::runtime::prompt;
use super::runtime::start_runtime;
use super::runtime::text;
use super::runtime::tool_call;
use super::runtime::until_idle;
use super::start;

/// The next event of type `kind`.
async fn next_of(events: &mut Events, kind: &str) -> Value {
    loop {
        let (_, event) = events.next().await;
        if event["type"] == kind {
            return event;
        }
    }
}

#[tokio::test]
async fn a_part_is_replaced_and_removed_with_its_events() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let sid = session["id"].as_str().unwrap().to_owned();
    t.post(&format!("/session/{sid}/message"), json!({ "parts": [{ "type": "text", "text": "hello" }] })).await;
    let (_, messages) = t.get(&format!("/session/{sid}/message")).await;
    let user = messages[0]["info"]["id"].as_str().unwrap().to_owned();
    let mut part = messages[0]["parts"][0].clone();
    let pid = part["id"].as_str().unwrap().to_owned();
    let url = format!("/session/{sid}/message/{user}/part/{pid}");
    let mut events = Events::open(&t.http, &t.at("/event")).await;

    part["text"] = json!("hello, edited");
    assert_eq!(t.patch(&url, part.clone()).await, (200, part.clone()));
    let updated = next_of(&mut events, "message.part.updated").await;
    assert_eq!(updated["properties"]["part"], part);
    let (_, stored) = t.get(&format!("/session/{sid}/message/{user}")).await;
    assert_eq!(stored["parts"], json!([part]));

    // The body names the part of the path; a part of another message is not this message's.
    let mut other = part.clone();
    other["id"] = json!("prt_other");
    assert_eq!(t.patch(&url, other).await.0, 400);
    let assistant = messages[1]["info"]["id"].as_str().unwrap();
    let mut moved = part.clone();
    moved["messageID"] = json!(assistant);
    assert_eq!(t.patch(&format!("/session/{sid}/message/{assistant}/part/{pid}"), moved).await.0, 404);
    let mut missing = part.clone();
    missing["id"] = json!("prt_missing");
    assert_eq!(t.patch(&format!("/session/{sid}/message/{user}/part/prt_missing"), missing).await.0, 404);
    assert_eq!(t.patch(&url, json!({ "id": pid, "type": "text" })).await.0, 400);
    assert_eq!(t.patch(&format!("/session/{sid}/message/{user}/part/bad"), part.clone()).await.0, 400);

    assert_eq!(t.delete(&url).await, (200, json!(true)));
    let removed = next_of(&mut events, "message.part.removed").await;
    assert_eq!(removed["properties"], json!({ "sessionID": sid, "messageID": user, "partID": pid }));
    let (_, stored) = t.get(&format!("/session/{sid}/message/{user}")).await;
    assert_eq!(stored["parts"], json!([]));
    assert_eq!(t.delete(&url).await.0, 404);
    assert_eq!(t.delete(&format!("/session/ses_nope/message/{user}/part/{pid}")).await.0, 404);
}

#[tokio::test]
async fn parts_are_not_touched_while_the_session_runs_and_tool_states_only_move_forward() {
    let t = start_runtime(json!({ "permission": { "bash": "ask" } })).await;
    t.mock.push(tool_call("call_1", "bash", json!({ "command": "echo hi", "description": "Say hi" })));
    t.mock.push(text("Done."));
    let id = t.session().await;
    let mut events = t.events().await;
    let response = t.http.post(t.at(&format!("/session/{id}/prompt_async"))).json(&prompt("go")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let asked = first_of(&mut events, &id, "permission.asked").await;

    // The runner waits on the permission: the session is busy.
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let user = messages[0]["info"]["id"].as_str().unwrap().to_owned();
    let part = messages[0]["parts"][0].clone();
    let url = format!("/session/{id}/message/{user}/part/{}", part["id"].as_str().unwrap());
    let (status, body) = super::send(t.http.patch(t.at(&url)).json(&part)).await;
    assert_eq!((status, body["data"]["code"].clone()), (409, json!("CONFLICT")), "{body}");
    assert_eq!(super::send(t.http.delete(t.at(&url))).await.0, 409);

    let request = asked["properties"]["id"].as_str().unwrap();
    t.post(&format!("/permission/{request}/reply"), json!({ "reply": "once" })).await;
    until_idle(&mut events, &id).await;

    // Idle now: a completed tool call may not go back to running, and the stored part is unchanged.
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let (message, tool) = messages
        .as_array()
        .unwrap()
        .iter()
        .find_map(|m| m["parts"].as_array().unwrap().iter().find(|p| p["type"] == "tool").map(|p| (m, p.clone())))
        .unwrap();
    assert_eq!(tool["state"]["status"], "completed");
    let tool_url = format!(
        "/session/{id}/message/{}/part/{}",
        message["info"]["id"].as_str().unwrap(),
        tool["id"].as_str().unwrap()
    );
    let mut back = tool.clone();
    back["state"] = json!({ "status": "running", "input": {}, "time": { "start": 1 } });
    assert_eq!(super::send(t.http.patch(t.at(&tool_url)).json(&back)).await.0, 409);
    let mut retitled = tool.clone();
    retitled["state"]["title"] = json!("renamed");
    assert_eq!(super::send(t.http.patch(t.at(&tool_url)).json(&retitled)).await, (200, retitled.clone()));
    assert_eq!(super::send(t.http.patch(t.at(&url)).json(&part)).await, (200, part));
}
