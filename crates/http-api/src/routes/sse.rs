//! Server-sent event streams: `/event` (one instance: `server.connected` first, then its events and a
//! `server.heartbeat` every 10 s), `/global/event` (every instance) and `/api/session/{id}/event`
//! (durable replay after `?after=N`, then the live tail of that session's durable events). Streams end
//! when the server shuts down, and only then: unlike OpenCode's, `/event` outlives the
//! `server.instance.disposed` it forwards (see `routes/config.rs`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderValue;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::Response;
use bytes::Bytes;
use futures_util::Stream;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use super::Op;
use crate::bus::Burst;
use crate::bus::BusEvent;
use crate::bus::EventBus;
use crate::bus::StreamProgress;
use crate::bus::encode;
use crate::bus::join;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::P;
use crate::extract::Q;
use crate::routes::session::session;
use crate::state::AppState;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/event", "event.subscribe", "Events of the instance (SSE)", instance_events).returns_sse(),
        Op::get("/global/event", "global.event", "Events of every instance (SSE)", global_events).returns_sse(),
        Op::get(
            "/api/session/{sessionID}/event",
            "v2.session.events",
            "Durable events after ?after=N, then live (SSE)",
            session_events,
        )
        .query(&["after"])
        .returns_sse(),
    ]
}

/// How often an idle stream says it is alive.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(10);
/// Durable events read from the store per replay page.
const REPLAY_PAGE: usize = 500;

async fn instance_events(State(s): State<AppState>, Dir(i): Dir) -> Response {
    // Subscribe before the body starts so that nothing published after this request is missed.
    let rx = s.inner.bus.subscribe_bursts();
    sse(feed(rx, Scope::Instance(i.directory_str()), s.inner.bus.clone(), s.inner.shutdown.clone()))
}

/// Every instance's events, each in OpenCode's envelope `{"directory","project","payload"}` (its TUI
/// and CLI follow this stream and route events by the envelope's directory).
async fn global_events(State(s): State<AppState>) -> Response {
    let rx = s.inner.bus.subscribe_bursts();
    sse(feed(rx, Scope::Global, s.inner.bus.clone(), s.inner.shutdown.clone()))
}

#[derive(Debug, Deserialize)]
struct AfterQuery {
    #[serde(default)]
    after: Option<i64>,
}

async fn session_events(
    State(s): State<AppState>,
    P(id): P<String>,
    Q(q): Q<AfterQuery>,
) -> Result<Response, ApiError> {
    session(&s, &id).await?;
    let rx = s.inner.bus.subscribe();
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::bad("after must be 0 or more"));
    }
    Ok(sse(durable_feed(s.clone(), id, after, rx)))
}

fn sse(stream: impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static) -> Response {
    let mut response = Body::from_stream(stream).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// Which events a stream shows, and in which form.
enum Scope {
    /// One instance directory's events, bare.
    Instance(String),
    /// Every instance's events, enveloped.
    Global,
}

struct Feed {
    rx: broadcast::Receiver<Arc<Burst>>,
    scope: Scope,
    /// How far this stream has handed events to its connection, for synchronous replies to wait on.
    progress: StreamProgress,
    /// The `seq` of the last burst taken from the bus: reached once the stream is polled again
    /// (hyper polls for more only after it has taken the previous chunk).
    taken: u64,
    shutdown: watch::Receiver<bool>,
    heartbeat: tokio::time::Interval,
    first: Option<Bytes>,
}

/// `server.connected`, then every bus event of the scope, with heartbeats. Each item is one burst's
/// frames.
fn feed(
    rx: broadcast::Receiver<Arc<Burst>>,
    scope: Scope,
    bus: EventBus,
    shutdown: watch::Receiver<bool>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let heartbeat = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    let first = Some(scope.frame(&encode(None, "server.connected", json!({}))));
    let progress = bus.track_stream();
    let taken = progress.at();
    let state = Feed { rx, scope, progress, taken, shutdown, heartbeat, first };
    futures_util::stream::unfold(state, |mut feed| async move {
        if let Some(first) = feed.first.take() {
            return Some((Ok(first), feed));
        }
        feed.progress.advance(feed.taken);
        loop {
            let received = tokio::select! {
                _ = feed.shutdown.wait_for(|stop| *stop) => return None,
                _ = feed.heartbeat.tick() => None,
                received = feed.rx.recv() => Some(received),
            };
            let Some(received) = received else {
                let heartbeat = feed.scope.frame(&encode(None, "server.heartbeat", json!({})));
                return Some((Ok(heartbeat), feed));
            };
            match received {
                Ok(burst) => {
                    feed.taken = burst.events.iter().map(|event| event.seq).max().unwrap_or(feed.taken);
                    if let Some(chunk) = feed.chunk(&burst) {
                        return Some((Ok(chunk), feed));
                    }
                    // Nothing of it for this stream: it is as far as the burst.
                    feed.progress.advance(feed.taken);
                }
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "an event subscriber fell behind; bursts of events skipped");
                }
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

impl Scope {
    fn frame(&self, event: &BusEvent) -> Bytes {
        match self {
            Self::Instance(_) => event.frame.clone(),
            Self::Global => event.global_frame.clone(),
        }
    }
}

impl Feed {
    /// What this stream writes of `burst`: the shared frames when it shows every event.
    fn chunk(&self, burst: &Burst) -> Option<Bytes> {
        let directory = match &self.scope {
            Scope::Instance(directory) => Some(directory.as_str()),
            Scope::Global => None,
        };
        if burst.events.iter().all(|event| visible(event, directory)) {
            return Some(match self.scope {
                Scope::Instance(_) => burst.frames.clone(),
                Scope::Global => burst.global_frames.clone(),
            });
        }
        let shown: Vec<Bytes> = burst
            .events
            .iter()
            .filter(|event| visible(event, directory))
            .map(|event| self.scope.frame(event))
            .collect();
        Some(join(shown.iter())).filter(|chunk| !chunk.is_empty())
    }
}

/// Whether an instance or global stream shows `event`. The V2 session events (`session.next.*`) are
/// only for `/api/session/{id}/event`: OpenCode's own streams never carry them, and its TUI reads them
/// in the V2 shape (`data`, not `properties`), so one of them would break the rest of its batch.
fn visible(event: &BusEvent, directory: Option<&str>) -> bool {
    if event.kind.starts_with("session.next.") {
        return false;
    }
    match (directory, event.directory.as_deref()) {
        (None, Some("")) => false,
        (None, _) | (_, None) => true,
        (Some(wanted), Some(actual)) => wanted == actual,
    }
}

struct DurableFeed {
    state: AppState,
    session: String,
    last: i64,
    replaying: bool,
    backlog: std::collections::VecDeque<(i64, String, String)>,
    rx: broadcast::Receiver<Arc<BusEvent>>,
}

/// The session's durable events after `after` from the store, then live ones from the bus (deduplicated
/// by sequence number, so the hand-over neither skips nor repeats).
fn durable_feed(
    state: AppState,
    session: String,
    after: i64,
    rx: broadcast::Receiver<Arc<BusEvent>>,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let mut shutdown = state.inner.shutdown.clone();
    let feed = DurableFeed { state, session, last: after, replaying: true, backlog: Default::default(), rx };
    let stream = futures_util::stream::unfold(feed, |mut feed| async move {
        loop {
            if let Some((seq, kind, data)) = feed.backlog.pop_front() {
                feed.last = seq;
                return Some((Ok(Bytes::from(format!("id: {seq}\nevent: {kind}\ndata: {data}\n\n"))), feed));
            }
            if feed.replaying {
                let (id, after) = (feed.session.clone(), feed.last);
                let page = feed.state.read(move |r| r.events_after(&id, after, REPLAY_PAGE)).await.ok()?;
                feed.replaying = page.len() == REPLAY_PAGE;
                for event in page {
                    let json = serde_json::to_string(&event).unwrap_or_default();
                    feed.backlog.push_back((event.seq, event.kind.as_str().to_owned(), json));
                }
                continue;
            }
            match feed.rx.recv().await {
                Ok(event) => {
                    if let Some(durable) = &event.durable
                        && durable.session_id == feed.session
                        && durable.seq > feed.last
                    {
                        feed.backlog.push_back((durable.seq, event.kind.clone(), durable.json.clone()));
                    }
                }
                // Fell behind the bus: catch up from the store, which has everything.
                Err(RecvError::Lagged(_)) => feed.replaying = true,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    let stop = async move {
        let _closed = shutdown.wait_for(|stop| *stop).await;
    };
    futures_util::StreamExt::take_until(stream, stop)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly by design")]

    use futures_util::StreamExt;

    use super::*;

    fn event(directory: &str, kind: &str) -> Arc<BusEvent> {
        Arc::new(encode(Some(directory.to_owned()), kind, json!({})))
    }

    fn burst(events: &[(&str, &str)]) -> Arc<Burst> {
        let events: Vec<_> = events.iter().map(|(directory, kind)| event(directory, kind)).collect();
        let frames = join(events.iter().map(|event| &event.frame));
        let global_frames = join(events.iter().map(|event| &event.global_frame));
        Arc::new(Burst { events, frames, global_frames })
    }

    fn bus() -> (EventBus, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = opencode_session_store::Store::open(dir.path().join("db")).unwrap();
        (EventBus::new(Arc::new(store)), dir)
    }

    fn kinds(chunk: &[u8]) -> Vec<String> {
        std::str::from_utf8(chunk)
            .unwrap()
            .split("\n\n")
            .filter(|frame| !frame.is_empty())
            .map(|frame| {
                let data: serde_json::Value = serde_json::from_str(frame.strip_prefix("data: ").unwrap()).unwrap();
                let event = data.get("payload").unwrap_or(&data);
                event["type"].as_str().unwrap().to_owned()
            })
            .collect()
    }

    #[tokio::test]
    async fn a_burst_is_one_chunk_in_order_without_other_instances_events_and_shared_when_all_are_shown() {
        let (tx, rx) = broadcast::channel(16);
        let (_stop, shutdown) = watch::channel(false);
        let (bus, _dir) = bus();
        let mut stream = Box::pin(feed(rx, Scope::Instance("/a".to_owned()), bus, shutdown));
        let connected = stream.next().await.unwrap().unwrap();
        assert_eq!(kinds(&connected), ["server.connected"]);

        tx.send(burst(&[("/a", "one"), ("/b", "elsewhere"), ("/a", "two"), ("/a", "three")])).unwrap();
        assert_eq!(kinds(&stream.next().await.unwrap().unwrap()), ["one", "two", "three"]);

        // A burst with nothing for this instance writes nothing; one with only its events is the
        // burst's own joined frames, not a copy.
        tx.send(burst(&[("/b", "elsewhere")])).unwrap();
        let mine = burst(&[("/a", "four"), ("/a", "five")]);
        tx.send(Arc::clone(&mine)).unwrap();
        let chunk = stream.next().await.unwrap().unwrap();
        assert_eq!(kinds(&chunk), ["four", "five"]);
        assert_eq!(chunk.as_ptr(), mine.frames.as_ptr());
    }

    #[tokio::test]
    async fn the_stream_ends_when_the_bus_closes() {
        let (tx, rx) = broadcast::channel(16);
        let (_stop, shutdown) = watch::channel(false);
        let (bus, _dir) = bus();
        let mut stream = Box::pin(feed(rx, Scope::Global, bus, shutdown));
        stream.next().await.unwrap().unwrap();
        tx.send(burst(&[("/a", "last")])).unwrap();
        drop(tx);
        assert_eq!(kinds(&stream.next().await.unwrap().unwrap()), ["last"]);
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn the_global_stream_wraps_events_as_opencode_does_and_no_stream_carries_v2_events() {
        let (tx, rx) = broadcast::channel(16);
        let (_stop, shutdown) = watch::channel(false);
        let (bus, _dir) = bus();
        let mut stream = Box::pin(feed(rx, Scope::Global, bus, shutdown));
        let connected = stream.next().await.unwrap().unwrap();
        assert!(connected.starts_with(b"data: {\"payload\":{"), "{connected:?}");
        tx.send(burst(&[("/a", "session.next.prompted"), ("/a", "message.updated")])).unwrap();
        let chunk = stream.next().await.unwrap().unwrap();
        let data: serde_json::Value =
            serde_json::from_str(std::str::from_utf8(&chunk).unwrap().trim().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(data["directory"], "/a");
        assert_eq!(data["payload"]["type"], "message.updated");
    }
}
