//! Configuration changes reach the runtime without a restart: `PATCH /config` and `PATCH /global/config`
//! dispose what they affect, so the next prompt uses the new model (a running turn finishes with what
//! it started with); `POST /instance/dispose` and `POST /global/dispose` announce themselves on the
//! event streams; `PUT|DELETE /auth/{providerID}` change which providers are connected.

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::events::Events;
use super::runtime::RuntimeServer;
use super::runtime::first_of;
use super::runtime::prompt;
use super::runtime::start_runtime;
use super::runtime::text;
use super::runtime::texts;
use super::runtime::tool_call;
use super::runtime::until_idle;
use super::send;
use super::start;

/// A runtime server whose mock provider offers `m` (the configured model) and `m2`.
async fn two_models(extra: Value) -> RuntimeServer {
    let t = start_runtime(extra).await;
    // Written before the first request: the directory's Location and instance load it then.
    let file = t.dir.join("opencode.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    config["provider"]["mock"]["models"]["m2"] = json!({ "tool_call": true });
    std::fs::write(&file, config.to_string()).unwrap();
    t
}

/// The model of every request the mock received.
fn models(t: &RuntimeServer) -> Vec<String> {
    t.mock.requests().iter().map(|r| r.body_json().unwrap()["model"].as_str().unwrap().to_owned()).collect()
}

/// The next event of type `kind`.
async fn next_of(events: &mut Events, kind: &str) -> Value {
    loop {
        let (_, event) = events.next().await;
        if event["type"] == kind {
            return event;
        }
    }
}

async fn patch(t: &RuntimeServer, path: &str, body: Value) -> (u16, Value) {
    send(t.http.patch(t.at(path)).json(&body)).await
}

#[tokio::test]
async fn patch_config_makes_the_next_prompt_use_the_new_model() {
    let t = two_models(json!({})).await;
    t.mock.push_all([text("From m."), text("From m2.")]);
    let id = t.session().await;
    let mut events = t.events().await;

    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("first")).await;
    assert_eq!((status, texts(&reply)), (200, "From m.".to_owned()), "{reply}");
    let (status, merged) = patch(&t, "/config", json!({ "model": "mock/m2" })).await;
    assert_eq!((status, merged["model"].clone()), (200, json!("mock/m2")), "{merged}");
    let disposed = next_of(&mut events, "server.instance.disposed").await;
    assert_eq!(disposed["properties"], json!({ "directory": t.dir.to_string_lossy() }));

    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("second")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!((reply["info"]["modelID"].as_str(), texts(&reply).as_str()), (Some("m2"), "From m2."));
    assert_eq!(models(&t), ["m", "m2"]);
    // The stream stays open after the disposal (the server's, not the instance's).
    assert_eq!(t.post("/instance/dispose", json!({})).await, (200, json!(true)));
    let again = next_of(&mut events, "server.instance.disposed").await;
    assert_eq!(again["properties"], disposed["properties"]);
}

#[tokio::test]
async fn a_config_change_during_a_running_turn_leaves_that_turn_alone() {
    let t = two_models(json!({ "permission": { "bash": "ask" } })).await;
    t.mock.push(tool_call("call_1", "bash", json!({ "command": "echo kept", "description": "Say kept" })));
    t.mock.push_all([text("Done."), text("Now on m2.")]);
    let id = t.session().await;
    let mut events = t.events().await;

    let response =
        t.http.post(t.at(&format!("/session/{id}/prompt_async"))).json(&prompt("run it")).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 204);
    let asked = first_of(&mut events, &id, "permission.asked").await;
    // The turn waits on the permission: the update is written and answered meanwhile.
    let (status, merged) = patch(&t, "/config", json!({ "model": "mock/m2" })).await;
    assert_eq!((status, merged["model"].clone()), (200, json!("mock/m2")), "{merged}");
    let request = asked["properties"]["id"].as_str().unwrap();
    assert_eq!(t.post(&format!("/permission/{request}/reply"), json!({ "reply": "once" })).await.0, 200);
    until_idle(&mut events, &id).await;

    let (_, messages) = t.get(&format!("/session/{id}/message")).await;
    let messages = messages.as_array().unwrap();
    let tool = messages.iter().flat_map(|m| m["parts"].as_array().unwrap()).find(|p| p["type"] == "tool").unwrap();
    assert_eq!(tool["state"]["status"], "completed", "{tool}");
    assert!(tool["state"]["output"].as_str().unwrap().contains("kept"), "{tool}");
    assert_eq!(texts(messages.last().unwrap()), "Done.");
    assert!(messages.iter().all(|m| m["info"]["error"].is_null()), "{messages:?}");
    // The whole drain ran on the model it started with; the next prompt runs on the new one.
    assert_eq!(models(&t), ["m", "m"]);
    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("again")).await;
    assert_eq!((status, texts(&reply)), (200, "Now on m2.".to_owned()), "{reply}");
    assert_eq!(models(&t), ["m", "m", "m2"]);
}

#[tokio::test]
async fn global_config_is_read_and_updated_and_disposes_every_instance() {
    let t = start().await;
    let config_dir = std::path::PathBuf::from(t.get("/path").await.1["config"].as_str().unwrap());
    let (status, initial) = t.get("/global/config").await;
    assert_eq!((status, initial.get("model")), (200, None), "{initial}");
    let mut global = Events::open(&t.http, &t.at("/global/event")).await;
    // OpenCode's envelope: `{directory, project, payload}` (no directory for server-wide events).
    assert_eq!(global.next().await.1["payload"]["type"], "server.connected");
    assert_eq!(t.get("/config").await.1.get("model"), None);

    let (status, updated) = t.patch("/global/config", json!({ "model": "a/b" })).await;
    assert_eq!((status, updated["model"].clone()), (200, json!("a/b")), "{updated}");
    assert_eq!(t.get("/global/config").await.1["model"], "a/b");
    // The instance reloaded its configuration: the global file applies to it.
    assert_eq!(t.get("/config").await.1["model"], "a/b");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(config_dir.join("opencode.json")).unwrap()).unwrap();
    assert_eq!(file, json!({ "model": "a/b" }));
    let kinds = [global.next().await.1, global.next().await.1];
    assert_eq!(kinds[0]["payload"]["type"], "server.instance.disposed");
    assert_eq!(kinds[0]["directory"], t.dir.to_string_lossy().as_ref());
    assert_eq!(kinds[0]["payload"]["properties"]["directory"], t.dir.to_string_lossy().as_ref());
    assert_eq!(kinds[1]["payload"]["type"], "global.disposed");

    // An existing JSONC file is edited in place, comments kept; bad settings write nothing.
    std::fs::write(config_dir.join("opencode.jsonc"), "{\n  // mine\n  \"model\": \"c/d\"\n}\n").unwrap();
    assert_eq!(t.get("/global/config").await.1["model"], "c/d");
    assert_eq!(t.patch("/global/config", json!({ "nope": 1 })).await.0, 400);
    let (status, updated) = t.patch("/global/config", json!({ "small_model": "e/f" })).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!((updated["model"].as_str(), updated["small_model"].as_str()), (Some("c/d"), Some("e/f")));
    let jsonc = std::fs::read_to_string(config_dir.join("opencode.jsonc")).unwrap();
    assert!(jsonc.contains("// mine") && jsonc.contains("\"small_model\": \"e/f\""), "{jsonc}");
}

#[tokio::test]
async fn dispose_routes_answer_true_and_announce_themselves() {
    let t = start().await;
    let mut instance = Events::open(&t.http, &t.at("/event")).await;
    assert_eq!(instance.next().await.1["type"], "server.connected");

    assert_eq!(t.post("/instance/dispose", json!({})).await, (200, json!(true)));
    let (_, event) = instance.next().await;
    assert_eq!(event["type"], "server.instance.disposed");
    assert_eq!(event["properties"], json!({ "directory": t.dir.to_string_lossy() }));

    assert_eq!(t.post("/global/dispose", json!({})).await, (200, json!(true)));
    let kinds = [instance.next().await.1["type"].clone(), instance.next().await.1["type"].clone()];
    assert_eq!(kinds, [json!("server.instance.disposed"), json!("global.disposed")]);
    // The instance still serves after being disposed.
    assert_eq!(t.get("/config").await.0, 200);
}

#[tokio::test]
async fn auth_set_and_remove_change_the_connected_providers() {
    let t = start().await;
    let connected = |providers: &Value| providers["connected"].clone();
    assert_eq!(connected(&t.get("/provider").await.1), json!([]));

    let put = t.http.put(t.at("/auth/anthropic")).json(&json!({ "type": "api", "key": "sk-test" }));
    assert_eq!(send(put).await, (200, json!(true)));
    assert_eq!(connected(&t.get("/provider").await.1), json!(["anthropic"]));
    let (_, usable) = t.get("/config/providers").await;
    let ids: Vec<&str> = usable["providers"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["anthropic"]);
    let file = t.root.path().join("home/data/auth.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored, json!({ "anthropic": { "type": "api", "key": "sk-test" } }));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }

    let oauth = json!({ "type": "oauth", "refresh": "r", "access": "a", "expires": 0, "accountId": "acc" });
    assert_eq!(send(t.http.put(t.at("/auth/openai")).json(&oauth)).await, (200, json!(true)));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["openai"], oauth);
    for bad in
        [json!({ "type": "api" }), json!({ "type": "token", "key": "k" }), json!({ "type": "api", "key": "k", "x": 1 })]
    {
        let (status, error) = send(t.http.put(t.at("/auth/anthropic")).json(&bad)).await;
        assert_eq!(status, 400, "{bad} -> {error}");
    }

    assert_eq!(t.delete("/auth/anthropic").await, (200, json!(true)));
    assert_eq!(t.delete("/auth/anthropic").await, (200, json!(true)));
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored.as_object().unwrap().keys().collect::<Vec<_>>(), ["openai"]);
    assert!(!connected(&t.get("/provider").await.1).as_array().unwrap().contains(&json!("anthropic")));
}

#[tokio::test]
async fn an_empty_update_changes_no_file() {
    let t = start().await;
    let config_dir = std::path::PathBuf::from(t.get("/path").await.1["config"].as_str().unwrap());
    assert_eq!(t.patch("/global/config", json!({})).await.0, 200);
    assert_eq!(t.patch("/config", json!({})).await.0, 200);
    assert!(!config_dir.join("opencode.json").exists());
    assert!(!t.dir.join("opencode.json").exists());
}
