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
