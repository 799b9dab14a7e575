//! The OpenAPI document lists every route, and the committed `openapi.json` matches the code
//! (regenerate with `OPENCODE_UPDATE_OPENAPI=1 cargo test -p opencode-http-api`).

use pretty_assertions::assert_eq;

use super::start;

#[tokio::test]
async fn the_document_is_served_at_doc_and_lists_the_routes() {
    let t = start().await;
    let (status, doc) = t.get("/doc").await;
    assert_eq!(status, 200);
    assert_eq!(doc, opencode_http_api::openapi_document());
    for (path, method, id) in [
        ("/global/health", "get", "global.health"),
        ("/session", "post", "session.create"),
        ("/session/{sessionID}/message", "post", "session.prompt"),
        ("/event", "get", "event.subscribe"),
        ("/project/{projectID}/session", "get", "project.session.list"),
        ("/api/session/{sessionID}/prompt", "post", "v2.session.prompt"),
    ] {
        assert_eq!(doc["paths"][path][method]["operationId"], id, "{method} {path}");
    }
    assert!(doc["components"]["schemas"]["PromptRequest"].is_object());
}

#[test]
fn the_committed_document_matches_the_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let generated = format!("{:#}\n", opencode_http_api::openapi_document());
    if std::env::var_os("OPENCODE_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "openapi.json is stale: run OPENCODE_UPDATE_OPENAPI=1 cargo test -p opencode-http-api"
    );
}
