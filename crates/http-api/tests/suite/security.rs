//! What a web page can make a default local server do, over real HTTP: DNS rebinding (a foreign
//! `Host`), cross-site requests (a foreign `Origin`, bodies that are not JSON), preflights; what the
//! server's own pages, configured origins and hosts may do; configuration changes that the config
//! forbids; the private server a front end starts for itself.

use opencode_http_api::ServerOptions;
use pretty_assertions::assert_eq;
use reqwest::header;
use serde_json::Value;
use serde_json::json;

use super::runtime::start_runtime;
use super::send;
use super::start;
use super::start_with;

const EVIL: &str = "http://attacker.example";

fn port(url: &str) -> &str {
    url.rsplit(':').next().unwrap()
}

#[tokio::test]
async fn a_rebinding_request_is_refused_before_routing() {
    let t = start_runtime(json!({})).await;
    let host = format!("attacker.example:{}", port(&t.url));
    let origin = format!("http://{host}");
    let add = json!({"name": "pwn", "config": {"type": "local", "command": ["sh", "-c", "touch pwned"]}});
    let (status, body) =
        send(t.http.post(t.at("/mcp")).header(header::HOST, &host).header(header::ORIGIN, &origin).json(&add)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["data"]["code"], "FORBIDDEN");
    assert!(body["data"]["message"].as_str().unwrap().contains("host `attacker.example` is not allowed"));
    // Reads too: the page would be same-origin with the server and could read them.
    let (status, _) = send(t.http.get(t.at("/session")).header(header::HOST, &host)).await;
    assert_eq!(status, 403);
    assert_eq!(t.get("/mcp").await, (200, json!({})), "no MCP server was added");
    assert!(!t.dir.join("pwned").exists());
}

#[tokio::test]
async fn a_cross_site_simple_post_changes_nothing() {
    let t = start().await;
    for (origin, content_type) in [(Some(EVIL), "text/plain"), (None, "text/plain"), (None, "")] {
        let mut request = t.http.post(t.at("/session")).body("{}");
        if let Some(origin) = origin {
            request = request.header(header::ORIGIN, origin);
        }
        if !content_type.is_empty() {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let (status, body) = send(request).await;
        let expected = if origin.is_some() { 403 } else { 415 };
        assert_eq!(status, expected, "{origin:?} {content_type:?}: {body}");
    }
    let (status, body) =
        send(t.http.post(t.at("/project/init")).header(header::CONTENT_TYPE, "text/plain").body("{}")).await;
    assert_eq!(status, 415, "{body}");
    // A JSON body from a foreign page is refused for its origin.
    let (status, _) = send(t.http.post(t.at("/session")).header(header::ORIGIN, EVIL).json(&json!({}))).await;
    assert_eq!(status, 403);
    assert_eq!(t.get("/session").await, (200, json!([])), "no session was created");
}

#[tokio::test]
async fn a_foreign_preflight_gets_no_cors_headers() {
    let t = start().await;
    let response = t
        .http
        .request(reqwest::Method::OPTIONS, t.at("/session"))
        .header(header::ORIGIN, EVIL)
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .send()
        .await
        .unwrap();
    assert!(response.headers().get(header::ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    assert!(response.headers().get(header::ACCESS_CONTROL_ALLOW_METHODS).is_none());
}

#[tokio::test]
async fn a_foreign_page_cannot_open_a_terminal_socket() {
    let t = start().await;
    let (status, body) = send(
        t.http
            .get(t.at("/pty/pty_x/connect"))
            .header(header::ORIGIN, EVIL)
            .header(header::UPGRADE, "websocket")
            .header(header::CONNECTION, "upgrade")
            .header(header::SEC_WEBSOCKET_VERSION, "13")
            .header(header::SEC_WEBSOCKET_KEY, "dGhlIHNhbXBsZSBub25jZQ=="),
    )
    .await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn the_servers_own_pages_may_change_state() {
    let t = start().await;
    let (status, body) = send(t.http.post(t.at("/session")).header(header::ORIGIN, &t.url).json(&json!({}))).await;
    assert_eq!(status, 200, "{body}");
    let localhost = format!("localhost:{}", port(&t.url));
    let (status, body) = send(
        t.http
            .post(t.at("/session"))
            .header(header::HOST, &localhost)
            .header(header::ORIGIN, format!("http://{localhost}"))
            .json(&json!({})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_configured_origin_gets_cors_and_may_post() {
    let app = "https://app.example";
    let t = start_with(ServerOptions { port: 0, cors: vec![app.into()], ..ServerOptions::default() }).await;
    let response = t.http.post(t.at("/session")).header(header::ORIGIN, app).json(&json!({})).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], app);
    let preflight = t
        .http
        .request(reqwest::Method::OPTIONS, t.at("/session"))
        .header(header::ORIGIN, app)
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.headers()[header::ACCESS_CONTROL_ALLOW_ORIGIN], app);
    // Another local web app is a foreign origin unless configured.
    let (status, _) =
        send(t.http.post(t.at("/session")).header(header::ORIGIN, "http://localhost:3000").json(&json!({}))).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn an_allowed_host_name_is_served() {
    let options = ServerOptions { port: 0, allowed_hosts: vec!["box.lan".into()], ..ServerOptions::default() };
    let t = start_with(options).await;
    let (status, body) =
        send(t.http.get(t.at("/global/health")).header(header::HOST, format!("box.lan:{}", port(&t.url)))).await;
    assert_eq!((status, body["healthy"].clone()), (200, json!(true)));
    let (status, _) = send(t.http.get(t.at("/global/health")).header(header::HOST, "box.lan.evil")).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn configuration_changes_can_be_refused_by_config() {
    let t = start_with(ServerOptions { port: 0, allow_config_changes: false, ..ServerOptions::default() }).await;
    std::fs::write(t.dir.join("opencode.json"), r#"{"model":"a/b"}"#).unwrap();
    let (status, body) = t.patch("/config", json!({"model": "c/d"})).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["data"]["message"].as_str().unwrap().contains("server.allow_config_changes"));
    assert_eq!(std::fs::read_to_string(t.dir.join("opencode.json")).unwrap(), r#"{"model":"a/b"}"#);
    assert_eq!(t.patch("/global/config", json!({"model": "c/d"})).await.0, 403);
    let add = json!({"name": "x", "config": {"type": "local", "command": ["true"]}});
    assert_eq!(t.post("/mcp", add).await.0, 403);
}

#[test]
fn the_configs_server_section_sets_the_options() {
    let env = opencode_config::Env::from_pairs([("OPENCODE_SERVER_PASSWORD", "pw")]);
    let server: opencode_config::ServerConfig = serde_json::from_value(json!({
        "port": 4097, "cors": ["https://app.example"], "allowed_hosts": ["box.lan"], "allow_config_changes": false
    }))
    .unwrap();
    let options = ServerOptions::configured(&env, Some(&server));
    assert_eq!(options.port, 4097);
    assert_eq!(options.cors, vec!["https://app.example".to_owned()]);
    assert_eq!(options.allowed_hosts, vec!["box.lan".to_owned()]);
    assert!(!options.allow_config_changes);
    assert!(options.credentials.is_some());
    assert!(ServerOptions::configured(&env, None).allow_config_changes);
}

#[tokio::test]
async fn a_private_server_answers_only_its_starter() {
    let options = ServerOptions::private().unwrap();
    let credentials = options.credentials.clone().unwrap();
    assert!(credentials.password.len() >= 64);
    assert_ne!(credentials.password, ServerOptions::private().unwrap().credentials.unwrap().password);
    let t = start_with(options).await;
    assert_eq!(t.get("/global/health").await.0, 401);
    let (status, _) =
        send(t.http.get(t.at("/global/health")).basic_auth(&credentials.username, Some(&credentials.password))).await;
    assert_eq!(status, 200);
}

/// Every operation of `/doc`, sent as a hostile page would send it: with a foreign `Host`, from a
/// foreign `Origin` (state-changing methods), or with a body that is not JSON. Each is refused and
/// nothing the API can show has changed.
#[tokio::test]
async fn no_hostile_request_changes_anything() {
    let t = start_runtime(json!({})).await;
    let session = t.session().await;
    let before = snapshot(&t).await;
    let doc = t.get("/doc").await.1;
    let host = format!("attacker.example:{}", port(&t.url));
    let mut refused = 0;
    for (path, methods) in doc["paths"].as_object().unwrap() {
        let url = t.at(&concrete(path, &session));
        for method in methods.as_object().unwrap().keys() {
            let method: reqwest::Method = method.to_uppercase().parse().unwrap();
            let changes = !matches!(method, reqwest::Method::GET | reqwest::Method::HEAD);
            let mut hostile = vec![t.http.request(method.clone(), &url).header(header::HOST, &host).json(&json!({}))];
            if changes {
                hostile.push(t.http.request(method.clone(), &url).header(header::ORIGIN, EVIL).json(&json!({})));
                for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"] {
                    let request = t.http.request(method.clone(), &url).header(header::CONTENT_TYPE, content_type);
                    hostile.push(request.body("{}"));
                }
            }
            for request in hostile {
                let (status, body) = send(request).await;
                assert!(status == 403 || status == 415, "{method} {path} answered {status}: {body}");
                refused += 1;
            }
        }
    }
    assert!(refused > 300, "only {refused} hostile requests were sent");
    assert_eq!(snapshot(&t).await, before, "a hostile request changed what the API shows");
    assert!(t.mock.requests().is_empty(), "a hostile request reached the model");
}

/// `{sessionID}` and friends filled in, so requests would reach real handlers if let through.
fn concrete(path: &str, session: &str) -> String {
    path.replace("{sessionID}", session)
        .replace("{projectID}", "global")
        .replace("{messageID}", "msg_x")
        .replace("{partID}", "prt_x")
        .replace("{ptyID}", "pty_x")
        .replace("{requestID}", "per_x")
        .replace("{permissionID}", "per_x")
        .replace("{providerID}", "mock")
        .replace("{name}", "x")
        .replace("{id}", "x")
}

async fn snapshot(t: &super::runtime::RuntimeServer) -> Vec<Value> {
    let mut seen = Vec::new();
    for path in ["/session", "/project", "/config", "/mcp", "/pty", "/permission", "/session/status"] {
        seen.push(t.get(path).await.1);
    }
    let mut files: Vec<String> =
        std::fs::read_dir(&t.dir).unwrap().map(|e| e.unwrap().path().display().to_string()).collect();
    files.sort();
    seen.push(json!(files));
    seen.push(json!(std::fs::read_to_string(t.dir.join("opencode.json")).unwrap()));
    seen
}
