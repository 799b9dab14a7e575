//! Each directory's own configuration applies to its sessions: a prompt in a directory uses that
//! directory's `model`, agents (prompts) and providers, not the start directory's.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::directory_query;
use super::runtime::prompt;
use super::runtime::start_runtime;
use super::runtime::text;
use super::runtime::texts;

#[tokio::test]
async fn a_prompt_uses_the_model_and_agents_of_its_session_directory() {
    let t = start_runtime(json!({})).await;
    let other = tempfile::tempdir().unwrap();
    let other_dir = other.path().canonicalize().unwrap();
    let config = t.mock.opencode_config(json!({
        "provider": {"mock": {"models": {"n": {"tool_call": true}}}},
        "model": "mock/n",
        "agent": {"title": {"disable": true}, "build": {"prompt": "You work in the other directory."}}
    }));
    std::fs::write(other_dir.join("opencode.json"), config.to_string()).unwrap();

    // The start directory: its model, the default prompt.
    t.mock.push(text("From m."));
    let here = t.session().await;
    let (status, reply) = t.post(&format!("/session/{here}/message"), prompt("hi")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "From m.");
    assert_eq!(reply["info"]["modelID"], "m");

    // The other directory: its own model and its build agent's prompt.
    t.mock.push(text("From n."));
    let query = directory_query(&other_dir);
    let (status, session) = t.post(&format!("/session?{query}"), json!({})).await;
    assert_eq!(status, 200, "{session}");
    let there = session["id"].as_str().unwrap();
    let (status, reply) = t.post(&format!("/session/{there}/message?{query}"), prompt("hi")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "From n.");
    assert_eq!(reply["info"]["modelID"], "n");

    let requests = t.mock.requests();
    assert_eq!(requests.len(), 2);
    let (first, second) = (requests[0].body_json().unwrap(), requests[1].body_json().unwrap());
    assert_eq!(first["model"], "m");
    assert_eq!(second["model"], "n");
    let system = |body: &serde_json::Value| body["messages"][0]["content"].to_string();
    assert!(system(&second).contains("You work in the other directory."), "{second}");
    assert!(!system(&first).contains("You work in the other directory."), "{first}");
}
