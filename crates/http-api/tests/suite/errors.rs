use pretty_assertions::assert_eq;
use serde_json::json;

use super::send;
use super::start;
use super::start_with;

#[tokio::test]
async fn bad_input_is_400_with_a_json_body() {
    let t = start().await;
    let malformed = t.http.post(t.at("/session")).header("content-type", "application/json").body("{not json");
    let (status, body) = send(malformed).await;
    assert_eq!(
        (status, body["name"].as_str(), body["data"]["code"].as_str()),
        (400, Some("BadRequest"), Some("INVALID_INPUT"))
    );

    let (status, _) = t.post("/session", json!({ "title": 42 })).await;
    assert_eq!(status, 400);
    let (status, _) = t.post("/session", json!({ "unknown": true })).await;
    assert_eq!(status, 400);
    let (status, body) = t.get("/session/not-a-session").await;
    assert_eq!((status, body["data"]["code"].as_str()), (400, Some("INVALID_INPUT")));
    let (status, _) = t.get("/session?roots=maybe").await;
    assert_eq!(status, 400);
    let (status, _) = t.get("/session?directory=relative/path").await;
    assert_eq!(status, 400);

    let (_, session) = t.post("/session", json!({})).await;
    let id = session["id"].as_str().unwrap();
    let (status, _) = t.post(&format!("/session/{id}/message"), json!({ "parts": [] })).await;
    assert_eq!(status, 400);
    let (status, _) = t.post(&format!("/session/{id}/message"), json!({ "parts": [{ "type": "bogus" }] })).await;
    assert_eq!(status, 400);
    let (status, _) = t.post(&format!("/session/{id}/revert"), json!({ "messageID": "msg_0000000000000000" })).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn unknown_routes_and_ids_are_404() {
    let t = start().await;
    // Under the API's own prefixes; other GET paths are the web UI's (tests/suite/web.rs).
    for path in ["/global/no/such/route", "/session/ses_ffffffffffff00000000000000/no/such"] {
        let (status, body) = t.get(path).await;
        assert_eq!((status, body["data"]["code"].as_str()), (404, Some("NOT_FOUND")), "{path}");
    }
    let (status, body) = t.post("/no/such/route", json!({})).await;
    assert_eq!((status, body["data"]["code"].as_str()), (404, Some("NOT_FOUND")));
    let (status, _) = t.get("/session/ses_ffffffffffff00000000000000/message").await;
    assert_eq!(status, 404);
    let (status, _) = t
        .post("/session/ses_ffffffffffff00000000000000/message", json!({ "parts": [{ "type": "text", "text": "x" }] }))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn oversized_bodies_are_413() {
    let t = start_with(opencode_http_api::ServerOptions { port: 0, body_limit: 1024, ..Default::default() }).await;
    let big = "x".repeat(4096);
    let (status, body) = t.post("/session", json!({ "title": big })).await;
    assert_eq!((status, body["data"]["code"].as_str()), (413, Some("PAYLOAD_TOO_LARGE")));
}

#[tokio::test]
async fn a_taken_port_is_reported_clearly() {
    let t = start().await;
    let port = t.server.local_addr().port();
    let root = tempfile::tempdir().unwrap();
    let paths = opencode_config::Paths::under(root.path());
    std::fs::create_dir_all(&paths.data).unwrap();
    let store = std::sync::Arc::new(opencode_session_store::Store::open(paths.database()).unwrap());
    let context = opencode_http_api::ServerContext::new(
        store,
        std::sync::Arc::new(opencode_http_api::UnavailableDriver),
        opencode_config::Env::default(),
        paths,
        root.path().to_path_buf(),
    );
    let options = opencode_http_api::ServerOptions { port, ..Default::default() };
    let Err(error) = opencode_http_api::serve(options, context).await else { panic!("the port was free") };
    assert!(matches!(error, opencode_http_api::ServeError::PortInUse { .. }), "{error}");
    assert!(error.to_string().contains("already in use"), "{error}");
}

#[tokio::test]
async fn prompts_without_a_runtime_are_503() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let root = tempfile::tempdir().unwrap();
    let paths = opencode_config::Paths::under(root.path());
    std::fs::create_dir_all(&paths.data).unwrap();
    let store = std::sync::Arc::new(opencode_session_store::Store::open(paths.database()).unwrap());
    let context = opencode_http_api::ServerContext::new(
        store,
        std::sync::Arc::new(opencode_http_api::UnavailableDriver),
        opencode_config::Env::default(),
        paths,
        root.path().to_path_buf(),
    );
    let server = opencode_http_api::serve(opencode_http_api::ServerOptions { port: 0, ..Default::default() }, context)
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let (_, session) = send(http.post(format!("{}/session", server.url())).json(&json!({}))).await;
    let id = session["id"].as_str().unwrap();
    let prompt = json!({ "parts": [{ "type": "text", "text": "x" }] });
    let (status, body) = send(http.post(format!("{}/session/{id}/message", server.url())).json(&prompt)).await;
    assert_eq!((status, body["data"]["code"].as_str()), (503, Some("UNAVAILABLE")));
    server.shutdown().await.unwrap();
}
