//! Bad input gets a JSON-RPC error with a clear message, and the connection goes on.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::support::*;

/// Sends raw lines and reads the answers to requests (by id), skipping notifications.
struct Raw {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl Raw {
    async fn send(&mut self, line: &str) {
        self.write.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    /// The next response (not a notification).
    async fn response(&mut self) -> Value {
        loop {
            let line =
                tokio::time::timeout(Duration::from_secs(10), self.lines.next_line()).await.unwrap().unwrap().unwrap();
            let value: Value = serde_json::from_str(&line).unwrap();
            if value.get("method").is_none() {
                return value;
            }
        }
    }

    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()).await;
        self.response().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_errors_and_the_connection_goes_on() {
    let fixture = Fixture::new(json!({})).await;
    let (client, agent) = tokio::io::duplex(1 << 20);
    let engine = opencode_acp::engine(&fixture.env, &fixture.work).unwrap();
    let (read, write) = tokio::io::split(agent);
    use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
    let transport = agent_client_protocol::ByteStreams::new(write.compat_write(), read.compat());
    let task = tokio::spawn(opencode_acp::serve(engine, fixture.work.clone(), transport));
    let (read, write) = tokio::io::split(client);
    let mut raw = Raw { write, lines: BufReader::new(read).lines() };

    let init = raw.call(1, "initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await;
    assert_eq!(init["result"]["agentInfo"]["name"], "opencode");

    raw.send("{not json").await;
    assert_eq!(raw.response().await["error"]["code"], -32700);

    let unknown = raw.call(2, "session/teleport", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);

    let wrong = raw.call(3, "session/new", json!({"cwd": 42})).await;
    assert_eq!(wrong["error"]["code"], -32602);

    let relative = raw.call(4, "session/new", json!({"cwd": "not/absolute", "mcpServers": []})).await;
    assert_eq!(relative["error"]["code"], -32602);
    assert_eq!(relative["error"]["message"], "cwd `not/absolute` is not an absolute path");

    let params = json!({"sessionId": "ses_missing", "prompt": [{"type": "text", "text": "hi"}]});
    let missing = raw.call(5, "session/prompt", params).await;
    assert_eq!(missing["error"]["code"], -32002);
    assert!(missing["error"]["message"].as_str().unwrap().starts_with("unknown session `ses_missing`"), "{missing}");

    let created = raw.call(6, "session/new", json!({"cwd": fixture.work, "mcpServers": []})).await;
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let audio = json!({"sessionId": session, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]});
    let refused = raw.call(7, "session/prompt", audio).await;
    assert_eq!(refused["error"]["code"], -32602);
    assert!(refused["error"]["message"].as_str().unwrap().contains("audio"), "{refused}");

    let sse = json!({"cwd": fixture.work, "mcpServers": [{"type": "sse", "name": "old", "url": "http://127.0.0.1:1/sse", "headers": []}]});
    let sse = raw.call(8, "session/new", sse).await;
    assert!(sse["error"]["message"].as_str().unwrap().contains("SSE"), "{sse}");

    // Still serving.
    let listed = raw.call(9, "session/list", json!({})).await;
    assert_eq!(listed["result"]["sessions"][0]["sessionId"], session.as_str());
    drop(raw);
    tokio::time::timeout(Duration::from_secs(10), task).await.unwrap().unwrap().unwrap();
}
