//! Titles for new sessions from the small model (off the critical path, never over a user's title)
//! and the default model when none is chosen.

use std::time::Duration;

use opencode_catalog::Catalog;
use opencode_config::AuthStore;
use opencode_config::Config;
use opencode_config::Env;
use opencode_config::Paths;
use opencode_session_runtime::FnTools;
use opencode_session_runtime::ModelChoice;
use opencode_session_runtime::PromptRequest;
use opencode_session_runtime::RuntimeOptions;
use opencode_session_runtime::SessionRuntime;
use opencode_session_runtime::TITLE_PROMPT;
use opencode_session_runtime::default_model;
use opencode_session_store::NewSession;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::harness;
use super::support::text;

/// A runtime like the harness's, with titles on.
async fn titled() -> (super::support::Harness, SessionRuntime) {
    let h = harness(FnTools::new()).await;
    let config: Config = serde_json::from_value(h.mock.opencode_config(json!({}))).unwrap();
    let runtime = SessionRuntime::builder(
        std::sync::Arc::clone(&h.store),
        opencode_llm::LlmClient::new(),
        std::sync::Arc::new(Catalog::default().with_config(&config).unwrap()),
        std::sync::Arc::new(config),
        Paths::under(h.data.path()),
    )
    .options(RuntimeOptions { titles: true, ..RuntimeOptions::default() })
    .build();
    (h, runtime)
}

async fn title_of(h: &super::support::Harness, session: &str) -> String {
    for _ in 0..200 {
        let title = h.store.read(|r| r.session(session)).unwrap().unwrap().title;
        if !title.starts_with("New session - ") {
            return title;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    h.store.read(|r| r.session(session)).unwrap().unwrap().title
}

#[tokio::test]
async fn a_new_session_is_titled_by_the_small_model_after_its_first_message() {
    let (h, runtime) = titled().await;
    let session = runtime.create_session(h.project.path(), NewSession::default()).await.unwrap();
    // The main turn and the title request race for the mock's answers; both answers are titles here.
    h.mock.push_all([text("Fix login bug"), text("Fix login bug")]);
    runtime.run(PromptRequest::text(&session.id, "the login page returns 500")).await.unwrap();

    assert_eq!(title_of(&h, &session.id).await, "Fix login bug");
    let requests = h.mock.requests();
    assert_eq!(requests.len(), 2, "one main turn and one title request");
    let title_request = requests
        .iter()
        .map(|r| r.body_json().unwrap())
        .find(|body| body["messages"][0]["content"].as_str() == Some(TITLE_PROMPT))
        .expect("a title request with the title prompt");
    assert_eq!(title_request["messages"].as_array().unwrap().last().unwrap()["content"], "the login page returns 500");
    assert!(title_request.get("tools").is_none(), "the title request offers no tools");
}

#[tokio::test]
async fn a_title_set_by_the_user_is_kept_and_failures_are_ignored() {
    let (h, runtime) = titled().await;
    let named = NewSession { title: Some("Mine".into()), ..NewSession::default() };
    let session = runtime.create_session(h.project.path(), named).await.unwrap();
    h.mock.push(text("answer"));
    runtime.run(PromptRequest::text(&session.id, "hello")).await.unwrap();
    assert_eq!(h.mock.requests().len(), 1, "no title request for a named session");

    let session = runtime.create_session(h.project.path(), NewSession::default()).await.unwrap();
    // Whichever request gets which answer, the title comes back empty: a failure, ignored.
    h.mock.push_all([text(" "), text(" ")]);
    let result = runtime.run(PromptRequest::text(&session.id, "hello")).await.unwrap();
    assert_eq!(result.outcome, opencode_session_runtime::DrainOutcome::Completed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(h.store.read(|r| r.session(&session.id)).unwrap().unwrap().title.starts_with("New session - "));
}

#[test]
fn the_default_model_is_config_model_else_the_first_provider_with_a_key() {
    let catalog = Catalog::bundled().unwrap();
    let data = tempfile::tempdir().unwrap();
    let auth = |env: &Env| AuthStore::new(data.path().join("auth.json"), env);
    let env = Env::from_pairs([("ANTHROPIC_API_KEY", "k")]);
    let chosen = default_model(&catalog, &Config::default(), &auth(&env), &env).unwrap();
    assert_eq!(chosen.provider, "anthropic");
    assert!(chosen.model.contains("claude-sonnet-4"), "{chosen:?}");

    let config: Config = serde_json::from_value(json!({"model": "openai/gpt-5"})).unwrap();
    assert_eq!(
        default_model(&catalog, &config, &auth(&env), &env),
        Some(ModelChoice { provider: "openai".into(), model: "gpt-5".into(), variant: None })
    );
    let nothing = Env::default();
    assert_eq!(default_model(&catalog, &Config::default(), &auth(&nothing), &nothing), None);
}

/// A provider named only in the session directory's own `opencode.json` gets the session its turns
/// and its title too: the title follows the directory's configuration, as the turn does.
#[tokio::test]
async fn a_session_whose_provider_is_only_in_its_directory_config_is_titled() {
    let h = harness(FnTools::new()).await;
    let own = h.mock.opencode_config(json!({}));
    std::fs::write(h.project.path().join("opencode.json"), own.to_string()).unwrap();
    let start = Config::default();
    let runtime = per_directory_runtime(&h, start, true);
    let session = runtime.create_session(h.project.path(), NewSession::default()).await.unwrap();
    h.mock.push_all([text("Directory title"), text("Directory title")]);
    runtime.run(PromptRequest::text(&session.id, "hello")).await.unwrap();

    assert_eq!(title_of(&h, &session.id).await, "Directory title");
}

/// The `compaction` section of the session directory's own configuration applies to its turns, as
/// its model and providers do (not the start directory's).
#[tokio::test]
async fn a_directory_that_turns_auto_compaction_off_is_not_compacted() {
    let h = harness(FnTools::new()).await;
    let own = h.mock.opencode_config(json!({
        "compaction": {"auto": false},
        "provider": {"mock": {"models": {"m": {"limit": {"context": 2000, "output": 100}}}}}
    }));
    std::fs::write(h.project.path().join("opencode.json"), own.to_string()).unwrap();
    // The start directory would compact anything but the last 10 tokens.
    let start: Config = serde_json::from_value(json!({"compaction": {"preserve_recent_tokens": 10}})).unwrap();
    let runtime = per_directory_runtime(&h, start, false);
    let session = runtime.create_session(h.project.path(), NewSession::default()).await.unwrap();
    h.mock.push_all([text("first"), text("second")]);
    runtime.run(PromptRequest::text(&session.id, "x".repeat(12_000))).await.unwrap();
    runtime.run(PromptRequest::text(&session.id, "again")).await.unwrap();
    assert_eq!(h.mock.requests().len(), 2, "two turns and no summary request: the directory turned compaction off");
}

/// A runtime over the harness's store whose start configuration is `start` and where each
/// directory's own configuration applies (as the front ends assemble it).
fn per_directory_runtime(h: &super::support::Harness, start: Config, titles: bool) -> SessionRuntime {
    let paths = Paths::under(h.data.path());
    let locations = opencode_session_runtime::StandardLocations::new(&start, paths.clone(), Env::default())
        .per_directory()
        .with_configured_tools(|_, _| Ok(std::sync::Arc::new(FnTools::new()) as _));
    SessionRuntime::builder(
        std::sync::Arc::clone(&h.store),
        opencode_llm::LlmClient::new(),
        std::sync::Arc::new(Catalog::default()),
        std::sync::Arc::new(start),
        paths,
    )
    .locations(locations)
    .options(RuntimeOptions { titles, ..RuntimeOptions::default() })
    .build()
}
