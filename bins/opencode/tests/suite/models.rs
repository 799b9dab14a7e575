//! `opencode models`.

use super::support::{Home, stderr, stdout};

#[test]
fn lists_only_providers_with_credentials() {
    let home = Home::new();
    let output = home.opencode(&["models"]).env("GROQ_API_KEY", "gsk").output().unwrap();
    assert!(output.status.success());
    let listed = stdout(&output);
    assert!(listed.lines().count() > 5);
    assert!(listed.lines().all(|line| line.starts_with("groq/")), "{listed}");
    let nothing = home.opencode(&["models"]).output().unwrap();
    assert_eq!(stdout(&nothing), "");
    assert!(stderr(&nothing).contains("no provider has credentials"));
}

#[test]
fn a_provider_argument_and_verbose_show_details() {
    let home = Home::new();
    let output = home.opencode(&["models", "anthropic", "--verbose"]).output().unwrap();
    assert!(output.status.success());
    let text = stdout(&output);
    let start = text.find("anthropic/claude-sonnet-4-5\n").unwrap() + "anthropic/claude-sonnet-4-5\n".len();
    let details: serde_json::Value =
        serde_json::Deserializer::from_str(&text[start..]).into_iter().next().unwrap().unwrap();
    assert_eq!(details["limit"]["context"], 200_000);
    assert_eq!(details["cost"]["cache_read"], 0.3);
    assert_eq!(details["route"]["protocol"], "anthropic-messages");
    assert_eq!(details["variants"], serde_json::json!(["high", "max"]));
}

#[test]
fn custom_providers_from_config_are_listed() {
    let home = Home::new();
    std::fs::write(
        home.global_config(),
        r#"{"provider": {"lab": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://gpu:8000/v1"}, "models": {"big-model": {}}}}}"#,
    )
    .unwrap();
    let output = home.opencode(&["models"]).output().unwrap();
    assert_eq!(stdout(&output), "lab/big-model\n");
}

#[test]
fn an_unknown_provider_is_an_error_with_a_hint() {
    let home = Home::new();
    let output = home.opencode(&["models", "nope"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(err.starts_with("error: unknown provider `nope`\nhint: run `opencode models`"), "{err}");
}

#[test]
fn refresh_downloads_into_the_cache_and_lists_from_it() {
    let home = Home::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(opencode_mock_provider::MockProvider::start()).unwrap();
    let catalog = serde_json::json!({"newco": {"id": "newco", "name": "NewCo", "env": ["NEWCO_API_KEY"],
        "npm": "@ai-sdk/openai-compatible", "api": "https://api.newco.example/v1",
        "models": {"newco-1": {"id": "newco-1", "name": "NewCo 1", "limit": {"context": 1000, "output": 100}}}}});
    mock.push(opencode_mock_provider::MockResponse::json(200, &catalog));
    let output = home
        .opencode(&["models", "--refresh"])
        .env_remove("OPENCODE_DISABLE_MODELS_FETCH")
        .env("OPENCODE_MODELS_URL", mock.base_url())
        .env("NEWCO_API_KEY", "k")
        .output()
        .unwrap();
    assert!(stderr(&output).contains("models catalog refreshed: 1 providers"), "{}", stderr(&output));
    assert_eq!(stdout(&output), "newco/newco-1\n");
    assert!(home.path().join("home/.cache/opencode/models.json").exists());
    assert_eq!(mock.requests()[0].path_and_query, "/api.json");
    // Later runs read the cache without the network.
    let again = home.opencode(&["models"]).env("NEWCO_API_KEY", "k").output().unwrap();
    assert_eq!(stdout(&again), "newco/newco-1\n");
}
