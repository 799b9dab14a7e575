use pretty_assertions::assert_eq;
use serde_json::json;

use super::start;

#[tokio::test]
async fn health_answers_with_the_version() {
    let t = start().await;
    let (status, mut body) = t.get("/global/health").await;
    // opencode-rs adds what the server keeps in memory: the echo driver keeps no caches.
    let memory = body["memory"].take();
    assert!(memory["rss"].as_u64().is_some_and(|rss| rss > 0), "{memory}");
    assert_eq!((&memory["runtime"], &memory["allocator"]), (&json!(null), &json!(null)));
    body.as_object_mut().unwrap().remove("memory");
    assert_eq!((status, body), (200, json!({ "healthy": true, "version": env!("CARGO_PKG_VERSION") })));
}

#[tokio::test]
async fn sessions_are_created_read_updated_listed_and_deleted() {
    let t = start().await;
    let (status, created) = t.post("/session", json!({ "title": "first" })).await;
    assert_eq!(status, 200);
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("ses_"));
    assert_eq!(created["title"], "first");
    assert_eq!(created["directory"], t.dir.to_string_lossy().as_ref());
    assert_eq!(created["projectID"], "global");

    let (status, fetched) = t.get(&format!("/session/{id}")).await;
    assert_eq!((status, &fetched), (200, &created));

    let (status, patched) = t.patch(&format!("/session/{id}"), json!({ "title": "renamed" })).await;
    assert_eq!((status, patched["title"].as_str()), (200, Some("renamed")));

    let (status, list) = t.get("/session").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec![id.as_str()]);

    assert_eq!(t.delete(&format!("/session/{id}")).await, (200, json!(true)));
    let (status, error) = t.get(&format!("/session/{id}")).await;
    assert_eq!(status, 404);
    assert_eq!(error["name"], "NotFoundError");
    assert_eq!(error["data"]["code"], "NOT_FOUND");
}

#[tokio::test]
async fn a_prompt_returns_the_assistant_reply_and_messages_list_both() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let id = session["id"].as_str().unwrap();
    let (status, reply) =
        t.post(&format!("/session/{id}/message"), json!({ "parts": [{ "type": "text", "text": "say hi" }] })).await;
    assert_eq!(status, 200);
    assert_eq!(reply["info"]["role"], "assistant");
    let texts: Vec<&str> = reply["parts"].as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect();
    assert_eq!(texts, vec!["echo: say hi"]);

    let (status, messages) = t.get(&format!("/session/{id}/message")).await;
    assert_eq!(status, 200);
    let roles: Vec<&str> = messages.as_array().unwrap().iter().map(|m| m["info"]["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["user", "assistant"]);
    assert_eq!(messages[0]["parts"][0]["text"], "say hi");

    let message_id = messages[1]["info"]["id"].as_str().unwrap();
    let (status, one) = t.get(&format!("/session/{id}/message/{message_id}")).await;
    assert_eq!((status, &one), (200, &messages[1]));

    let (status, newest) = t.get(&format!("/session/{id}/message?limit=1")).await;
    assert_eq!((status, newest.as_array().unwrap().len()), (200, 1));
    assert_eq!(newest[0], messages[1]);
}

#[tokio::test]
async fn prompt_async_answers_204_and_the_reply_lands_in_history() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let id = session["id"].as_str().unwrap();
    let (status, body) =
        t.post(&format!("/session/{id}/prompt_async"), json!({ "parts": [{ "type": "text", "text": "later" }] })).await;
    assert_eq!((status, body), (204, serde_json::Value::Null));
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    assert_eq!(messages.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn fork_revert_unrevert_children_todo_and_abort() {
    let t = start().await;
    let (_, parent) = t.post("/session", json!({ "title": "parent" })).await;
    let id = parent["id"].as_str().unwrap();
    t.post(&format!("/session/{id}/message"), json!({ "parts": [{ "type": "text", "text": "one" }] })).await;
    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let first = messages[0]["info"]["id"].as_str().unwrap();

    let (status, reverted) = t.post(&format!("/session/{id}/revert"), json!({ "messageID": first })).await;
    assert_eq!((status, reverted["revert"]["messageID"].as_str()), (200, Some(first)));
    let (status, restored) = t.post(&format!("/session/{id}/unrevert"), json!(null)).await;
    assert_eq!((status, restored.get("revert")), (200, None));

    let (status, fork) = t.post(&format!("/session/{id}/fork"), json!({})).await;
    assert_eq!(status, 200);
    let (_, forked) = t.get(&format!("/session/{}/message", fork["id"].as_str().unwrap())).await;
    assert_eq!(forked.as_array().unwrap().len(), 2);

    let (_, child) = t.post("/session", json!({ "parentID": id })).await;
    let (status, children) = t.get(&format!("/session/{id}/children")).await;
    assert_eq!((status, children), (200, json!([child])));

    assert_eq!(t.get(&format!("/session/{id}/todo")).await, (200, json!([])));
    assert_eq!(t.post(&format!("/session/{id}/abort"), json!(null)).await, (200, json!(true)));
}

#[tokio::test]
async fn permission_replies_are_stored_once() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({})).await;
    let id = session["id"].as_str().unwrap().to_owned();
    let request = opencode_session_store::PermissionRequest {
        id: "per_0123456789abXYZ".into(),
        session_id: id.clone(),
        permission: "bash".into(),
        patterns: vec!["ls".into()],
        metadata: json!({}),
        always: vec!["ls *".into()],
        tool: None,
    };
    t.store.write(|tx| tx.ask_permission(&request, "build")).unwrap();
    let (status, body) = t.post("/permission/per_0123456789abXYZ/reply", json!({ "reply": "once" })).await;
    assert_eq!((status, body), (200, json!(true)));
    let (status, again) =
        t.post(&format!("/session/{id}/permissions/per_0123456789abXYZ"), json!({ "response": "reject" })).await;
    assert_eq!((status, again["data"]["code"].as_str()), (409, Some("CONFLICT")));
    let (status, _) = t.post("/permission/per_missing/reply", json!({ "reply": "once" })).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn shared_sessions_are_served_as_html_until_unshared() {
    let t = start().await;
    let (_, session) = t.post("/session", json!({ "title": "<shared>" })).await;
    let id = session["id"].as_str().unwrap();
    t.post(&format!("/session/{id}/message"), json!({ "parts": [{ "type": "text", "text": "hello" }] })).await;
    let (status, shared) = t.post(&format!("/session/{id}/share"), json!(null)).await;
    assert_eq!(status, 200);
    let url = shared["share"]["url"].as_str().unwrap().to_owned();
    assert_eq!(url, t.at(&format!("/share/{id}")));
    let html = t.http.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("&lt;shared&gt;") && html.contains("echo: hello"), "{html}");
    let (status, unshared) = t.delete(&format!("/session/{id}/share")).await;
    assert_eq!((status, unshared.get("share")), (200, None));
    assert_eq!(t.http.get(&url).send().await.unwrap().status().as_u16(), 404);
}
