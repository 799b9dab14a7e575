use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

use super::directory_query;
use super::send;
use super::start;

fn ids(list: &Value) -> Vec<String> {
    list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn two_projects_list_only_their_own_sessions() {
    let t = start().await;
    let (a, b) = (t.git_project("alpha"), t.git_project("beta"));
    let (qa, qb) = (directory_query(&a), directory_query(&b));
    let (_, in_a) = t.post(&format!("/session?{qa}"), json!({ "title": "a" })).await;
    let (_, in_b) = t.post(&format!("/session?{qb}"), json!({ "title": "b" })).await;
    assert_ne!(in_a["projectID"], in_b["projectID"]);
    assert_eq!(in_a["directory"], a.to_string_lossy().as_ref());

    assert_eq!(ids(&t.get(&format!("/session?{qa}")).await.1), vec![in_a["id"].as_str().unwrap()]);
    // The header works like the query parameter.
    let by_header = t.http.get(t.at("/session")).header("x-opencode-directory", b.to_string_lossy().as_ref());
    assert_eq!(ids(&send(by_header).await.1), vec![in_b["id"].as_str().unwrap()]);

    let (_, current) = t.get(&format!("/project/current?{qa}")).await;
    assert_eq!(current["id"], in_a["projectID"]);
    assert_eq!(current["worktree"], a.to_string_lossy().as_ref());
    // OpenCode's TUI lists the sessions of the project's main directory without a label.
    let pid = current["id"].as_str().unwrap();
    let (status, directories) = t.get(&format!("/project/{pid}/directories")).await;
    assert_eq!((status, directories), (200, json!([{ "directory": a.to_string_lossy() }])));
    assert_eq!(t.get("/project/nope/directories").await.0, 404);
    std::fs::create_dir(a.join("src")).unwrap();
    let (_, below) = t.post(&format!("/session?{}", directory_query(&a.join("src"))), json!({})).await;
    assert_eq!((in_a["path"].as_str(), below["path"].as_str()), (Some(""), Some("src")));
    let (_, projects) = t.get("/project").await;
    let mut listed = ids(&projects);
    listed.sort();
    let mut expected =
        vec![in_a["projectID"].as_str().unwrap().to_owned(), in_b["projectID"].as_str().unwrap().to_owned()];
    expected.sort();
    assert_eq!(listed, expected);
}

#[tokio::test]
async fn the_project_scoped_api_serves_the_same_sessions() {
    let t = start().await;
    let (a, b) = (t.git_project("alpha"), t.git_project("beta"));
    let (_, pa) = t.get(&format!("/project/current?{}", directory_query(&a))).await;
    let (_, pb) = t.get(&format!("/project/current?{}", directory_query(&b))).await;
    let (pa, pb) = (pa["id"].as_str().unwrap(), pb["id"].as_str().unwrap());

    let (status, created) = t.post(&format!("/project/{pa}/session"), json!({ "title": "scoped" })).await;
    assert_eq!((status, created["directory"].as_str()), (200, Some(a.to_string_lossy().as_ref())));
    let sid = created["id"].as_str().unwrap();
    assert_eq!(ids(&t.get(&format!("/project/{pa}/session")).await.1), vec![sid]);
    assert_eq!(ids(&t.get(&format!("/project/{pb}/session")).await.1), Vec::<String>::new());

    assert_eq!(t.get(&format!("/project/{pa}/session/{sid}")).await, (200, created.clone()));
    assert_eq!(t.get(&format!("/project/{pb}/session/{sid}")).await.0, 404);
    assert_eq!(t.get("/project/nope/session").await.0, 404);

    let (status, reply) = t
        .post(&format!("/project/{pa}/session/{sid}/message"), json!({ "parts": [{ "type": "text", "text": "hi" }] }))
        .await;
    assert_eq!((status, reply["info"]["role"].as_str()), (200, Some("assistant")));
    let (_, messages) = t.get(&format!("/project/{pa}/session/{sid}/message")).await;
    assert_eq!(messages.as_array().unwrap().len(), 2);
    let (status, found) = t.get(&format!("/project/{pa}/session/{sid}/find/file?query=readme")).await;
    assert_eq!((status, found), (200, json!(["README.md"])));
    let (status, agents) = t.get(&format!("/project/{pa}/agent?{}", directory_query(&a))).await;
    assert_eq!(status, 200);
    assert!(agents.as_array().unwrap().iter().any(|agent| agent["name"] == "build"));

    assert_eq!(t.delete(&format!("/project/{pa}/session/{sid}")).await, (200, json!(true)));
    assert_eq!(t.get(&format!("/session/{sid}")).await.0, 404);
}
