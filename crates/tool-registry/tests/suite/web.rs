//! webfetch against a local HTTP server; websearch through a fake backend.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use futures_util::future::BoxFuture;
use opencode_config::PermissionAction;
use opencode_tool_registry::PendingEvent;
use opencode_tool_registry::PendingKind;
use opencode_tool_registry::Reply;
use opencode_tool_registry::Rule;
use opencode_tool_registry::Settlement;
use opencode_tool_registry::SettlementStatus;
use opencode_tool_registry::ToolCall;
use opencode_tool_registry::tools::webfetch::MAX_RESPONSE_BYTES;
use opencode_tool_registry::tools::webfetch::WebFetch;
use opencode_tool_registry::tools::websearch;
use opencode_tool_registry::tools::websearch::SearchBackend;
use opencode_tool_registry::tools::websearch::SearchQuery;
use opencode_tool_registry::tools::websearch::SearchResult;
use opencode_tool_registry::typed;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::Env;

const PAGE: &str = "<!doctype html><html><head><title>Docs</title><style>body{color:red}</style>\
    <script>var secret = 1;</script></head><body><h1>Hello &amp; welcome</h1>\
    <p>Read the <a href=\"https://example.com/guide\">guide</a> first.</p>\
    <ul><li>one</li><li>two</li></ul><pre><code>let x = 1;</code></pre></body></html>";

/// A PNG signature and a little more: enough for a media type check.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

async fn serve() -> String {
    let app = Router::new()
        .route("/page", get(|| async { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE) }))
        .route("/notes.txt", get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "<b>not html</b>\nline 2") }))
        .route("/missing", get(|| async { (StatusCode::NOT_FOUND, "no such page") }))
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "too late"
            }),
        )
        .route("/image.png", get(|| async { ([(header::CONTENT_TYPE, "image/png")], PNG) }))
        .route("/blob", get(|| async { ([(header::CONTENT_TYPE, "application/octet-stream")], vec![0u8, 1, 2, 0, 3]) }))
        .route("/huge", get(huge));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// 8 MiB of text in 64 KiB chunks, streamed without a length.
async fn huge() -> impl IntoResponse {
    let chunk = format!("{}\n", "x".repeat(64 * 1024 - 1));
    let chunks = (0..128).map(move |_| Ok::<_, std::io::Error>(chunk.clone()));
    ([(header::CONTENT_TYPE, "text/plain")], Body::from_stream(futures_util::stream::iter(chunks)))
}

fn env_with_webfetch() -> Env {
    let env = Env::new();
    env.registry.register(typed(WebFetch::new().unwrap())).unwrap();
    env
}

async fn fetch(env: &Env, input: serde_json::Value) -> Settlement {
    let call = ToolCall { call_id: "c".into(), name: "webfetch".into(), input };
    env.registry.execute(&call, &env.ctx("build")).await.unwrap()
}

#[tokio::test]
async fn html_becomes_markdown_by_default() {
    let (env, base) = (env_with_webfetch(), serve().await);
    let done = fetch(&env, json!({"url": format!("{base}/page")})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert!(done.text.contains("# Hello & welcome"), "{}", done.text);
    assert!(done.text.contains("[guide](https://example.com/guide)"), "{}", done.text);
    assert!(done.text.contains("- one\n- two"), "{}", done.text);
    assert!(done.text.contains("```\nlet x = 1;\n```"), "{}", done.text);
    assert!(!done.text.contains("secret") && !done.text.contains("color:red"), "{}", done.text);
    assert_eq!(done.title.as_deref(), Some(format!("{base}/page (text/html; charset=utf-8)").as_str()));
    assert_eq!(done.metadata["status"], 200);
}

#[tokio::test]
async fn text_strips_tags_and_html_is_raw() {
    let (env, base) = (env_with_webfetch(), serve().await);
    let text = fetch(&env, json!({"url": format!("{base}/page"), "format": "text"})).await;
    assert_eq!(text.text, "Hello & welcome\nRead the guide first.\none\ntwo\nlet x = 1;");
    let html = fetch(&env, json!({"url": format!("{base}/page"), "format": "html"})).await;
    assert_eq!(html.text, PAGE);
    let plain = fetch(&env, json!({"url": format!("{base}/notes.txt")})).await;
    assert_eq!(plain.text, "<b>not html</b>\nline 2", "non-HTML text is returned as is");
}

#[tokio::test]
async fn the_body_is_read_up_to_five_mebibytes() {
    let (env, base) = (env_with_webfetch(), serve().await);
    let done = fetch(&env, json!({"url": format!("{base}/huge")})).await;
    assert_eq!(done.status, SettlementStatus::Completed, "{}", done.text);
    assert_eq!(done.metadata["bytes"], MAX_RESPONSE_BYTES);
    assert_eq!(done.metadata["responseTruncated"], true);
    assert!(done.text.ends_with("only the first 5 MiB were read.]"), "the note survives bounding (tail kept)");
    assert!(done.truncated && done.managed_path.is_some(), "the registry still bounds what the model sees");
    let full = std::fs::read_to_string(done.managed_path.unwrap()).unwrap();
    assert_eq!(full.lines().filter(|line| line.len() == 64 * 1024 - 1).count(), 80, "5 MiB of whole lines kept");
    assert!(full.ends_with("only the first 5 MiB were read.]"));
}

#[tokio::test]
async fn failures_are_results_the_model_can_correct() {
    let (env, base) = (env_with_webfetch(), serve().await);
    let missing = fetch(&env, json!({"url": format!("{base}/missing")})).await;
    assert_eq!(missing.status, SettlementStatus::Error);
    assert_eq!(missing.text, format!("Request to {base}/missing failed with status code: 404 Not Found"));
    let slow = fetch(&env, json!({"url": format!("{base}/slow"), "timeout": 1})).await;
    assert_eq!(slow.status, SettlementStatus::Error);
    assert_eq!(slow.text, format!("Request to {base}/slow timed out after 1 s"));
    let scheme = fetch(&env, json!({"url": "file:///etc/passwd"})).await;
    assert_eq!(scheme.text, "URL must start with http:// or https://: file:///etc/passwd");
    let bad = fetch(&env, json!({"url": "http://exa mple.com/"})).await;
    assert!(bad.text.starts_with("Invalid URL http://exa mple.com/: "), "{}", bad.text);
    let binary = fetch(&env, json!({"url": format!("{base}/blob")})).await;
    assert!(binary.text.contains("is binary (application/octet-stream)"), "{}", binary.text);
    let refused = fetch(&env, json!({"url": "http://127.0.0.1:1/"})).await;
    assert_eq!(refused.status, SettlementStatus::Error);
    assert!(refused.text.starts_with("Cannot fetch http://127.0.0.1:1/: "), "{}", refused.text);
    let format = fetch(&env, json!({"url": format!("{base}/page"), "format": "pdf"})).await;
    assert!(format.text.contains("unknown variant `pdf`"), "{}", format.text);
}

#[tokio::test]
async fn images_come_back_as_media() {
    let (env, base) = (env_with_webfetch(), serve().await);
    let done = fetch(&env, json!({"url": format!("{base}/image.png")})).await;
    assert_eq!(done.text, "Image fetched successfully");
    assert_eq!(done.media.len(), 1);
    assert_eq!(done.media[0].media_type, "image/png");
    let base64 = done.media[0].data.inline_base64().unwrap();
    assert!(base64.starts_with("iVBORw0KGgo"), "{base64}");
}

#[tokio::test]
async fn webfetch_asks_permission_with_the_url() {
    let (env, base) = (env_with_webfetch(), serve().await);
    let url = format!("{base}/notes.txt");
    let mut agent = (*env.agent("build")).clone();
    agent.permission.push(Rule::new("webfetch", "*", PermissionAction::Ask));
    let mut events = env.permissions.subscribe();
    let permissions = Arc::clone(&env.permissions);
    let answerer = tokio::spawn(async move {
        let mut patterns = Vec::new();
        loop {
            let PendingEvent::Asked(request) = events.recv().await.unwrap() else { continue };
            let PendingKind::Permission(ask) = request.kind else { continue };
            patterns.push((ask.permission, ask.patterns));
            let reply = if patterns.len() == 1 { Reply::Once } else { Reply::Reject { message: None } };
            permissions.reply(&request.id, reply).unwrap();
            if patterns.len() == 2 {
                return patterns;
            }
        }
    });
    let call = ToolCall { call_id: "c".into(), name: "webfetch".into(), input: json!({"url": url}) };
    let allowed = env.registry.execute(&call, &env.ctx_with(Arc::new(agent.clone()))).await.unwrap();
    assert_eq!(allowed.status, SettlementStatus::Completed);
    let rejected = env.registry.execute(&call, &env.ctx_with(Arc::new(agent.clone()))).await.unwrap();
    assert_eq!(rejected.status, SettlementStatus::Declined);
    assert!(rejected.text.contains("rejected permission"), "{}", rejected.text);
    let asked = answerer.await.unwrap();
    assert_eq!(asked, vec![("webfetch".to_owned(), vec![url.clone()]), ("webfetch".to_owned(), vec![url.clone()])]);
    agent.permission.push(Rule::new("webfetch", format!("{base}/*"), PermissionAction::Deny));
    let call = ToolCall { input: json!({"url": url, "format": "text"}), ..call };
    let denied = env.registry.execute(&call, &env.ctx_with(Arc::new(agent))).await.unwrap();
    assert!(denied.text.contains("prevents you from using this specific tool call"), "{}", denied.text);
}

/// Answers every query with numbered fake hits, or fails on `fail`.
struct FakeSearch;

impl SearchBackend for FakeSearch {
    fn name(&self) -> &str {
        "fake"
    }

    fn search<'a>(
        &'a self,
        query: SearchQuery,
        _cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<SearchResult>, String>> {
        Box::pin(async move {
            if query.query == "fail" {
                return Err("quota exceeded".to_owned());
            }
            Ok((1..=30)
                .map(|n| SearchResult {
                    title: format!("{} #{n}", query.query),
                    url: format!("https://example.com/{n}"),
                    snippet: format!("snippet\n  number {n}"),
                })
                .collect())
        })
    }
}

fn search_call(input: serde_json::Value) -> ToolCall {
    ToolCall { call_id: "c".into(), name: "websearch".into(), input }
}

#[tokio::test]
async fn websearch_is_offered_only_with_a_backend() {
    let env = Env::new();
    assert_eq!(websearch::register(&env.registry, None).unwrap(), None);
    let names: Vec<String> = env.registry.definitions(&env.agent("build")).into_iter().map(|d| d.name).collect();
    assert!(!names.contains(&"websearch".to_owned()), "{names:?}");
    let reason = env.registry.unavailable_reason("websearch").unwrap();
    assert!(reason.starts_with("no web search backend configured: "), "{reason}");
    let called = env.registry.execute(&search_call(json!({"query": "rust"})), &env.ctx("build")).await.unwrap();
    assert_eq!(called.status, SettlementStatus::Error);
    assert!(called.text.contains(&format!("'websearch' ({reason})")), "{}", called.text);

    assert!(websearch::register(&env.registry, Some(Arc::new(FakeSearch))).unwrap().is_some());
    assert_eq!(env.registry.unavailable_reason("websearch"), None);
    let offered = env.registry.definitions(&env.agent("explore"));
    let definition = offered.iter().find(|d| d.name == "websearch").unwrap();
    assert_eq!(definition.input_schema["required"], json!(["query"]));
}

#[tokio::test]
async fn websearch_formats_backend_results_and_errors() {
    let env = Env::new();
    websearch::register(&env.registry, Some(Arc::new(FakeSearch))).unwrap();
    let ctx = env.ctx("build");
    let two = env.registry.execute(&search_call(json!({"query": "tokio", "numResults": 2})), &ctx).await.unwrap();
    assert_eq!(
        two.text,
        "Search results for \"tokio\" (2 from fake):\n\n1. tokio #1\n   https://example.com/1\n   snippet number 1\n\
         \n2. tokio #2\n   https://example.com/2\n   snippet number 2\n"
    );
    assert_eq!(two.structured.as_ref().unwrap()["results"][1]["url"], "https://example.com/2");
    let default = env.registry.execute(&search_call(json!({"query": "axum"})), &ctx).await.unwrap();
    assert_eq!(default.structured.unwrap()["results"].as_array().unwrap().len(), websearch::DEFAULT_RESULTS);
    let capped = env.registry.execute(&search_call(json!({"query": "serde", "numResults": 99})), &ctx).await.unwrap();
    assert_eq!(capped.structured.unwrap()["results"].as_array().unwrap().len(), websearch::MAX_RESULTS);
    let failed = env.registry.execute(&search_call(json!({"query": "fail"})), &ctx).await.unwrap();
    assert_eq!(failed.status, SettlementStatus::Error);
    assert_eq!(failed.text, "Web search failed (fake): quota exceeded");
    let empty = env.registry.execute(&search_call(json!({"query": "  "})), &ctx).await.unwrap();
    assert_eq!(empty.text, "The search query is empty; say what to search for");
    let mut agent = (*env.agent("build")).clone();
    agent.permission.push(Rule::new("websearch", "*secret*", PermissionAction::Deny));
    let denied =
        env.registry.execute(&search_call(json!({"query": "my secret key"})), &env.ctx_with(Arc::new(agent))).await;
    assert!(denied.unwrap().text.contains("prevents you from using this specific tool call"));
}
