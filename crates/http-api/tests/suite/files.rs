use pretty_assertions::assert_eq;
use serde_json::json;

use super::start;

#[tokio::test]
async fn files_are_listed_read_and_found_inside_the_instance_only() {
    let t = start().await;
    std::fs::create_dir_all(t.dir.join("src")).unwrap();
    std::fs::write(t.dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(t.dir.join("logo.png"), [0x89, b'P', b'N', b'G', 0, 1]).unwrap();

    let (status, listing) = t.get("/file?path=").await;
    assert_eq!(status, 200);
    let names: Vec<(&str, &str)> = listing
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["name"].as_str().unwrap(), n["type"].as_str().unwrap()))
        .collect();
    assert_eq!(names, vec![("src", "directory"), ("logo.png", "file")]);
    assert_eq!(listing[0]["absolute"], t.dir.join("src").to_string_lossy().as_ref());

    assert_eq!(
        t.get("/file/content?path=src/main.rs").await,
        (200, json!({ "type": "text", "content": "fn main() {}\n" }))
    );
    let (_, binary) = t.get("/file/content?path=logo.png").await;
    assert_eq!((binary["type"].as_str(), binary["encoding"].as_str()), (Some("binary"), Some("base64")));
    assert_eq!(binary["mimeType"], "image/png");

    assert_eq!(t.get("/find/file?query=main").await, (200, json!(["src/main.rs"])));
    assert_eq!(t.get("/find/file?query=src&type=directory").await, (200, json!(["src/"])));
    assert_eq!(t.get("/find/file?query=x&limit=500").await.0, 400);

    assert_eq!(t.get("/file/content?path=../home/data/opencode-rs.db").await.0, 400);
    assert_eq!(t.get("/file/content?path=/etc/passwd").await.0, 400);
    assert_eq!(t.get("/file/content?path=missing.txt").await.0, 404);
}

#[tokio::test]
async fn path_config_agents_and_providers_describe_the_instance() {
    let t = start().await;
    std::fs::write(t.dir.join("opencode.json"), r#"{"model": "anthropic/claude-sonnet-4-5", "agent": {"review": {"description": "Reviews", "mode": "subagent"}}}"#).unwrap();
    let (status, path) = t.get("/path").await;
    assert_eq!((status, path["directory"].as_str()), (200, Some(t.dir.to_string_lossy().as_ref())));
    let (status, config) = t.get("/config").await;
    assert_eq!((status, config["model"].as_str()), (200, Some("anthropic/claude-sonnet-4-5")));
    let (_, agents) = t.get("/agent").await;
    let review = agents.as_array().unwrap().iter().find(|a| a["name"] == "review").unwrap();
    assert_eq!((review["mode"].as_str(), review["native"].as_bool()), (Some("subagent"), Some(false)));

    let (status, providers) = t.get("/provider").await;
    assert_eq!(status, 200);
    let anthropic = providers["all"].as_array().unwrap().iter().find(|p| p["id"] == "anthropic").unwrap();
    let model = &anthropic["models"]["claude-sonnet-4-5"];
    assert_eq!(model["providerID"], "anthropic");
    assert_eq!(model["capabilities"]["toolcall"], true);
    // A reasoning model's variants, for the pickers: name -> the options they add.
    let variants = model["variants"].as_object().unwrap();
    assert!(variants.contains_key("high") && variants["high"].is_object(), "{variants:?}");
    assert_eq!(anthropic["models"]["claude-3-haiku-20240307"]["variants"], json!({}));
    assert_eq!(providers["default"]["anthropic"], "claude-sonnet-4-5");
    assert_eq!(providers["connected"], json!([]));
    let (status, configured) = t.get("/config/providers").await;
    assert_eq!((status, configured["providers"].clone()), (200, json!([])));
}
