//! `opencode auth login|list|logout`.

use super::support::{Home, stderr, stdout};

#[test]
fn login_list_logout_round_trip() {
    let home = Home::new();
    let login = home.opencode(&["auth", "login", "anthropic"]).write_stdin("sk-ant-123\n").output().unwrap();
    assert!(login.status.success(), "{}", stderr(&login));
    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(home.auth_file()).unwrap()).unwrap();
    assert_eq!(stored, serde_json::json!({"anthropic": {"type": "api", "key": "sk-ant-123"}}));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(home.auth_file()).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let list = home.opencode(&["auth", "list"]).env("GROQ_API_KEY", "g").output().unwrap();
    let text = stdout(&list);
    assert!(text.contains("anthropic                api       Anthropic"), "{text}");
    assert!(text.contains("Environment\n  groq                     $GROQ_API_KEY"), "{text}");
    assert!(!text.contains("sk-ant-123"), "keys are never printed");
    // The stored key makes the provider usable.
    let models = home.opencode(&["models"]).output().unwrap();
    assert!(stdout(&models).lines().all(|line| line.starts_with("anthropic/")));
    let logout = home.opencode(&["auth", "logout", "anthropic"]).output().unwrap();
    assert!(logout.status.success());
    let again = home.opencode(&["auth", "logout", "anthropic"]).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("no stored credentials for `anthropic`"));
}

#[test]
fn login_asks_for_the_provider_when_omitted_and_rejects_an_empty_key() {
    let home = Home::new();
    let ok = home.opencode(&["auth", "login"]).write_stdin("groq\ngsk-1\n").output().unwrap();
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(std::fs::read_to_string(home.auth_file()).unwrap().contains("gsk-1"));
    let empty = home.opencode(&["auth", "login", "openai"]).write_stdin("\n").output().unwrap();
    assert_eq!(empty.status.code(), Some(1));
    assert!(stderr(&empty).contains("error: no API key given"));
}

/// A mock OAuth server (answers in order, whatever the path) and its tokio runtime.
fn oauth_server(answers: Vec<serde_json::Value>) -> (tokio::runtime::Runtime, opencode_mock_provider::MockProvider) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mock = runtime.block_on(opencode_mock_provider::MockProvider::start()).unwrap();
    mock.push_all(answers.iter().map(|answer| opencode_mock_provider::MockResponse::json(200, answer)));
    (runtime, mock)
}

fn device_code() -> serde_json::Value {
    serde_json::json!({"device_code": "dev_1", "user_code": "WXYZ-9876", "verification_uri": "https://github.test/login/device", "interval": 0})
}

#[test]
fn login_lists_the_plugin_methods_and_runs_the_copilot_device_flow() {
    let (_rt, mock) = oauth_server(vec![
        device_code(),
        serde_json::json!({"error": "authorization_pending"}),
        serde_json::json!({"access_token": "gho_secret", "token_type": "bearer"}),
    ]);
    let home = Home::new();
    let login = home
        .opencode(&["auth", "login"])
        .env("OPENCODE_COPILOT_URL", mock.base_url())
        .env("OPENCODE_COPILOT_POLL_MARGIN_MS", "0")
        .write_stdin("github-copilot\n")
        .output()
        .unwrap();
    let err = stderr(&login);
    assert!(login.status.success(), "{err}");
    assert!(err.contains("github-copilot           1. GitHub Copilot (Login with GitHub (device code))"), "{err}");
    assert!(err.contains("<provider id>            API key"), "{err}");
    assert!(err.contains("Go to: https://github.test/login/device\nEnter the code: WXYZ-9876\n"), "{err}");
    assert!(!err.contains("gho_secret"), "tokens are never printed");

    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(home.auth_file()).unwrap()).unwrap();
    assert_eq!(
        stored,
        serde_json::json!({"github-copilot": {"type": "oauth", "refresh": "gho_secret", "access": "gho_secret", "expires": 0}})
    );
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path_and_query.clone()).collect();
    assert_eq!(paths, ["/login/device/code", "/login/oauth/access_token", "/login/oauth/access_token"]);
    assert_eq!(mock.requests()[1].body_json().unwrap()["device_code"], "dev_1");
    let list = home.opencode(&["auth", "list"]).output().unwrap();
    assert!(stdout(&list).contains("github-copilot           oauth"), "{}", stdout(&list));
}

#[test]
fn a_refused_device_login_fails_with_one_line_and_stores_nothing() {
    let (_rt, mock) = oauth_server(vec![
        device_code(),
        serde_json::json!({"error": "access_denied", "error_description": "The user has denied\nyour application access."}),
    ]);
    let home = Home::new();
    let login = home
        .opencode(&["auth", "login", "github-copilot"])
        .env("OPENCODE_COPILOT_URL", mock.base_url())
        .env("OPENCODE_COPILOT_POLL_MARGIN_MS", "0")
        .output()
        .unwrap();
    assert_eq!(login.status.code(), Some(1));
    let err = stderr(&login);
    assert!(
        err.contains(
            "error: authorization was refused: The user has denied your application access.\nhint: run `opencode auth login` again and approve the request\n"
        ),
        "{err}"
    );
    assert!(!home.auth_file().exists());
}

#[test]
fn an_unreachable_login_server_and_a_bad_method_are_clear_errors() {
    let home = Home::new();
    let down = home
        .opencode(&["auth", "login", "github-copilot"])
        .env("OPENCODE_COPILOT_URL", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(down.status.code(), Some(1));
    assert!(stderr(&down).contains("error: cannot reach http://127.0.0.1:9/login/device/code"), "{}", stderr(&down));
    let bad = home.opencode(&["auth", "login", "github-copilot", "--method", "3"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("error: GitHub Copilot has login methods 1 to 1"), "{}", stderr(&bad));
}

#[test]
fn anthropic_login_exchanges_the_pasted_code_with_pkce_and_stores_oauth_tokens() {
    let (_rt, mock) = oauth_server(vec![
        serde_json::json!({"access_token": "sk-ant-oat-1", "refresh_token": "rt-1", "expires_in": 3600}),
    ]);
    let home = Home::new();
    let login = home
        .opencode(&["auth", "login", "anthropic", "--method", "1"])
        .env("OPENCODE_ANTHROPIC_TOKEN_URL", format!("{}/v1/oauth/token", mock.base_url()))
        .write_stdin("pasted-code\n")
        .output()
        .unwrap();
    let err = stderr(&login);
    assert!(login.status.success(), "{err}");
    let url = err.lines().find_map(|line| line.strip_prefix("Go to: ")).unwrap();
    assert!(url.starts_with("https://claude.ai/oauth/authorize?"), "{url}");
    let body = mock.requests()[0].body_json().unwrap();
    assert_eq!(mock.requests()[0].path_and_query, "/v1/oauth/token");
    assert_eq!(body["code"], "pasted-code");
    let verifier = body["code_verifier"].as_str().unwrap();
    let challenge = opencode_plugin_host::auth::pkce::challenge(verifier);
    assert!(url.contains(&format!("code_challenge={challenge}&")), "{url} vs {challenge}");

    let stored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(home.auth_file()).unwrap()).unwrap();
    assert_eq!(stored["anthropic"]["type"], "oauth");
    assert_eq!(stored["anthropic"]["access"], "sk-ant-oat-1");
    assert_eq!(stored["anthropic"]["refresh"], "rt-1");
}
