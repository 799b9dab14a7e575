//! The REST calls against a local stand-in for GitHub's API (as `GITHUB_API_URL` points Actions at
//! GitHub Enterprise Server): paths, bodies, the token, and errors in one line.

use std::sync::Arc;
use std::sync::Mutex;

use axum::Json;
use axum::Router;
use axum::extract::Path;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use axum::routing::get;
use axum::routing::patch;
use axum::routing::post;
use opencode_github::Github;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;

/// What the stand-in received: `METHOD path body`.
type Log = Arc<Mutex<Vec<String>>>;

fn record(log: &Log, headers: &HeaderMap, line: String) {
    assert_eq!(headers["authorization"], "Bearer ghs_token");
    log.lock().unwrap().push(line);
}

async fn serve() -> (String, Log) {
    let log: Log = Arc::default();
    let app = Router::new()
        .route(
            "/api/v3/repos/octo/repo/issues/{n}/comments",
            get(|Path(n): Path<u64>, State(log): State<Log>, headers: HeaderMap| async move {
                record(&log, &headers, format!("GET {n}"));
                Json(json!([{"id": 1, "user": {"login": "ana"}, "body": "It crashes on start."}]))
            })
            .post(
                |Path(n): Path<u64>, State(log): State<Log>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    record(&log, &headers, format!("POST {n} {}", body["body"].as_str().unwrap()));
                    (StatusCode::CREATED, Json(json!({"id": 77})))
                },
            ),
        )
        .route(
            "/api/v3/repos/octo/repo/issues/comments/{id}",
            patch(
                |Path(id): Path<u64>, State(log): State<Log>, headers: HeaderMap, Json(body): Json<Value>| async move {
                    record(&log, &headers, format!("PATCH {id} {}", body["body"].as_str().unwrap()));
                    Json(json!({"id": id}))
                },
            ),
        )
        .route(
            "/api/v3/repos/octo/repo/pulls/{n}/comments/{id}/replies",
            post(|Path((n, id)): Path<(u64, u64)>, State(log): State<Log>, headers: HeaderMap| async move {
                record(&log, &headers, format!("REPLY {n} {id}"));
                (StatusCode::CREATED, Json(json!({"id": 78})))
            }),
        )
        .with_state(Arc::clone(&log));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/api/v3", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, log)
}

#[tokio::test]
async fn comments_are_read_posted_updated_and_replied_to() {
    let (url, log) = serve().await;
    let github = Github::new(&format!("{url}/"), "octo/repo", "ghs_token");
    let comments = github.comments(5).await.unwrap();
    assert_eq!((comments[0].author.as_str(), comments[0].body.as_str()), ("ana", "It crashes on start."));
    assert_eq!(github.comment(5, "Working on it…").await.unwrap(), 77);
    github.update_comment(77, "Done.").await.unwrap();
    assert_eq!(github.reply_to_review_comment(6, 9, "On it.").await.unwrap(), 78);
    assert_eq!(*log.lock().unwrap(), ["GET 5", "POST 5 Working on it…", "PATCH 77 Done.", "REPLY 6 9"]);
}

#[tokio::test]
async fn a_refused_call_says_which_and_why_in_one_line() {
    let (url, _log) = serve().await;
    let github = Github::new(&url, "octo/missing", "ghs_token");
    let err = github.comment(5, "hello").await.unwrap_err();
    assert_eq!(err.to_string(), "GitHub POST /repos/octo/missing/issues/5/comments failed: 404 no message");
    assert!(err.hint().contains("GITHUB_REPOSITORY"), "{}", err.hint());
}
