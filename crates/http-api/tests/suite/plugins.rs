//! The server starts the plugins like the CLI does, in the background: requests are answered while
//! they start, prompts wait for them, and a required plugin that failed fails prompts with its error.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::runtime::prompt;
use super::runtime::start_runtime;
use super::runtime::text;
use super::runtime::texts;

#[tokio::test]
async fn health_answers_while_a_plugin_is_still_starting() {
    // This plugin never answers `initialize`: its start runs until the host's start timeout.
    let t = start_runtime(json!({ "plugin": [["slow", { "command": ["sleep", "30"] }]] })).await;
    let (status, health) = t.get("/global/health").await;
    assert_eq!(status, 200, "{health}");
    assert_eq!(health["healthy"], true);
    let (status, sessions) = t.get("/session").await;
    assert_eq!(status, 200, "{sessions}");
}

#[tokio::test]
async fn a_failed_required_plugin_fails_prompts_with_its_error() {
    let t = start_runtime(json!({ "plugin": [["broken", { "command": ["false"], "required": true }]] })).await;
    assert_eq!(t.get("/global/health").await.0, 200);
    let id = t.session().await;
    let (status, error) = t.post(&format!("/session/{id}/message"), prompt("hi")).await;
    assert_eq!(status, 503, "{error}");
    assert!(error.to_string().contains("broken"), "{error}");
    assert!(t.mock.requests().is_empty());
}

#[tokio::test]
async fn a_failed_optional_plugin_does_not_stop_prompts() {
    let t = start_runtime(json!({ "plugin": [["flaky", { "command": ["false"] }]] })).await;
    t.mock.push(text("Hello."));
    let id = t.session().await;
    let (status, reply) = t.post(&format!("/session/{id}/message"), prompt("hi")).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(texts(&reply), "Hello.");
}
