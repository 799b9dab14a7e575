//! The HTTP server.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use bytes::Bytes;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::response::{MockResponse, Step};

/// How long the server waits before aborting a connection for
/// [`MockResponse::then_disconnect`], so the chunks sent before it are flushed
/// to the client first.
const FLUSH_GRACE: Duration = Duration::from_millis(20);

/// A request received by the [`MockProvider`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The request method, e.g. `"POST"`.
    pub method: String,
    /// The request target as sent: path plus `?query` if any, e.g.
    /// `"/v1/models/gemini:streamGenerateContent?alt=sse"`.
    pub path_and_query: String,
    /// The request headers, names lowercase, in the order hyper reports them.
    /// Values that are not valid UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The complete request body.
    pub body: Bytes,
}

impl RecordedRequest {
    /// The value of the first header called `name` (compared
    /// case-insensitively), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body parsed as JSON.
    pub fn body_json(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<MockResponse>,
    requests: Vec<RecordedRequest>,
    responder: Option<Responder>,
}

/// Answers requests the queue has no response for.
#[derive(Clone)]
struct Responder(Arc<dyn Fn(&RecordedRequest) -> MockResponse + Send + Sync>);

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Responder")
    }
}

#[derive(Debug)]
struct Shared {
    inner: Mutex<Inner>,
    shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave `Inner` inconsistent
        // (every critical section is a single push/pop/clone), so keep going.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running mock provider server on `127.0.0.1` at a random port.
///
/// Serves queued [`MockResponse`]s first-in first-out to any method and path,
/// and records every request. The server runs on the tokio runtime that
/// called [`start`](Self::start) and shuts down when this value is dropped:
/// it stops accepting connections, and responses that are stalled or paused
/// are aborted.
#[derive(Debug)]
pub struct MockProvider {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
}

impl MockProvider {
    /// Binds `127.0.0.1:0` and starts serving in a background task.
    ///
    /// Must be called from within a tokio runtime (current-thread or
    /// multi-thread).
    pub async fn start() -> std::io::Result<MockProvider> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(Shared { inner: Mutex::new(Inner::default()), shutdown: shutdown_rx.clone() });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let mut signal = shutdown_rx;
        let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
            // Resolves when `true` is sent or when the sender is dropped.
            let _ = signal.wait_for(|stop| *stop).await;
        });
        tokio::spawn(async move {
            if let Err(err) = serve.await {
                eprintln!("mock provider: server error: {err}");
            }
        });
        Ok(MockProvider { addr, shared, shutdown })
    }

    /// The server's base URL, `http://127.0.0.1:PORT`, without a trailing
    /// slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues a response. Responses are served first-in first-out to any
    /// method and path.
    pub fn push(&self, response: MockResponse) {
        self.shared.lock().queue.push_back(response);
    }

    /// Queues several responses, in order.
    pub fn push_all(&self, responses: impl IntoIterator<Item = MockResponse>) {
        self.shared.lock().queue.extend(responses);
    }

    /// Every request received so far, in arrival order (including requests
    /// answered with the "no scripted response left" error).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().requests.clone()
    }

    /// Answers every request that finds the queue empty with `responder`'s response to it, instead of
    /// the "no scripted response left" error. For peers that send a varying number of requests
    /// concurrently (a title request beside the turn), where a FIFO script would race.
    pub fn respond_with(&self, responder: impl Fn(&RecordedRequest) -> MockResponse + Send + Sync + 'static) {
        self.shared.lock().responder = Some(Responder(Arc::new(responder)));
    }

    /// The number of queued responses not yet served.
    pub fn remaining(&self) -> usize {
        self.shared.lock().queue.len()
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let method = parts.method.to_string();
    let path_and_query =
        parts.uri.path_and_query().map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned());
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(err) => {
            return error_response(&format!(
                "mock provider: failed to read the request body of {method} {path_and_query}: {err}"
            ));
        }
    };
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
        .collect();

    let scripted = {
        let mut inner = shared.lock();
        let request = RecordedRequest { method: method.clone(), path_and_query: path_and_query.clone(), headers, body };
        let scripted = inner.queue.pop_front();
        let responder = inner.responder.clone();
        inner.requests.push(request.clone());
        scripted.or_else(|| responder.map(|respond| (respond.0)(&request)))
    };
    let Some(scripted) = scripted else {
        return error_response(&format!("mock provider: no scripted response left for {method} {path_and_query}"));
    };
    serve(scripted, shared.shutdown.clone()).await
}

async fn serve(scripted: MockResponse, mut shutdown: watch::Receiver<bool>) -> Response {
    let MockResponse { status, headers, steps } = scripted;
    let Ok(status) = StatusCode::from_u16(status) else {
        return error_response(&format!("mock provider: invalid scripted status {status}"));
    };
    let mut builder = Response::builder().status(status);
    for (name, value) in &headers {
        let (Ok(name), Ok(value)) = (HeaderName::try_from(name.as_str()), HeaderValue::try_from(value.as_str())) else {
            return error_response(&format!("mock provider: invalid scripted header {name:?}: {value:?}"));
        };
        builder = builder.header(name, value);
    }

    let mut steps: VecDeque<Step> = steps.into();
    // Pauses before the first chunk delay the response head.
    while let Some(Step::Delay(d)) = steps.front() {
        let d = *d;
        steps.pop_front();
        tokio::select! {
            () = tokio::time::sleep(d) => {}
            () = stopped(&mut shutdown) => break,
        }
    }

    let body = if steps.iter().all(|s| matches!(s, Step::Chunk(_))) && steps.len() <= 1 {
        match steps.pop_front() {
            Some(Step::Chunk(bytes)) => Body::from(bytes),
            _ => Body::empty(),
        }
    } else {
        Body::from_stream(body_stream(steps, shutdown))
    };
    builder.body(body).unwrap_or_else(|err| error_response(&format!("mock provider: cannot build the response: {err}")))
}

fn body_stream(
    steps: VecDeque<Step>,
    shutdown: watch::Receiver<bool>,
) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    futures_util::stream::unfold((steps, shutdown), |(mut steps, mut shutdown)| async move {
        loop {
            match steps.pop_front()? {
                Step::Chunk(bytes) => {
                    if !bytes.is_empty() {
                        return Some((Ok(bytes), (steps, shutdown)));
                    }
                }
                Step::Delay(d) => {
                    tokio::select! {
                        () = tokio::time::sleep(d) => {}
                        () = stopped(&mut shutdown) => {
                            steps.clear();
                            return Some((Err(shut_down_error()), (steps, shutdown)));
                        }
                    }
                }
                Step::Disconnect => {
                    // Give hyper a chance to flush what was sent so far:
                    // an error from the body makes it drop the connection
                    // together with any buffered bytes.
                    tokio::select! {
                        () = tokio::time::sleep(FLUSH_GRACE) => {}
                        () = stopped(&mut shutdown) => {}
                    }
                    steps.clear();
                    let err = std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "mock provider: scripted disconnect",
                    );
                    return Some((Err(err), (steps, shutdown)));
                }
                Step::Stall => {
                    stopped(&mut shutdown).await;
                    steps.clear();
                    return Some((Err(shut_down_error()), (steps, shutdown)));
                }
            }
        }
    })
}

/// Resolves once the server is shutting down (or its handle is gone).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

fn shut_down_error() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "mock provider: server shut down mid-response")
}

/// A `500` response with an OpenAI-style JSON error body.
fn error_response(message: &str) -> Response {
    let body = serde_json::json!({ "error": { "message": message } }).to_string();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
