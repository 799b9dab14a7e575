//! The client: prepares a request for a route, sends it with bounded retries, and decodes the
//! response stream into canonical events.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::task::Context;
use std::task::Poll;
use std::time::Duration;
use std::time::SystemTime;

use bytes::Bytes;
use futures_util::Stream;
use futures_util::StreamExt;
use serde_json::Value;
use tracing::Instrument;

use crate::ErrorKind;
use crate::LlmError;
use crate::LlmEvent;
use crate::LlmRequest;
use crate::LlmResponse;
use crate::RetryPolicy;
use crate::Route;
use crate::RouteDefaults;
use crate::error::classify_http;
use crate::error::classify_stream_error;
use crate::framing::Frame;
use crate::framing::FrameDecoder;
use crate::protocol::EventSink;
use crate::protocol::StreamDecoder;
use crate::shape::RequestShape;

/// Body fields no HTTP overlay may set, whether or not the protocol wrote them for this request.
const PROTOCOL_OWNED_FIELDS: &[&str] = &[
    "model",
    "modelId",
    "messages",
    "input",
    "contents",
    "system",
    "systemInstruction",
    "instructions",
    "tools",
    "toolConfig",
    "tool_choice",
    "toolChoice",
    "stream",
    "stream_options",
    "max_tokens",
    "maxTokens",
    "max_output_tokens",
    "max_completion_tokens",
    "maxOutputTokens",
    "temperature",
    "top_p",
    "topP",
    "top_k",
    "topK",
    "thinking",
    "reasoning",
    "stop",
    "stop_sequences",
    "stopSequences",
    "generationConfig",
    "inferenceConfig",
];

/// Headers no HTTP overlay may set: credentials and framing belong to the route.
const PROTECTED_HEADERS: &[&str] =
    &["authorization", "x-api-key", "api-key", "x-goog-api-key", "content-type", "host", "content-length"];

/// Comma-list headers whose request values join the route's instead of replacing them (a route that
/// needs a beta keeps it when a model asks for another).
const LIST_HEADERS: &[&str] = &["anthropic-beta"];

/// The most bytes read from a failed response's body.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Client tuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientOptions {
    pub retry: RetryPolicy,
    /// The longest silence tolerated while waiting for response headers or the next body bytes.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(30),
        }
    }
}

/// A request ready to send: method, URL, headers and the exact body bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedRequest {
    pub method: String,
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl PreparedRequest {
    pub fn new(method: &str, url: reqwest::Url, body: impl Into<Bytes>) -> Self {
        Self { method: method.to_owned(), url, headers: Vec::new(), body: body.into() }
    }

    /// Sets a header, replacing any value under the same (case-insensitive) name.
    pub fn set_header(&mut self, name: &str, value: &str) {
        self.headers.retain(|(key, _)| !key.eq_ignore_ascii_case(name));
        self.headers.push((name.to_ascii_lowercase(), value.to_owned()));
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        crate::error::header(&self.headers, name)
    }

    pub fn body_json(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }
}

/// A provider-neutral streaming client. Cheap to clone; share one per process.
#[derive(Debug, Clone, Default)]
pub struct LlmClient {
    /// Built on the first request: a TLS client (crypto provider, platform verifier) is the
    /// largest part of an idle server's start-up work, and a server may never call a model.
    http: Arc<OnceLock<Result<reqwest::Client, String>>>,
    options: ClientOptions,
}

impl LlmClient {
    pub fn new() -> Self {
        Self::with_options(ClientOptions::default())
    }

    /// Builds nothing yet: the HTTP client is made on the first request, and a failure to make it is
    /// that request's error.
    pub fn with_options(options: ClientOptions) -> Self {
        Self { http: Arc::default(), options }
    }

    /// The HTTP client, built on first use.
    fn http(&self) -> Result<&reqwest::Client, LlmError> {
        let built = self.http.get_or_init(|| {
            // reqwest is built without a bundled crypto provider; ring is ours. Installing fails
            // only when another provider is already installed, which is fine.
            let _already_installed = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .connect_timeout(self.options.connect_timeout)
                .build()
                .map_err(|err| format!("cannot build the HTTP client: {err}"))
        });
        built.as_ref().map_err(|message| LlmError::configuration(message.clone()))
    }

    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Encodes `request` for `route` without sending it (credentials are not applied).
    pub fn prepare(&self, route: &Route, request: &LlmRequest) -> Result<PreparedRequest, LlmError> {
        prepare(route, request).map_err(|err| err.with_provider(&route.provider))
    }

    /// Sends one provider turn and returns its event stream. Errors before the response starts
    /// streaming (after bounded retries) are returned here; later ones end the stream with a
    /// terminal [`LlmEvent::Error`].
    pub async fn stream(&self, route: &Route, request: &LlmRequest) -> Result<LlmStream, LlmError> {
        let span = tracing::info_span!("llm.stream", provider = %route.provider, protocol = route.protocol.id(), model = %request.model);
        async {
            let prepared = self.prepare(route, request)?;
            let mut retry = 0;
            loop {
                match self.attempt(route, &prepared).await {
                    Ok((response, secrets)) => {
                        return Ok(self.decode(route, request, response, secrets));
                    }
                    Err(error) => match self.options.retry.delay(retry, &error) {
                        Some(wait) => {
                            tracing::warn!(%error, retry = retry + 1, wait_ms = wait.as_millis() as u64, "retrying provider request");
                            tokio::time::sleep(wait).await;
                            retry += 1;
                        }
                        None => return Err(error),
                    },
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Sends one provider turn and folds the whole stream into a response.
    pub async fn generate(&self, route: &Route, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let events: Vec<LlmEvent> = self.stream(route, request).await?.collect().await;
        let response = LlmResponse::from_events(&events);
        match response.error {
            Some(error) => Err(error),
            None => Ok(response),
        }
    }

    /// One HTTP attempt: authenticate, send, and check the status and content type.
    async fn attempt(
        &self,
        route: &Route,
        prepared: &PreparedRequest,
    ) -> Result<(reqwest::Response, Vec<String>), LlmError> {
        let mut request = prepared.clone();
        let secrets =
            route.auth.apply(&mut request, SystemTime::now()).map_err(|err| err.with_provider(&route.provider))?;
        let fail = |error: LlmError| error.with_provider(&route.provider).redact(&secrets);

        let mut builder =
            self.http()?.request(method(&request.method)?, request.url.clone()).body(request.body.clone());
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let response = match tokio::time::timeout(self.options.idle_timeout, builder.send()).await {
            Err(_) => {
                return Err(fail(timeout_error(self.options.idle_timeout, "response headers")));
            }
            Ok(Err(err)) => return Err(fail(transport_error(&err))),
            Ok(Ok(response)) => response,
        };

        let status = response.status().as_u16();
        let headers = header_pairs(response.headers());
        let content_type = crate::error::header(&headers, "content-type").unwrap_or("").to_ascii_lowercase();
        if !response.status().is_success() {
            let body = read_bounded(response, self.options.idle_timeout).await;
            return Err(fail(classify_http(status, &headers, &body)));
        }
        if content_type.contains("json") || content_type.contains("html") {
            let body = read_bounded(response, self.options.idle_timeout).await;
            return Err(fail(unexpected_success_body(route, status, &headers, &content_type, &body)));
        }
        Ok((response, secrets))
    }

    fn decode(
        &self,
        route: &Route,
        request: &LlmRequest,
        response: reqwest::Response,
        secrets: Vec<String>,
    ) -> LlmStream {
        let state = Decoding {
            body: Box::pin(response.bytes_stream()),
            frames: route.framing.decoder(),
            frame_buf: Vec::new(),
            decoder: route.protocol.decoder(request),
            sink: EventSink::new(),
            pending: VecDeque::new(),
            idle_timeout: self.options.idle_timeout,
            provider: route.provider.clone(),
            shape: route.shape.clone(),
            secrets,
            done: false,
        };
        LlmStream { inner: Box::pin(futures_util::stream::unfold(state, Decoding::next)) }
    }
}

/// A stream of canonical events ending in exactly one terminal event.
pub struct LlmStream {
    inner: Pin<Box<dyn Stream<Item = LlmEvent> + Send>>,
}

impl Stream for LlmStream {
    type Item = LlmEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<LlmEvent>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl std::fmt::Debug for LlmStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LlmStream")
    }
}

/// Decoding state of one response body.
struct Decoding {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    frames: FrameDecoder,
    frame_buf: Vec<Frame>,
    decoder: Box<dyn StreamDecoder>,
    sink: EventSink,
    pending: VecDeque<LlmEvent>,
    idle_timeout: Duration,
    provider: String,
    /// Undoes the route's tool-name prefix on the events.
    shape: RequestShape,
    secrets: Vec<String>,
    done: bool,
}

impl Decoding {
    async fn next(mut self) -> Option<(LlmEvent, Self)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((event, self));
            }
            if self.done {
                return None;
            }
            match tokio::time::timeout(self.idle_timeout, self.body.next()).await {
                Err(_) => self.fail(timeout_error(self.idle_timeout, "stream data")),
                Ok(Some(Ok(bytes))) => self.feed(&bytes),
                Ok(Some(Err(err))) => self.fail(LlmError::new(
                    ErrorKind::Transport,
                    format!("the connection broke mid-stream: {}", error_chain(&err)),
                )),
                Ok(None) => self.end(),
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        if let Err(error) = self.frames.push(bytes, &mut self.frame_buf) {
            self.sink.error(error);
        }
        self.decode_frames();
        self.flush();
    }

    fn end(&mut self) {
        if let Err(error) = self.frames.finish(&mut self.frame_buf) {
            self.sink.error(error);
        }
        self.decode_frames();
        if !self.sink.is_terminal()
            && let Err(error) = self.decoder.end(&mut self.sink)
        {
            self.sink.error(error);
        }
        if !self.sink.is_terminal() {
            self.sink.error(LlmError::new(
                ErrorKind::Transport,
                "the provider closed the stream before finishing the response",
            ));
        }
        self.flush();
    }

    fn decode_frames(&mut self) {
        for frame in self.frame_buf.drain(..) {
            if self.sink.is_terminal() {
                break;
            }
            if let Err(error) = self.decoder.decode(frame, &mut self.sink) {
                self.sink.error(error);
            }
        }
        self.frame_buf.clear();
    }

    fn fail(&mut self, error: LlmError) {
        self.sink.error(error);
        self.flush();
    }

    /// Moves the sink's events to the output queue, labelling and redacting errors.
    fn flush(&mut self) {
        for event in self.sink.drain() {
            let event = match event {
                LlmEvent::Error { mut error } => {
                    if error.provider.is_none() {
                        error.provider = Some(self.provider.clone());
                    }
                    LlmEvent::Error { error: error.redact(&self.secrets) }
                }
                mut other => {
                    self.shape.restore(&mut other);
                    other
                }
            };
            self.pending.push_back(event);
        }
        if self.sink.is_terminal() {
            self.done = true;
        }
    }
}

fn prepare(route: &Route, request: &LlmRequest) -> Result<PreparedRequest, LlmError> {
    // Requests carry whole histories (images included): copy only when there is something to merge.
    let merged = if route.defaults == RouteDefaults::default() {
        Cow::Borrowed(request)
    } else {
        let mut copy = request.clone();
        copy.generation = route.defaults.generation.merged(&request.generation);
        copy.options = route.defaults.options.merged(&request.options);
        Cow::Owned(copy)
    };
    // The route's shape goes over the defaults and the request: the endpoint requires it.
    let shaped = route.shape.apply(&merged);
    let effective: &LlmRequest = &shaped;

    let mut body = route.protocol.encode(effective)?;
    if let Value::Object(fields) = &mut body {
        for (key, value) in &request.http.body {
            if fields.contains_key(key) || PROTOCOL_OWNED_FIELDS.contains(&key.as_str()) {
                return Err(LlmError::invalid_request(format!(
                    "http.body may not overwrite the protocol-owned field `{key}`; use the request's own fields"
                )));
            }
            fields.insert(key.clone(), value.clone());
        }
    }
    let body = serde_json::to_vec(&body)
        .map_err(|err| LlmError::invalid_request(format!("cannot serialize the request body: {err}")))?;

    let path = route.endpoint.path.clone().unwrap_or_else(|| route.protocol.path(effective));
    let raw_url = format!("{}{path}", route.endpoint.base_url);
    let mut url = reqwest::Url::parse(&raw_url)
        .map_err(|err| LlmError::configuration(format!("invalid endpoint URL `{raw_url}`: {err}")))?;
    let extra_query: Vec<(&String, &String)> =
        route.endpoint.query.iter().map(|(k, v)| (k, v)).chain(request.http.query.iter()).collect();
    if !extra_query.is_empty() {
        url.query_pairs_mut().extend_pairs(extra_query);
    }

    let mut prepared = PreparedRequest::new("POST", url, body);
    prepared.set_header("content-type", "application/json");
    prepared.set_header("accept", route.framing.content_type());
    for (name, value) in &route.headers {
        prepared.set_header(name, value);
    }
    route.shape.set_headers(effective, &mut prepared);
    for (name, value) in &request.http.headers {
        let lower = name.to_ascii_lowercase();
        if PROTECTED_HEADERS.contains(&lower.as_str()) || lower.starts_with("x-amz-") {
            return Err(LlmError::invalid_request(format!(
                "http.headers may not set `{name}`: credentials and content type belong to the route"
            )));
        }
        match prepared.header(&lower).filter(|_| LIST_HEADERS.contains(&lower.as_str())) {
            Some(existing) => {
                let joined = join_list(existing, value);
                prepared.set_header(name, &joined);
            }
            None => prepared.set_header(name, value),
        }
    }
    Ok(prepared)
}

/// `a,b` + `b,c` = `a,b,c`: the route's values first, each value once.
fn join_list(route: &str, request: &str) -> String {
    let mut values: Vec<&str> = Vec::new();
    for value in route.split(',').chain(request.split(',')).map(str::trim).filter(|value| !value.is_empty()) {
        if !values.contains(&value) {
            values.push(value);
        }
    }
    values.join(",")
}

fn method(name: &str) -> Result<reqwest::Method, LlmError> {
    reqwest::Method::from_bytes(name.as_bytes())
        .map_err(|_| LlmError::configuration(format!("invalid HTTP method `{name}`")))
}

fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| value.to_str().ok().map(|value| (name.as_str().to_owned(), value.to_owned())))
        .collect()
}

/// Reads at most [`MAX_ERROR_BODY_BYTES`] of a body, giving up quietly on stalls or errors.
async fn read_bounded(response: reqwest::Response, idle_timeout: Duration) -> Vec<u8> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while body.len() < MAX_ERROR_BODY_BYTES {
        match tokio::time::timeout(idle_timeout, stream.next()).await {
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    body.truncate(MAX_ERROR_BODY_BYTES);
    body
}

/// A 2xx answer that is not a stream: an error in disguise, or the wrong endpoint entirely.
fn unexpected_success_body(
    route: &Route,
    status: u16,
    headers: &[(String, String)],
    content_type: &str,
    body: &[u8],
) -> LlmError {
    if let Ok(value) = serde_json::from_slice::<Value>(body)
        && let Some(error) = value.get("error")
    {
        let embedded_status = error.get("code").and_then(Value::as_u64).filter(|code| (400..600).contains(code));
        if let Some(code) = embedded_status {
            return classify_http(code as u16, headers, body);
        }
        let message = error.get("message").and_then(Value::as_str).or(error.as_str()).unwrap_or("unknown error");
        let code = ["code", "type"].iter().find_map(|key| error.get(*key).and_then(Value::as_str));
        return classify_stream_error(code, message).with_status(status);
    }
    let snippet: String = String::from_utf8_lossy(body).chars().take(300).collect();
    LlmError::invalid_output(format!(
        "expected a streaming `{}` response but got `{content_type}`: {snippet}",
        route.framing.content_type()
    ))
    .with_status(status)
}

fn timeout_error(after: Duration, waiting_for: &str) -> LlmError {
    LlmError::new(ErrorKind::Timeout, format!("no {waiting_for} from the provider for {} s", after.as_secs_f64()))
}

fn transport_error(err: &reqwest::Error) -> LlmError {
    let what = if err.is_connect() { "cannot connect to the provider" } else { "the request failed" };
    LlmError::new(ErrorKind::Transport, format!("{what}: {}", error_chain(err)))
}

/// An error and its sources, joined: reqwest's top-level message alone rarely says what failed.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
