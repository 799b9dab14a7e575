//! The legacy HTTP+SSE transport (MCP 2024-11-05), for remote servers that do not speak
//! streamable HTTP: a long-lived `GET` event stream whose first `endpoint` event names the URL to
//! `POST` each client message to; the server's messages arrive as `message` events on the stream.
//! rmcp 3.9 ships no client for it, so this is a small [`rmcp::transport::Transport`].

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::StreamExt;
use opencode_llm::framing::SseDecoder;
use opencode_llm::framing::SseEvent;
use reqwest::Url;
use rmcp::RoleClient;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::model::ServerJsonRpcMessage;
use tokio::sync::mpsc;

/// Why the legacy transport failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LegacySseError {
    /// The server answered 401 (or 403 with a challenge): `WWW-Authenticate` is kept.
    #[error("authorization required")]
    Unauthorized(String),
    #[error("{0}")]
    Http(String),
}

/// A connected legacy SSE session.
pub(crate) struct LegacySse {
    http: reqwest::Client,
    endpoint: Arc<Url>,
    headers: Arc<HashMap<http::HeaderName, http::HeaderValue>>,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl LegacySse {
    /// Opens the event stream at `url` and waits for its `endpoint` event.
    pub(crate) async fn open(
        http: reqwest::Client,
        url: &str,
        headers: HashMap<http::HeaderName, http::HeaderValue>,
    ) -> Result<Self, LegacySseError> {
        let base = Url::parse(url).map_err(|err| LegacySseError::Http(format!("bad URL {url}: {err}")))?;
        let mut request = http.get(url).header(http::header::ACCEPT, "text/event-stream");
        for (name, value) in &headers {
            request = request.header(name, value);
        }
        let response = request.send().await.map_err(|err| LegacySseError::Http(format!("GET {url}: {err}")))?;
        let status = response.status();
        let challenge = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if status == reqwest::StatusCode::UNAUTHORIZED
            || (status == reqwest::StatusCode::FORBIDDEN && challenge.is_some())
        {
            return Err(LegacySseError::Unauthorized(challenge.unwrap_or_default()));
        }
        if !status.is_success() {
            return Err(LegacySseError::Http(format!("GET {url} answered {status}")));
        }
        let mut body = response.bytes_stream();
        let mut decoder = SseDecoder::new();
        let mut pending: Vec<SseEvent> = Vec::new();
        let endpoint = loop {
            if let Some(index) = pending.iter().position(|event| event.event.as_deref() == Some("endpoint")) {
                let event = pending.remove(index);
                break base
                    .join(event.data.trim())
                    .map_err(|err| LegacySseError::Http(format!("bad endpoint {:?}: {err}", event.data)))?;
            }
            match body.next().await {
                Some(Ok(chunk)) => decoder.push(&chunk, |event| pending.push(event)),
                Some(Err(err)) => return Err(LegacySseError::Http(format!("the event stream failed: {err}"))),
                None => return Err(LegacySseError::Http("the event stream ended before its `endpoint` event".into())),
            }
        };
        let (sender, incoming) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            for event in pending {
                if !deliver(&sender, event).await {
                    return;
                }
            }
            while let Some(Ok(chunk)) = body.next().await {
                let mut events = Vec::new();
                decoder.push(&chunk, |event| events.push(event));
                for event in events {
                    if !deliver(&sender, event).await {
                        return;
                    }
                }
            }
            // Dropping the sender ends `receive`, which closes the rmcp service.
        });
        Ok(Self { http, endpoint: Arc::new(endpoint), headers: Arc::new(headers), incoming, reader })
    }
}

impl rmcp::transport::Transport<RoleClient> for LegacySse {
    type Error = LegacySseError;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let endpoint = Arc::clone(&self.endpoint);
        let headers = Arc::clone(&self.headers);
        async move {
            let body = serde_json::to_string(&item).map_err(|err| LegacySseError::Http(err.to_string()))?;
            let mut request = http.post(endpoint.as_str()).header(http::header::CONTENT_TYPE, "application/json");
            for (name, value) in headers.iter() {
                request = request.header(name, value);
            }
            let response = request
                .body(body)
                .send()
                .await
                .map_err(|err| LegacySseError::Http(format!("POST {endpoint}: {err}")))?;
            match response.status() {
                status if status.is_success() => Ok(()),
                reqwest::StatusCode::UNAUTHORIZED => Err(LegacySseError::Unauthorized(String::new())),
                status => Err(LegacySseError::Http(format!("POST {endpoint} answered {status}"))),
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Forwards a `message` event; other events and unreadable messages are skipped (logged).
/// `false` once the receiving side is gone.
async fn deliver(sender: &mpsc::Sender<ServerJsonRpcMessage>, event: SseEvent) -> bool {
    if event.event.as_deref().is_some_and(|name| name != "message") {
        return true;
    }
    match serde_json::from_str::<ServerJsonRpcMessage>(&event.data) {
        Ok(message) => sender.send(message).await.is_ok(),
        Err(err) => {
            tracing::debug!(target: "opencode_mcp::sse", "unreadable server message skipped: {err}");
            true
        }
    }
}
