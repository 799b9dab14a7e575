//! `PATCH /project/{projectID}`.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::directory_query;
use super::start;

#[tokio::test]
async fn a_project_update_merges_name_icon_and_commands_and_is_announced() {
    let t = start().await;
    let a = t.git_project("alpha");
    let (_, project) = t.get(&format!("/project/current?{}", directory_query(&a))).await;
    let id = project["id"].as_str().unwrap().to_owned();
    let mut events = super::events::Events::open(&t.http, &t.at("/event")).await;

    let (status, named) =
        t.patch(&format!("/project/{id}"), json!({ "name": "Alpha", "icon": { "color": "pink" } })).await;
    assert_eq!(status, 200, "{named}");
    assert_eq!((named["name"].clone(), named["icon"].clone()), (json!("Alpha"), json!({ "color": "pink" })));
    assert!(named["time"]["updated"].as_i64() >= project["time"]["updated"].as_i64());
    let announced = loop {
        let (_, event) = events.next().await;
        if event["type"] == "project.updated" {
            break event;
        }
    };
    assert_eq!(announced["properties"], named);

    // Absent fields stay; icon fields merge one by one; commands are replaced whole.
    let (_, again) = t
        .patch(
            &format!("/project/{id}"),
            json!({ "icon": { "url": "data:image/png;base64,AA==" }, "commands": { "start": "make" } }),
        )
        .await;
    assert_eq!(again["name"], "Alpha");
    assert_eq!(again["icon"], json!({ "color": "pink", "url": "data:image/png;base64,AA==" }));
    assert_eq!(again["commands"], json!({ "start": "make" }));
    let (_, listed) = t.get("/project").await;
    let stored = listed.as_array().unwrap().iter().find(|p| p["id"] == id.as_str()).unwrap();
    assert_eq!(stored, &again);
    let (_, current) = t.get(&format!("/project/current?{}", directory_query(&a))).await;
    assert_eq!(current, again, "the instance's project is read from the store, not its start-up copy");

    assert_eq!(t.patch("/project/nope", json!({ "name": "x" })).await.0, 404);
    assert_eq!(t.patch(&format!("/project/{id}"), json!({ "color": "red" })).await.0, 400);
    assert_eq!(t.patch(&format!("/project/{id}"), json!({ "icon": { "size": 3 } })).await.0, 400);
}
