//! `/pty...`: real shells on real pseudo-terminals, driven over HTTP and a real WebSocket client.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures_util::SinkExt;
use futures_util::StreamExt;
use opencode_http_api::Credentials;
use opencode_http_api::ServerOptions;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;
use tokio_tungstenite::MaybeTlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use super::TestServer;
use super::directory_query;
use super::events::Events;
use super::send;
use super::start;
use super::start_with;

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Guards against a silent hang (not a timing assertion).
const GUARD: Duration = Duration::from_secs(30);

async fn create(t: &TestServer, body: Value) -> Value {
    let (status, info) = t.post("/pty", body).await;
    assert_eq!(status, 200, "{info}");
    info
}

async fn put(t: &TestServer, path: &str, body: Value) -> (u16, Value) {
    send(t.http.put(t.at(path)).json(&body)).await
}

fn ws_url(t: &TestServer, path: &str) -> String {
    format!("ws{}{path}", t.url.strip_prefix("http").unwrap())
}

/// Connects and reads up to the control frame: (socket, replayed text, cursor).
async fn connect(t: &TestServer, id: &str, query: &str) -> (Ws, String, u64) {
    let (ws, _) = tokio_tungstenite::connect_async(ws_url(t, &format!("/pty/{id}/connect{query}"))).await.unwrap();
    attach(ws).await
}

async fn attach(mut ws: Ws) -> (Ws, String, u64) {
    let mut replay = String::new();
    loop {
        match tokio::time::timeout(GUARD, ws.next()).await.expect("no control frame").unwrap().unwrap() {
            Message::Text(text) => replay.push_str(&text),
            Message::Binary(bytes) => {
                assert_eq!(bytes[0], 0, "binary frames from the server are control frames");
                let meta: Value = serde_json::from_slice(&bytes[1..]).unwrap();
                return (ws, replay, meta["cursor"].as_u64().unwrap());
            }
            other => panic!("unexpected frame before the control frame: {other:?}"),
        }
    }
}

/// Output until it contains `needle`.
async fn read_until(ws: &mut Ws, needle: &str) -> String {
    let mut seen = String::new();
    while !seen.contains(needle) {
        match tokio::time::timeout(GUARD, ws.next()).await.unwrap_or_else(|_| panic!("no {needle:?} in {seen:?}")) {
            Some(Ok(Message::Text(text))) => seen.push_str(&text),
            Some(Ok(Message::Close(_))) | None => panic!("the socket closed before {needle:?}: {seen:?}"),
            other => panic!("unexpected frame {other:?}"),
        }
    }
    seen
}

/// Events up to the first of type `kind`.
async fn next_of(events: &mut Events, kind: &str) -> Value {
    loop {
        let (_, event) = events.next().await;
        if event["type"] == kind {
            return event;
        }
    }
}

/// Whether a process with this id still exists (a zombie counts as gone: it runs nothing).
fn alive(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z "))
}

#[tokio::test]
async fn a_shell_runs_typed_commands_over_the_websocket() {
    let t = start().await;
    let info = create(&t, json!({ "command": "/bin/sh", "title": "main" })).await;
    let id = info["id"].as_str().unwrap();
    assert!(id.starts_with("pty_"), "{id}");
    assert_eq!(info["title"], "main");
    assert_eq!(info["status"], "running");
    assert_eq!(info["cwd"], t.dir.to_string_lossy().as_ref());
    assert_eq!(info["args"], json!(["-l"]), "shells start as login shells, as in OpenCode");
    assert!(info["pid"].as_u64().unwrap() > 0);

    let (mut ws, _, _) = connect(&t, id, "").await;
    ws.send(Message::text("echo hi-$((1+1))\n")).await.unwrap();
    let output = read_until(&mut ws, "hi-2").await;
    assert!(output.contains("hi-2"));

    let (status, listed) = t.get("/pty").await;
    assert_eq!((status, listed), (200, json!([info])));
    let (status, got) = t.get(&format!("/pty/{id}")).await;
    assert_eq!((status, got), (200, info.clone()));
}

#[tokio::test]
async fn a_later_client_gets_the_replay_and_a_cursor_skips_it() {
    let t = start().await;
    let id = create(&t, json!({ "command": "/bin/sh" })).await["id"].as_str().unwrap().to_owned();
    let (mut first, _, _) = connect(&t, &id, "").await;
    first.send(Message::text("echo replay-$((2+3))\n")).await.unwrap();
    read_until(&mut first, "replay-5").await;

    let (_, replay, cursor) = connect(&t, &id, "").await;
    assert!(replay.contains("replay-5"), "{replay:?}");
    assert!(cursor >= replay.len() as u64);
    let (_, from_end, end) = connect(&t, &id, "?cursor=-1").await;
    assert_eq!(from_end, "", "cursor -1 replays nothing");
    assert!(end >= cursor);
    let (_, from_cursor, _) = connect(&t, &id, &format!("?cursor={end}")).await;
    // Only output written after `end` may come (the shell can still be printing its prompt).
    assert!(
        !from_cursor.contains("replay"),
        "a client that saw everything up to its cursor gets nothing again: {from_cursor:?}"
    );

    // Input from the second client reaches the same shell; both see the output.
    let (mut second, _, _) = connect(&t, &id, "?cursor=-1").await;
    second.send(Message::binary(b"echo both-$((3*3))\n".to_vec())).await.unwrap();
    read_until(&mut second, "both-9").await;
    read_until(&mut first, "both-9").await;
}

#[tokio::test]
async fn put_renames_and_resizes_and_rejects_bad_sizes() {
    let t = start().await;
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    let info = create(&t, json!({ "command": "/bin/sh" })).await;
    let id = info["id"].as_str().unwrap();
    let created = next_of(&mut events, "pty.created").await;
    assert_eq!(created["properties"]["info"], info);

    let (status, updated) =
        put(&t, &format!("/pty/{id}"), json!({ "title": "build", "size": { "rows": 41, "cols": 101 } })).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["title"], "build");
    let event = next_of(&mut events, "pty.updated").await;
    assert_eq!(event["properties"]["info"], updated);

    let (mut ws, _, _) = connect(&t, id, "?cursor=-1").await;
    ws.send(Message::text("stty size\n")).await.unwrap();
    read_until(&mut ws, "41 101").await;

    for bad in [
        json!({ "size": { "rows": 0, "cols": 80 } }),
        json!({ "size": { "rows": 24, "cols": 70000 } }),
        json!({ "size": { "rows": -1, "cols": 80 } }),
        json!({ "size": { "rows": 24 } }),
        json!({ "size": { "rows": 24, "cols": 80, "px": 1 } }),
        json!({ "name": "x" }),
    ] {
        let (status, body) = put(&t, &format!("/pty/{id}"), bad.clone()).await;
        assert_eq!(status, 400, "{bad} -> {body}");
        assert_eq!(body["data"]["code"], "INVALID_INPUT");
    }
    assert_eq!(t.get(&format!("/pty/{id}")).await.1["title"], "build");
}

#[tokio::test]
async fn a_shell_that_exits_emits_exited_then_deleted() {
    let t = start().await;
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    let id = create(&t, json!({ "command": "/bin/sh" })).await["id"].as_str().unwrap().to_owned();
    let (mut ws, _, _) = connect(&t, &id, "").await;
    ws.send(Message::text("exit 3\n")).await.unwrap();

    let exited = next_of(&mut events, "pty.exited").await;
    assert_eq!(exited["properties"], json!({ "id": id, "exitCode": 3 }));
    let deleted = next_of(&mut events, "pty.deleted").await;
    assert_eq!(deleted["properties"], json!({ "id": id }));
    assert_eq!(t.get(&format!("/pty/{id}")).await.0, 404);
    // The socket ends with the PTY.
    socket_ends(&mut ws).await;
}

#[tokio::test]
async fn a_command_with_arguments_runs_as_given_and_reports_its_exit_code() {
    let t = start().await;
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    let script = "read line; echo got-$line-$PTY_TEST; exit 7";
    let info = create(&t, json!({ "command": "/bin/sh", "args": ["-c", script], "env": { "PTY_TEST": "v" } })).await;
    assert_eq!(info["args"], json!(["-c", script]), "no -l after the caller's arguments");
    let id = info["id"].as_str().unwrap();
    let (mut ws, _, _) = connect(&t, id, "").await;
    ws.send(Message::text("x\n")).await.unwrap();
    read_until(&mut ws, "got-x-v").await;
    let exited = next_of(&mut events, "pty.exited").await;
    assert_eq!(exited["properties"], json!({ "id": id, "exitCode": 7 }));
}

#[tokio::test]
async fn shutdown_closes_connected_sockets_and_ends_the_shell() {
    let t = start().await;
    let info = create(&t, json!({ "command": "/bin/sh" })).await;
    let (id, pid) = (info["id"].as_str().unwrap(), info["pid"].as_u64().unwrap());
    let (mut ws, _, _) = connect(&t, id, "").await;
    tokio::time::timeout(GUARD, t.server.shutdown()).await.expect("shutdown waited for the socket").unwrap();
    assert!(!alive(pid));
    socket_ends(&mut ws).await;
}

#[tokio::test]
async fn delete_hangs_up_the_process_and_emits_deleted() {
    let t = start().await;
    let mut events = Events::open(&t.http, &t.at("/event")).await;
    let info = create(&t, json!({ "command": "/bin/sh" })).await;
    let (id, pid) = (info["id"].as_str().unwrap(), info["pid"].as_u64().unwrap());
    assert!(alive(pid));

    let (status, removed) = t.delete(&format!("/pty/{id}")).await;
    assert_eq!((status, removed), (200, json!(true)));
    let deleted = next_of(&mut events, "pty.deleted").await;
    assert_eq!(deleted["properties"], json!({ "id": id }));
    let exited = next_of(&mut events, "pty.exited").await;
    assert_eq!(exited["properties"]["exitCode"], 128 + 1, "SIGHUP ends the shell");
    assert!(!alive(pid), "the shell is gone once pty.exited is out");
    assert_eq!(t.get(&format!("/pty/{id}")).await.0, 404);
    assert_eq!(t.delete(&format!("/pty/{id}")).await.0, 404);
}

#[tokio::test]
async fn unknown_ids_and_other_directories_get_404() {
    let t = start().await;
    let other = t.git_project("other");
    let id = create(&t, json!({ "command": "/bin/sh" })).await["id"].as_str().unwrap().to_owned();
    let elsewhere = directory_query(&other);
    assert_eq!(t.get(&format!("/pty?{elsewhere}")).await, (200, json!([])));
    for (target, query) in [("pty_unknown", String::new()), (id.as_str(), format!("?{elsewhere}"))] {
        let (status, body) = t.get(&format!("/pty/{target}{query}")).await;
        assert_eq!((status, body["data"]["code"].clone()), (404, json!("NOT_FOUND")), "{target}");
        assert_eq!(put(&t, &format!("/pty/{target}{query}"), json!({ "title": "x" })).await.0, 404);
        assert_eq!(t.post(&format!("/pty/{target}/connect-token{query}"), json!({})).await.0, 404);
        assert_eq!(t.get(&format!("/pty/{target}/connect{query}")).await.0, 404);
        assert_eq!(t.delete(&format!("/pty/{target}{query}")).await.0, 404);
    }
    assert_eq!(t.get(&format!("/pty/{id}")).await.0, 200, "a 404 elsewhere deletes nothing here");
    // Not a WebSocket request: a JSON 400.
    let (status, body) = t.get(&format!("/pty/{id}/connect")).await;
    assert_eq!((status, body["data"]["code"].clone()), (400, json!("INVALID_INPUT")));
}

#[tokio::test]
async fn bad_create_requests_are_400() {
    let t = start().await;
    for bad in [
        json!({ "cwd": "does/not/exist" }),
        json!({ "command": "/no/such/program" }),
        json!({ "command": "/bin/sh", "args": "-c" }),
        json!({ "shell": "/bin/sh" }),
    ] {
        let (status, body) = t.post("/pty", bad.clone()).await;
        assert_eq!(status, 400, "{bad} -> {body}");
    }
    assert_eq!(t.get("/pty").await, (200, json!([])));
}

#[tokio::test]
async fn the_pty_limit_is_a_409_and_shutdown_ends_every_process() {
    let t = start().await;
    let mut pids = Vec::new();
    for _ in 0..32 {
        pids.push(create(&t, json!({ "command": "/bin/cat" })).await["pid"].as_u64().unwrap());
    }
    let (status, body) = t.post("/pty", json!({ "command": "/bin/cat" })).await;
    assert_eq!((status, body["data"]["code"].clone()), (409, json!("CONFLICT")), "{body}");
    assert!(pids.iter().all(|pid| alive(*pid)));
    t.server.shutdown().await.unwrap();
    let left: Vec<_> = pids.iter().filter(|pid| alive(**pid)).collect();
    assert!(left.is_empty(), "still running after shutdown: {left:?}");
}

#[tokio::test]
async fn a_connect_ticket_opens_the_socket_once_without_credentials() {
    let options = ServerOptions {
        port: 0,
        credentials: Some(Credentials { username: "opencode".into(), password: "hunter2".into() }),
        ..ServerOptions::default()
    };
    let t = start_with(options).await;
    let authed = |request: reqwest::RequestBuilder| request.basic_auth("opencode", Some("hunter2"));
    let (status, info) = send(authed(t.http.post(t.at("/pty"))).json(&json!({ "command": "/bin/sh" }))).await;
    assert_eq!(status, 200, "{info}");
    let id = info["id"].as_str().unwrap();
    let (status, token) = send(authed(t.http.post(t.at(&format!("/pty/{id}/connect-token"))))).await;
    assert_eq!(status, 200, "{token}");
    assert!(token["expires_in"].as_u64().unwrap() > 0);
    let ticket = token["ticket"].as_str().unwrap();

    let rejected = |query: String| {
        let url = ws_url(&t, &format!("/pty/{id}/connect{query}"));
        async move {
            match tokio_tungstenite::connect_async(url).await {
                Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
                other => panic!("expected a refusal, got {:?}", other.map(|(_, r)| r.status())),
            }
        }
    };
    assert_eq!(rejected(String::new()).await, 401, "no credentials, no ticket");
    assert_eq!(rejected("?ticket=forged".to_owned()).await, 401);

    let (mut ws, _, _) = connect(&t, id, &format!("?ticket={ticket}")).await;
    ws.send(Message::text("echo ticket-$((4+4))\n")).await.unwrap();
    read_until(&mut ws, "ticket-8").await;
    assert_eq!(rejected(format!("?ticket={ticket}")).await, 401, "a ticket works once");

    // With credentials a socket needs no ticket; `auth_token` works as for event streams.
    let mut request = ws_url(&t, &format!("/pty/{id}/connect")).into_client_request().unwrap();
    let basic = format!("Basic {}", STANDARD.encode("opencode:hunter2"));
    request.headers_mut().insert("authorization", basic.parse().unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    attach(ws).await;
}

#[tokio::test]
async fn an_unknown_ticket_is_403_even_without_a_password() {
    let t = start().await;
    let id = create(&t, json!({ "command": "/bin/sh" })).await["id"].as_str().unwrap().to_owned();
    let url = ws_url(&t, &format!("/pty/{id}/connect?ticket=forged"));
    match tokio_tungstenite::connect_async(url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 403),
        other => panic!("expected 403, got {:?}", other.map(|(_, r)| r.status())),
    }
}

#[tokio::test]
async fn shells_are_listed_by_path_and_name() {
    let t = start().await;
    let (status, shells) = t.get("/pty/shells").await;
    assert_eq!(status, 200);
    for shell in shells.as_array().unwrap() {
        let path = shell["path"].as_str().unwrap();
        assert!(std::path::Path::new(path).is_file(), "{path}");
        assert_eq!(path.rsplit('/').next().unwrap(), shell["name"].as_str().unwrap());
        assert_eq!(shell["acceptable"], !matches!(shell["name"].as_str().unwrap(), "fish" | "nu"));
    }
}

/// Reads (and ignores) output until the server closes the socket.
async fn socket_ends(ws: &mut Ws) {
    loop {
        match tokio::time::timeout(GUARD, ws.next()).await.expect("the socket stayed open") {
            Some(Ok(Message::Text(_))) => {}
            Some(Ok(Message::Close(_)) | Err(_)) | None => break,
            other => panic!("unexpected frame {other:?}"),
        }
    }
}
