//! `opencode debug config`.

use super::support::{Home, stderr, stdout};

#[test]
fn prints_merged_config_with_sources() {
    let home = Home::new();
    std::fs::write(home.global_config(), r#"{"model": "anthropic/claude-sonnet-4-5", "username": "me"}"#).unwrap();
    std::fs::write(home.work().join("opencode.jsonc"), "{\n  // project\n  \"model\": \"openai/gpt-5\",\n}\n").unwrap();
    let output = home
        .opencode(&["debug", "config"])
        .env("OPENCODE_CONFIG_CONTENT", r#"{"share": "disabled"}"#)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let global = home.global_config();
    let project = home.work().join("opencode.jsonc");
    let expected = format!(
        "{{\n  // from: global {}, then project {}\n  \"model\": \"openai/gpt-5\",\n  // from: env \
         OPENCODE_CONFIG_CONTENT\n  \"share\": \"disabled\",\n  // from: global {}\n  \"username\": \"me\"\n}}\n",
        global.display(),
        project.display(),
        global.display()
    );
    assert_eq!(text, expected);
    let parsed: serde_json::Value = opencode_config::jsonc::from_str(&text).unwrap();
    assert_eq!(parsed["model"], "openai/gpt-5");
}

#[test]
fn a_broken_file_is_reported_and_the_rest_still_prints() {
    let home = Home::new();
    std::fs::write(home.global_config(), r#"{"username": "me"}"#).unwrap();
    std::fs::write(home.work().join("opencode.json"), "{\"model\": }").unwrap();
    let output = home.opencode(&["debug", "config"]).output().unwrap();
    assert!(output.status.success());
    let err = stderr(&output);
    let broken = home.work().join("opencode.json");
    assert!(err.contains(&format!("warning: {}:1:11: expected value (skipped;", broken.display())), "{err}");
    assert!(stdout(&output).contains("\"username\": \"me\""));
}
