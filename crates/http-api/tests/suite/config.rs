//! `PATCH /config`: validated, merged into the project file, reloaded.

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::directory_query;
use super::start;

#[tokio::test]
async fn patch_config_merges_into_the_project_file_and_reloads() {
    let t = start().await;
    let project = t.git_project("configured");
    std::fs::write(
        project.join("opencode.json"),
        r#"{ "model": "a/b", "agent": { "build": { "temperature": 0.1 } }, "instructions": ["A.md"] }"#,
    )
    .unwrap();
    let query = directory_query(&project);
    assert_eq!(t.get(&format!("/config?{query}")).await.1["model"], "a/b");

    let patch = json!({ "model": "c/d", "agent": { "plan": { "temperature": 0.5 } }, "instructions": ["B.md"] });
    let (status, merged) = t.patch(&format!("/config?{query}"), patch).await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["model"], "c/d");
    assert_eq!(t.get(&format!("/config?{query}")).await.1["model"], "c/d");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(project.join("opencode.json")).unwrap()).unwrap();
    assert_eq!(file["agent"]["build"]["temperature"], 0.1);
    assert_eq!(file["agent"]["plan"]["temperature"], 0.5);
    assert_eq!(file["instructions"], json!(["A.md", "B.md"]));
    // The default instance (another directory) is not touched.
    assert_eq!(t.get("/config").await.1.get("model"), None);
}

#[tokio::test]
async fn patch_config_refuses_invalid_settings_and_writes_nothing() {
    let t = start().await;
    let original = r#"{ "model": "a/b" }"#;
    std::fs::write(t.dir.join("opencode.json"), original).unwrap();
    for bad in [json!({ "nope": 1 }), json!({ "model": 3 }), json!([1]), json!({ "share": "sometimes" })] {
        let (status, error) = t.patch("/config", bad.clone()).await;
        assert_eq!(status, 400, "{bad} -> {error}");
        assert_eq!(error["data"]["code"], "INVALID_INPUT");
    }
    assert_eq!(std::fs::read_to_string(t.dir.join("opencode.json")).unwrap(), original);
}

#[tokio::test]
async fn patch_config_creates_the_file_when_there_is_none() {
    let t = start().await;
    let (status, merged) = t.patch("/config", json!({ "username": "ada" })).await;
    assert_eq!(status, 200, "{merged}");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(t.dir.join("opencode.json")).unwrap()).unwrap();
    assert_eq!(file, json!({ "username": "ada" }));
}

#[tokio::test]
async fn patch_config_keeps_the_comments_and_layout_of_a_jsonc_file() {
    let t = start().await;
    let original = "{\n  // Our model, chosen with care.\n  \"model\": \"a/b\", /* keep */\n  \"agent\": {\n    \"build\": { \"temperature\": 0.1 }, // warm\n  },\n  \"instructions\": [\"A.md\"],\n}\n";
    std::fs::write(t.dir.join("opencode.jsonc"), original).unwrap();
    let patch = json!({ "model": "c/d", "agent": { "build": { "steps": 5 }, "plan": { "temperature": 0.5 } }, "username": "ada" });
    let (status, merged) = t.patch("/config", patch).await;
    assert_eq!(status, 200, "{merged}");
    assert_eq!(merged["model"], "c/d");
    assert_eq!(
        std::fs::read_to_string(t.dir.join("opencode.jsonc")).unwrap(),
        "{\n  // Our model, chosen with care.\n  \"model\": \"c/d\", /* keep */\n  \"agent\": {\n    \"build\": { \"temperature\": 0.1, \"steps\": 5 }, // warm\n    \"plan\": {\n      \"temperature\": 0.5\n    },\n  },\n  \"instructions\": [\"A.md\"],\n  \"username\": \"ada\",\n}\n"
    );
    assert!(!t.dir.join("opencode.json").exists());
}
