//! The local redirect target of the authorization-code flow: a one-shot HTTP listener on
//! `127.0.0.1:<port>` that answers the browser's `GET <path>?code=…&state=…` with a short page and
//! hands the code over. Requests for other paths, or without the expected `state`, are refused
//! and the listener keeps waiting.

use reqwest::Url;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;

use crate::error::McpError;

/// A bound callback listener.
pub(crate) struct Callback {
    listener: TcpListener,
    path: String,
}

/// What one request to the listener carried.
enum Arrival {
    Code(String),
    Denied(String),
    Ignored,
}

impl Callback {
    /// Binds the host and port of `redirect_uri` (only loopback redirects can be served here).
    pub(crate) async fn bind(redirect_uri: &str) -> Result<Self, McpError> {
        let url = Url::parse(redirect_uri)
            .map_err(|err| McpError::Auth(format!("bad redirect URI {redirect_uri}: {err}")))?;
        let host = match url.host_str() {
            Some("localhost" | "127.0.0.1") => "127.0.0.1",
            Some("[::1]") => "::1",
            _ => {
                return Err(McpError::Auth(format!(
                    "the redirect URI {redirect_uri} is not on this machine (127.0.0.1)"
                )));
            }
        };
        let port = url.port_or_known_default().unwrap_or(80);
        let listener = TcpListener::bind((host, port)).await.map_err(|err| {
            McpError::Auth(format!(
                "cannot listen on {host}:{port} for the OAuth callback ({err}); set another `oauth.callbackPort`"
            ))
        })?;
        Ok(Self { listener, path: url.path().to_owned() })
    }

    /// Waits for the browser's redirect carrying `state`; returns the authorization code.
    pub(crate) async fn code(self, state: &str) -> Result<String, McpError> {
        loop {
            let Ok((stream, _peer)) = self.listener.accept().await else { continue };
            match self.serve(stream, state).await {
                Arrival::Code(code) => return Ok(code),
                Arrival::Denied(reason) => return Err(McpError::Auth(format!("authorization denied: {reason}"))),
                Arrival::Ignored => {}
            }
        }
    }

    async fn serve(&self, mut stream: TcpStream, state: &str) -> Arrival {
        let Some(target) = request_target(&mut stream).await else { return Arrival::Ignored };
        let Ok(url) = Url::parse("http://127.0.0.1").and_then(|base| base.join(&target)) else {
            return Arrival::Ignored;
        };
        if url.path() != self.path {
            respond(&mut stream, "404 Not Found", "Not found").await;
            return Arrival::Ignored;
        }
        let param = |name: &str| url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned());
        if param("state").as_deref() != Some(state) {
            respond(&mut stream, "400 Bad Request", "Invalid or missing state parameter.").await;
            return Arrival::Ignored;
        }
        if let Some(error) = param("error") {
            let reason = param("error_description").unwrap_or(error);
            respond(&mut stream, "200 OK", &format!("Authorization failed: {reason}")).await;
            return Arrival::Denied(reason);
        }
        match param("code") {
            Some(code) => {
                respond(
                    &mut stream,
                    "200 OK",
                    "Authorization successful. You can close this window and return to OpenCode.",
                )
                .await;
                Arrival::Code(code)
            }
            None => {
                respond(&mut stream, "400 Bad Request", "No authorization code provided.").await;
                Arrival::Ignored
            }
        }
    }
}

/// The request target of `GET <target> HTTP/1.1` (the head is read up to its blank line).
async fn request_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") && head.len() < 16 * 1024 {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let line = String::from_utf8_lossy(&head).lines().next()?.to_owned();
    let mut parts = line.split_whitespace();
    (parts.next()? == "GET").then_some(())?;
    parts.next().map(str::to_owned)
}

async fn respond(stream: &mut TcpStream, status: &str, message: &str) {
    let body = format!(
        "<!doctype html><html><head><title>OpenCode</title></head><body><p>{}</p></body></html>",
        escape(message)
    );
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // The browser may already be gone; the outcome does not depend on it.
    let _sent = stream.write_all(response.as_bytes()).await;
    let _closed = stream.shutdown().await;
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
