//! `/experimental/tool/ids` and `/experimental/tool`.

use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::directory_query;
use super::runtime::start_runtime;

fn names(list: &Value, key: Option<&str>) -> Vec<String> {
    list.as_array().unwrap().iter().map(|item| key.map_or(item, |k| &item[k]).as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn tool_ids_and_schemas_are_the_sessions_built_in_tools() {
    let t = start_runtime(json!({})).await;
    let (status, ids) = t.get("/experimental/tool/ids").await;
    assert_eq!(status, 200);
    let ids = names(&ids, None);
    for expected in
        ["bash", "read", "glob", "grep", "edit", "write", "apply_patch", "webfetch", "todowrite", "question", "task"]
    {
        assert!(ids.iter().any(|id| id == expected), "{expected} missing from {ids:?}");
    }

    let (status, tools) = t.get("/experimental/tool?provider=anthropic&model=claude-sonnet-4-5").await;
    assert_eq!(status, 200);
    let bash = tools.as_array().unwrap().iter().find(|tool| tool["id"] == "bash").unwrap();
    assert!(!bash["description"].as_str().unwrap().is_empty());
    assert_eq!(bash["parameters"]["type"], "object");
    assert!(bash["parameters"]["properties"]["command"].is_object(), "{bash}");
    let task = tools.as_array().unwrap().iter().find(|tool| tool["id"] == "task").unwrap();
    assert!(task["parameters"]["properties"]["subagent_type"].is_object(), "{task}");
    // Every listed tool has an id, a description and a schema.
    assert!(
        tools.as_array().unwrap().iter().all(|tool| tool["parameters"].is_object() && tool["description"].is_string())
    );

    assert_eq!(t.get("/experimental/tool?provider=anthropic").await.0, 400);
    assert_eq!(t.get("/experimental/tool").await.0, 400);
}

#[tokio::test]
async fn tools_the_default_agent_may_not_use_are_not_listed() {
    let t = start_runtime(json!({})).await;
    let dir = t.dir.join("locked");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("opencode.json"), r#"{ "permission": { "bash": "deny", "webfetch": "deny" } }"#).unwrap();
    let q = directory_query(&dir.canonicalize().unwrap());
    let (_, tools) = t.get(&format!("/experimental/tool?provider=p&model=m&{q}")).await;
    let listed = names(&tools, Some("id"));
    assert!(!listed.iter().any(|id| id == "bash" || id == "webfetch"), "{listed:?}");
    assert!(listed.iter().any(|id| id == "read"), "{listed:?}");
    // The ids are every tool, whatever the agent.
    let (_, ids) = t.get(&format!("/experimental/tool/ids?{q}")).await;
    assert!(names(&ids, None).iter().any(|id| id == "bash"));
}
