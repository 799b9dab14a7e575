//! The instance event bus behind `GET /event`: durable store events (through the store's after-commit
//! hook) and the driver's live events are tagged with the directory of their session and broadcast, each
//! serialised once as OpenCode's `{"id","type","properties"}`; subscribers keep what belongs to their
//! instance directory. Instance streams take them in bursts: one task gathers each burst over a short
//! window and joins its frames once, so a subscriber wakes and writes once per burst, not per event.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::Weak;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use opencode_session_store::Event;
use opencode_session_store::EventHook;
use opencode_session_store::EventKind;
use opencode_session_store::Store;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use serde_json::Value;
use serde_json::json;
use tokio::sync::Notify;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::error::TryRecvError;
use tokio::sync::mpsc;
use tokio::sync::oneshot;
use tokio::sync::watch;

use crate::driver::LiveEvent;

/// One event ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct BusEvent {
    /// The instance directory it belongs to; `None` for server-wide events.
    pub directory: Option<String>,
    pub kind: String,
    /// `{"id","type","properties"}` as sent in the SSE `data:` line.
    pub json: String,
    /// The SSE frame (`data: <json>` and a blank line), encoded once for every subscriber.
    pub frame: Bytes,
    /// The frame `/global/event` sends: OpenCode's envelope `{"directory","project","payload"}`.
    pub global_frame: Bytes,
    /// For durable events: the store's event (session, sequence number, data) as JSON.
    pub durable: Option<Durable>,
    /// Its place in the order the bus routed events (0 for events published around the router).
    pub seq: u64,
}

/// A durable event's place in its session's log, and its stored form for `/api/session/{id}/event`.
#[derive(Debug, Clone, PartialEq)]
pub struct Durable {
    pub session_id: String,
    pub seq: i64,
    pub json: String,
}

/// The events published within one gathering window, in order.
#[derive(Debug)]
pub struct Burst {
    pub events: Vec<Arc<BusEvent>>,
    /// Every event's frame, joined: what a subscriber that shows all of them writes, shared by all.
    pub frames: Bytes,
    /// Every event's `/global/event` frame, joined.
    pub global_frames: Bytes,
}

/// Fan-out of events to SSE subscribers. Cheap to clone.
#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

struct Inner {
    out: broadcast::Sender<Arc<BusEvent>>,
    /// The `seq` of the last routed event the gatherer has sent on (or let pass unsubscribed).
    delivered: watch::Sender<u64>,
    /// Ends the gatherer's current window at once (a synchronous reply is waiting for it).
    flush: Notify,
    /// How far each live event stream has handed its events to the connection (`seq`).
    feeds: Mutex<Vec<Weak<AtomicU64>>>,
    /// Woken whenever a stream advances.
    advanced: Notify,
    bursts: broadcast::Sender<Arc<Burst>>,
    pending: mpsc::UnboundedSender<Pending>,
    /// Session id -> (directory, project id), learnt from session events and store reads; a cache
    /// of at most [`PLACES`] sessions (forgotten ones are read from the store again).
    directories: Mutex<HashMap<String, Place>>,
}

/// Where a session's events belong: its directory and project.
#[derive(Debug, Clone)]
struct Place {
    directory: String,
    project: Option<String>,
}

enum Pending {
    Event {
        kind: String,
        properties: Value,
        durable: Option<Durable>,
    },
    /// Answered with the `seq` of the last event routed before it.
    Barrier(oneshot::Sender<u64>),
}

/// Sessions whose place the bus remembers at most: a long-lived server serves many more, and each
/// is one store read away. When full, the cache starts over (a busy session is learnt again by its
/// next event).
const PLACES: usize = 1024;

/// Events a slow subscriber may fall behind by before it skips ahead.
const CAPACITY: usize = 4096;
/// Bursts a slow instance stream may fall behind by before it skips ahead.
const BURST_CAPACITY: usize = 256;
/// After the first event of a burst, how long the bus waits for the rest. Each burst costs every
/// subscriber a wake-up and a socket write, and its reader a wake-up and a read: at 3 ms a runtime turn
/// was two or three bursts and 100 subscribers slowed it by about a quarter; at 16 ms a turn is one
/// burst (docs/BENCHMARKS.md). 16 ms is one frame at 60 Hz, the rate OpenCode's TUI renders its event
/// batches at, so clients show nothing later.
const GATHER: Duration = Duration::from_millis(16);
/// How long a synchronous reply waits at most for its turn's events to go out.
const DELIVERY_WAIT: Duration = Duration::from_millis(250);
/// Events in one burst at most (bounds a burst when the bus is flooded).
const BURST_EVENTS: usize = 256;

impl EventBus {
    /// A bus whose events are routed using `store` to find each session's directory. Must be called
    /// inside a tokio runtime (it spawns the router task).
    pub fn new(store: Arc<Store>) -> Self {
        let (pending, rx) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            out: broadcast::channel(CAPACITY).0,
            delivered: watch::channel(0).0,
            flush: Notify::new(),
            feeds: Mutex::default(),
            advanced: Notify::new(),
            bursts: broadcast::channel(BURST_CAPACITY).0,
            pending,
            directories: Mutex::default(),
        });
        tokio::spawn(route(Arc::downgrade(&inner), rx, store));
        tokio::spawn(gather(Arc::downgrade(&inner), inner.out.subscribe()));
        Self { inner }
    }

    /// The hook to install with [`Store::add_event_hook`]: every committed event is published.
    pub fn store_hook(&self) -> EventHook {
        let bus = self.clone();
        Arc::new(move |events: &[Event]| {
            for event in events {
                bus.publish_durable(event);
            }
        })
    }

    /// Publishes a committed store event (routed by its session).
    pub fn publish_durable(&self, event: &Event) {
        let durable = Durable {
            session_id: event.session_id.clone(),
            seq: event.seq,
            json: serde_json::to_string(event).unwrap_or_default(),
        };
        let pending = Pending::Event {
            kind: event.kind.as_str().to_owned(),
            properties: properties_of(event),
            durable: Some(durable),
        };
        // A closed channel means the server stopped; there is nobody to tell.
        let _stopped = self.inner.pending.send(pending);
    }

    /// Publishes a live event of the driver (routed by `properties.sessionID`).
    pub fn publish_live(&self, event: LiveEvent) {
        let _stopped =
            self.inner.pending.send(Pending::Event { kind: event.kind, properties: event.properties, durable: None });
    }

    /// Resolves once every event published before this call has gone out to the event streams (past
    /// the burst window). A synchronous reply waits for it, so that a client which stops reading its
    /// stream when the reply arrives (OpenCode's `run --attach`) has seen the whole turn.
    pub async fn delivered(&self) {
        // Bounded: a stream or gatherer that fell behind skips events and never reaches them, and a
        // stream whose client left unnoticed never advances; the reply then goes a quarter second late.
        let _late = tokio::time::timeout(DELIVERY_WAIT, self.reach_streams()).await;
    }

    async fn reach_streams(&self) {
        let (done, routed) = oneshot::channel();
        if self.inner.pending.send(Pending::Barrier(done)).is_err() {
            return; // the server is stopping
        }
        let Ok(target) = routed.await else { return };
        self.inner.flush.notify_one();
        let mut delivered = self.inner.delivered.subscribe();
        // The guard it returns is dropped at once: it must not live across the waits below.
        drop(delivered.wait_for(|last| *last >= target).await);
        loop {
            // Registered before checking, so an advance between the check and the wait is not missed.
            let advanced = self.inner.advanced.notified();
            if self.streams_at(target) {
                return;
            }
            advanced.await;
        }
    }

    /// Whether every live stream has handed its events up to `seq` to its connection.
    fn streams_at(&self, seq: u64) -> bool {
        let mut feeds = self.inner.feeds.lock().unwrap_or_else(PoisonError::into_inner);
        feeds.retain(|feed| feed.strong_count() > 0);
        feeds.iter().filter_map(Weak::upgrade).all(|feed| feed.load(Ordering::Acquire) >= seq)
    }

    /// A progress counter for one event stream; dropping it (the stream ended) unregisters it.
    pub(crate) fn track_stream(&self) -> StreamProgress {
        let counter = Arc::new(AtomicU64::new(*self.inner.delivered.borrow()));
        self.inner.feeds.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&counter));
        StreamProgress { counter: Some(counter), bus: self.clone() }
    }

    /// Publishes an event whose directory is known (or `None` for every subscriber), bypassing routing.
    pub fn publish(&self, directory: Option<String>, kind: &str, properties: Value) {
        let _no_subscribers = self.inner.out.send(Arc::new(encode(directory, kind, properties)));
    }

    /// Receives every event published from now on, one by one.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<BusEvent>> {
        self.inner.out.subscribe()
    }

    /// Receives every event published from now on, in bursts (for instance streams).
    pub fn subscribe_bursts(&self) -> broadcast::Receiver<Arc<Burst>> {
        self.inner.bursts.subscribe()
    }

    /// Remembers a session's directory and project (saves a store read when its events arrive).
    pub fn remember(&self, session_id: &str, directory: &str, project: &str) {
        let place = Place { directory: directory.to_owned(), project: Some(project.to_owned()) };
        self.inner.remember(session_id, place);
    }
}

impl Inner {
    fn remember(&self, session_id: &str, place: Place) {
        let mut directories = self.directories.lock().unwrap_or_else(PoisonError::into_inner);
        if directories.len() >= PLACES && !directories.contains_key(session_id) {
            *directories = HashMap::new();
        }
        directories.insert(session_id.to_owned(), place);
    }
}

/// How far one event stream has handed its events to its connection (see [`EventBus::delivered`]).
pub(crate) struct StreamProgress {
    counter: Option<Arc<AtomicU64>>,
    bus: EventBus,
}

impl StreamProgress {
    /// Records that the stream has handed everything up to `seq` to its connection.
    pub(crate) fn advance(&self, seq: u64) {
        let Some(counter) = &self.counter else { return };
        if counter.fetch_max(seq, Ordering::AcqRel) < seq {
            self.bus.inner.advanced.notify_waiters();
        }
    }

    /// The `seq` the stream is at.
    pub(crate) fn at(&self) -> u64 {
        self.counter.as_ref().map_or(0, |counter| counter.load(Ordering::Acquire))
    }
}

impl Drop for StreamProgress {
    fn drop(&mut self) {
        // Gone first, then announced: a waiting reply must not wait for a stream that has ended.
        drop(self.counter.take());
        self.bus.inner.advanced.notify_waiters();
    }
}

/// Builds the wire form of an event.
pub fn encode(directory: Option<String>, kind: &str, properties: Value) -> BusEvent {
    encode_in(directory, None, kind, properties)
}

/// [`encode`] for an event whose project is known (`/global/event` names it).
fn encode_in(directory: Option<String>, project: Option<&str>, kind: &str, properties: Value) -> BusEvent {
    let json = json!({ "id": id::ascending(IdKind::Event), "type": kind, "properties": properties }).to_string();
    // Serialised JSON has no raw line breaks, so one `data:` line carries it.
    let frame = Bytes::from(format!("data: {json}\n\n"));
    let global_frame = Bytes::from(format!("data: {}\n\n", envelope(directory.as_deref(), project, &json)));
    BusEvent { directory, kind: kind.to_owned(), json, frame, global_frame, durable: None, seq: 0 }
}

/// OpenCode's `/global/event` item: `{"directory","project","payload"}`, with the directory and project
/// left out for server-wide events (as OpenCode does for `server.connected`).
pub(crate) fn envelope(directory: Option<&str>, project: Option<&str>, payload: &str) -> String {
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_default();
    let mut out = String::with_capacity(payload.len() + 96);
    out.push('{');
    if let Some(directory) = directory.filter(|d| !d.is_empty()) {
        out.push_str(&format!("\"directory\":{},", quoted(directory)));
    }
    if let Some(project) = project {
        out.push_str(&format!("\"project\":{},", quoted(project)));
    }
    out.push_str("\"payload\":");
    out.push_str(payload);
    out.push('}');
    out
}

/// OpenCode's `properties` for a durable event: the stored data, with `sessionID` added when missing
/// (and, for a part update, the `time` it was published, as OpenCode sends it).
fn properties_of(event: &Event) -> Value {
    let mut properties = event.data.clone();
    if let Value::Object(map) = &mut properties {
        map.entry("sessionID").or_insert_with(|| Value::String(event.session_id.clone()));
        if event.kind == EventKind::PartUpdated {
            map.entry("time").or_insert_with(|| json!(id::now_ms()));
        }
    }
    properties
}

/// Tags each pending event with its session's directory, in arrival order, and broadcasts it; answers
/// barriers once the gatherer has passed every event routed before them.
async fn route(inner: std::sync::Weak<Inner>, mut rx: mpsc::UnboundedReceiver<Pending>, store: Arc<Store>) {
    let mut seq = 0;
    while let Some(pending) = rx.recv().await {
        let Some(inner) = inner.upgrade() else { return };
        let (kind, properties, durable) = match pending {
            Pending::Event { kind, properties, durable } => (kind, properties, durable),
            Pending::Barrier(done) => {
                let _gone = done.send(seq);
                continue;
            }
        };
        let place = place_of(&inner, &store, &properties).await;
        if place.is_none() && properties.get("sessionID").is_some() && durable.is_none() {
            // The session is gone (or never existed): no instance may see its live events.
            continue;
        }
        let project = place.as_ref().and_then(|place| place.project.clone());
        // A durable event of an unknown session still reaches session streams, but no instance stream.
        let directory = place.map(|place| place.directory).or_else(|| durable.as_ref().map(|_| String::new()));
        let mut event = encode_in(directory, project.as_deref(), &kind, properties);
        event.durable = durable;
        seq += 1;
        event.seq = seq;
        let _no_subscribers = inner.out.send(Arc::new(event));
    }
}

/// Gathers the bus's events into bursts: from the first event of a burst it waits [`GATHER`], then
/// takes what has arrived since. Events nobody subscribes to in bursts are not gathered.
async fn gather(inner: Weak<Inner>, mut rx: broadcast::Receiver<Arc<BusEvent>>) {
    loop {
        let first = match rx.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "the event gatherer fell behind; events skipped");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let subscribed = inner.upgrade().is_some_and(|inner| inner.bursts.receiver_count() > 0);
        if !subscribed {
            mark_delivered(&inner, first.seq);
            continue;
        }
        let flush = inner.upgrade();
        if let Some(flush) = &flush {
            tokio::select! {
                () = tokio::time::sleep(GATHER) => {}
                () = flush.flush.notified() => {}
            }
        }
        drop(flush);
        let mut events = vec![first];
        while events.len() < BURST_EVENTS {
            match rx.try_recv() {
                Ok(event) => events.push(event),
                Err(TryRecvError::Lagged(missed)) => tracing::warn!(missed, "the event gatherer fell behind"),
                Err(TryRecvError::Empty | TryRecvError::Closed) => break,
            }
        }
        let frames = join(events.iter().map(|event| &event.frame));
        let global_frames = join(events.iter().map(|event| &event.global_frame));
        let last = events.iter().map(|event| event.seq).max().unwrap_or(0);
        let Some(strong) = inner.upgrade() else { return };
        let _no_subscribers = strong.bursts.send(Arc::new(Burst { events, frames, global_frames }));
        mark_delivered(&inner, last);
    }
}

fn mark_delivered(inner: &Weak<Inner>, seq: u64) {
    if let Some(inner) = inner.upgrade() {
        inner.delivered.send_if_modified(|last| {
            let advanced = seq > *last;
            *last = (*last).max(seq);
            advanced
        });
    }
}

/// Frames concatenated into one chunk.
pub(crate) fn join<'a>(frames: impl Iterator<Item = &'a Bytes>) -> Bytes {
    let mut chunk = bytes::BytesMut::new();
    frames.for_each(|frame| chunk.extend_from_slice(frame));
    chunk.freeze()
}

async fn place_of(inner: &Inner, store: &Arc<Store>, properties: &Value) -> Option<Place> {
    let session_id = properties.get("sessionID").and_then(Value::as_str)?.to_owned();
    let remember = |place: &Place| inner.remember(&session_id, place.clone());
    if let Some(directory) = properties.pointer("/info/directory").and_then(Value::as_str) {
        let project = properties.pointer("/info/projectID").and_then(Value::as_str).map(str::to_owned);
        let place = Place { directory: directory.to_owned(), project };
        remember(&place);
        return Some(place);
    }
    let known = inner.directories.lock().unwrap_or_else(PoisonError::into_inner).get(&session_id).cloned();
    if known.is_some() {
        return known;
    }
    let store = Arc::clone(store);
    let lookup = session_id.clone();
    let found = tokio::task::spawn_blocking(move || store.read(|r| r.session(&lookup)))
        .await
        .ok()
        .and_then(Result::ok)
        .flatten()
        .map(|session| Place { directory: session.directory, project: Some(session.project_id) });
    if let Some(place) = &found {
        remember(place);
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly by design")]

    use super::*;

    #[tokio::test]
    async fn events_published_together_reach_a_subscriber_as_one_burst_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let bus = EventBus::new(Arc::new(Store::open(dir.path().join("db")).unwrap()));
        let mut bursts = bus.subscribe_bursts();
        for kind in ["one", "two", "three"] {
            bus.publish(Some("/a".to_owned()), kind, json!({}));
        }
        let burst = bursts.recv().await.unwrap();
        let kinds: Vec<&str> = burst.events.iter().map(|event| event.kind.as_str()).collect();
        assert_eq!(kinds, ["one", "two", "three"]);
        let frames: Vec<u8> = burst.events.iter().flat_map(|event| event.frame.to_vec()).collect();
        assert_eq!(burst.frames.as_ref(), frames.as_slice());
        bus.publish(None, "later", json!({}));
        assert_eq!(bursts.recv().await.unwrap().events[0].kind, "later");
    }
}
