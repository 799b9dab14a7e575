//! `/lsp`, `/formatter`, `/skill` and `/provider/auth`.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::directory_query;
use super::start;

fn skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: {description}\n---\n\nDo {name}.\n"))
        .unwrap();
}

#[tokio::test]
async fn no_language_server_or_formatter_runs() {
    let t = start().await;
    assert_eq!(t.get("/lsp").await, (200, json!([])));
    assert_eq!(t.get("/formatter").await, (200, json!([])));
}

#[tokio::test]
async fn skills_come_from_config_directories_and_external_folders() {
    let t = start().await;
    let project = t.git_project("proj");
    skill(&project.join(".opencode/skills/review"), "review", "Review code");
    skill(&project.join("sub/.claude/skills/deploy"), "deploy", "Deploy it");
    skill(&project.join(".agents/skills/lint"), "lint", "Lint it");
    let global = t.root.path().join("home/config/skill/notes");
    skill(&global, "notes", "Take notes");
    // A file without front matter is skipped, not an error.
    std::fs::create_dir_all(project.join(".opencode/skills/broken")).unwrap();
    std::fs::write(project.join(".opencode/skills/broken/SKILL.md"), "no front matter").unwrap();

    let sub = project.join("sub");
    let (status, skills) = t.get(&format!("/skill?{}", directory_query(&sub))).await;
    assert_eq!(status, 200);
    let mut names: Vec<&str> = skills.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(names, ["deploy", "lint", "notes", "review"]);
    let review = skills.as_array().unwrap().iter().find(|s| s["name"] == "review").unwrap();
    assert_eq!(
        review,
        &json!({
            "name": "review",
            "description": "Review code",
            "location": project.join(".opencode/skills/review/SKILL.md").to_string_lossy(),
            "content": "Do review.",
        })
    );

    // From the project root, the subdirectory's `.claude` folder is not on the way up.
    let (_, at_root) = t.get(&format!("/skill?{}", directory_query(&project))).await;
    assert!(at_root.as_array().unwrap().iter().all(|s| s["name"] != "deploy"), "{at_root}");
    // Another directory sees only the global skill.
    assert_eq!(
        t.get("/skill").await.1.as_array().unwrap().iter().map(|s| s["name"].clone()).collect::<Vec<Value>>(),
        [json!("notes")]
    );
}

#[tokio::test]
async fn provider_auth_offers_an_api_key_for_providers_reached_by_key() {
    let t = start().await;
    let (status, methods) = t.get("/provider/auth").await;
    assert_eq!(status, 200);
    let api = json!([{ "type": "api", "label": "API key" }]);
    assert_eq!(methods["anthropic"], api);
    assert_eq!(methods["openai"], api);
    assert!(methods.get("github-copilot").is_none() && methods.get("amazon-bedrock").is_none(), "{methods}");
    assert!(methods.as_object().unwrap().values().all(|m| *m == api));

    // Disabled providers are not offered.
    let other = t.root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("opencode.json"), r#"{ "disabled_providers": ["anthropic"] }"#).unwrap();
    let (_, methods) = t.get(&format!("/provider/auth?{}", directory_query(&other.canonicalize().unwrap()))).await;
    assert!(methods.get("anthropic").is_none() && methods.get("openai").is_some(), "{methods}");
}
