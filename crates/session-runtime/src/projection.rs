//! Projected history kept in memory between provider turns, so that a turn converts only what is new.
//!
//! The cache of a session is exactly what [`Reader::full_history`] would return, plus the request
//! messages each entry projects to and their JSON size (for the token estimate). It is kept equal to
//! the store by applying the store's committed events in order (`message.updated`,
//! `message.part.updated`, `message.part.removed`, `message.removed`); any event it cannot apply
//! exactly (a gap in the per-session sequence, a revert, a kind that may rewrite history) marks it
//! stale. Before each provider turn, [`HistoryCache::projected`] checks it in one read transaction
//! against the store's latest event sequence, the active Context Epoch (compaction and epoch
//! changes write no event of their own) and the session's revert: on any difference, including
//! writes by another process, it reloads from the store. So "projected history is reloaded before
//! each provider turn" stays true in meaning: what a turn sends equals a fresh reload.
//!
//! New messages arrive as ids first (an event does not tell a new message from an update of one the
//! projection hides); the check reads them with their store position in the same transaction.

use std::collections::BTreeSet;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::Instant;

use opencode_llm::Message;
use opencode_session_store::ContextEpoch;
use opencode_session_store::Event;
use opencode_session_store::EventKind;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::Part;
use opencode_session_store::Reader;
use opencode_session_store::Store;
use opencode_session_store::StoreError;
use serde_json::Value;

use crate::compaction::json_len;
use crate::history;

/// Bytes each cached session counts for besides its entries (maps, ids, bookkeeping).
const SESSION_OVERHEAD: u64 = 2048;
/// Bytes each history entry counts for besides its JSON sizes: the many small strings of a message
/// and its parts (ids, model, paths, times) and their allocations. Calibrated on the allocator's
/// count of a server holding 3,000 two-turn sessions (about 10 KB each, for 4 entries of ~450 bytes
/// of JSON).
const ENTRY_OVERHEAD: u64 = 2048;

/// The projected history of a provider turn.
#[derive(Debug, Clone)]
pub(crate) struct Projected {
    /// The request messages of the whole projection, in order.
    pub(crate) messages: Vec<Message>,
    /// Sum of the JSON lengths of `messages` (each on its own, without separators).
    pub(crate) message_chars: u64,
    /// The newest user message (the parent of the next assistant message).
    pub(crate) parent: Option<String>,
    /// The active Context Epoch the projection was taken under.
    pub(crate) epoch: Option<ContextEpoch>,
    /// The projection was reloaded from the store (not served from memory).
    pub(crate) reloaded: bool,
}

/// Per-session projected history, maintained from the store's events, within a byte budget.
pub(crate) struct HistoryCache {
    sessions: Mutex<Sessions>,
    /// Estimated bytes the cached sessions may hold together (see [`crate::MemoryOptions`]); the
    /// session last used may exceed it alone.
    budget: u64,
}

impl Default for HistoryCache {
    fn default() -> Self {
        Self::new(crate::memory::DEFAULT_HISTORY_BUDGET)
    }
}

/// The index of cached sessions.
#[derive(Default)]
struct Sessions {
    map: HashMap<String, Entry>,
    /// Use counter, for least-recently-used eviction.
    clock: u64,
    /// Sum of the entries' `bytes`.
    bytes: u64,
    /// Sessions evicted so far.
    evicted: u64,
}

struct Entry {
    cached: Arc<Mutex<Cached>>,
    /// `clock` at the last use.
    used: u64,
    /// When it was last used.
    at: Instant,
    /// Its estimated size when last used.
    bytes: u64,
}

impl Sessions {
    /// Drops least recently used entries nobody is using, except `keep`, until the total is within
    /// `budget`.
    fn evict_to(&mut self, budget: u64, keep: Option<&str>) {
        while self.bytes > budget {
            // An entry whose `Arc` only the index holds is not being checked or used right now.
            let oldest = self
                .map
                .iter()
                .filter(|(id, entry)| Arc::strong_count(&entry.cached) == 1 && Some(id.as_str()) != keep)
                .min_by_key(|(_, entry)| entry.used)
                .map(|(id, _)| id.clone());
            let Some(oldest) = oldest else { return };
            self.remove(&oldest);
        }
    }

    fn remove(&mut self, session_id: &str) {
        if let Some(entry) = self.map.remove(session_id) {
            self.bytes = self.bytes.saturating_sub(entry.bytes);
            self.evicted += 1;
        }
    }
}

impl HistoryCache {
    /// A cache holding at most about `budget` bytes between turns.
    pub(crate) fn new(budget: u64) -> Self {
        Self { sessions: Mutex::default(), budget }
    }

    /// Applies committed events (called by the store's event hook, in commit order per session).
    pub(crate) fn apply(&self, events: &[Event]) {
        let mut current: Option<(&str, Arc<Mutex<Cached>>)> = None;
        for event in events {
            if current.as_ref().is_none_or(|(id, _)| *id != event.session_id) {
                let sessions = self.lock();
                match sessions.map.get(&event.session_id) {
                    Some(entry) => current = Some((event.session_id.as_str(), Arc::clone(&entry.cached))),
                    None => {
                        current = None;
                        continue;
                    }
                }
            }
            if let Some((_, cached)) = &current {
                cached.lock().unwrap_or_else(PoisonError::into_inner).apply(event);
            }
        }
    }

    /// The projected history of `session_id` now: from memory when the cache provably equals the
    /// store, otherwise reloaded. Blocking (run it on the blocking pool).
    pub(crate) fn projected(&self, store: &Store, session_id: &str) -> opencode_session_store::Result<Projected> {
        Ok(self.check(store, session_id, false)?.0)
    }

    /// What the cache holds for `session_id` after the same check as [`HistoryCache::projected`]:
    /// `None` when it had to reload (diagnostics and tests).
    pub(crate) fn held(
        &self,
        store: &Store,
        session_id: &str,
    ) -> opencode_session_store::Result<Option<(Vec<MessageWithParts>, Vec<Message>)>> {
        let (projected, history) = self.check(store, session_id, true)?;
        Ok((!projected.reloaded).then(|| (history.unwrap_or_default(), projected.messages)))
    }

    /// Drops the sessions last used before `before` (`None`: every one), except `keep` (sessions with
    /// a drain in progress); how many were dropped.
    pub(crate) fn evict_idle(&self, before: Option<Instant>, keep: &[String]) -> usize {
        let mut sessions = self.lock();
        let idle: Vec<String> = sessions
            .map
            .iter()
            .filter(|(id, entry)| {
                Arc::strong_count(&entry.cached) == 1
                    && before.is_none_or(|before| entry.at < before)
                    && !keep.iter().any(|kept| kept == *id)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &idle {
            sessions.remove(id);
        }
        idle.len()
    }

    /// Projected histories served so far (from memory or reloaded): a measure of activity.
    pub(crate) fn uses(&self) -> u64 {
        self.lock().clock
    }

    /// What the cache holds now.
    pub(crate) fn report(&self) -> crate::memory::HistoryReport {
        let sessions = self.lock();
        crate::memory::HistoryReport {
            sessions: sessions.map.len(),
            bytes: sessions.bytes,
            budget: self.budget,
            evicted: sessions.evicted,
        }
    }

    fn check(
        &self,
        store: &Store,
        session_id: &str,
        with_history: bool,
    ) -> opencode_session_store::Result<(Projected, Option<Vec<MessageWithParts>>)> {
        let cached = self.entry(session_id);
        let mut guard = cached.lock().unwrap_or_else(PoisonError::into_inner);
        let checked = store.read(|r| {
            let seq = r.latest_seq(session_id)?;
            let epoch = r.active_epoch(session_id)?;
            let session = r
                .session(session_id)?
                .ok_or_else(|| StoreError::NotFound { kind: "session", id: session_id.to_owned() })?;
            let key = epoch.as_ref().map(EpochKey::of);
            let reloaded = if guard.valid_for(seq, key, session.revert.is_none()) {
                guard.resolve(r, session_id)?;
                false
            } else {
                *guard = Cached::load(r, session_id, seq, key)?;
                // A staged revert hides history from a message (or part) on: not maintained in memory.
                guard.stale = session.revert.is_some();
                true
            };
            let history = with_history.then(|| guard.history.clone());
            Ok((guard.projected(epoch, reloaded), history))
        });
        let bytes = guard.bytes();
        drop(guard);
        self.settle(session_id, cached, checked.is_ok().then_some(bytes));
        checked
    }

    /// The entry of `session_id`, created empty (stale) when absent, marked used.
    fn entry(&self, session_id: &str) -> Arc<Mutex<Cached>> {
        let mut sessions = self.lock();
        sessions.clock += 1;
        let used = sessions.clock;
        let entry = sessions.map.entry(session_id.to_owned()).or_insert_with(|| Entry {
            cached: Arc::new(Mutex::new(Cached::stale())),
            used,
            at: Instant::now(),
            bytes: 0,
        });
        entry.used = used;
        entry.at = Instant::now();
        Arc::clone(&entry.cached)
    }

    /// Records the size of `session_id`'s entry after a use (`None`: the check failed and the entry
    /// goes), then evicts other sessions down to the budget. The session just used stays (its next
    /// turn is likely the next use of the cache, and a session larger than the budget would
    /// otherwise reload at every turn), unless the budget is 0: nothing is kept then.
    fn settle(&self, session_id: &str, cached: Arc<Mutex<Cached>>, bytes: Option<u64>) {
        let mut sessions = self.lock();
        drop(cached);
        let Some(entry) = sessions.map.get_mut(session_id) else { return };
        let before = entry.bytes;
        match bytes {
            Some(bytes) => {
                entry.bytes = bytes;
                sessions.bytes = sessions.bytes.saturating_sub(before) + bytes;
            }
            None => sessions.remove(session_id),
        }
        let keep = (self.budget > 0).then_some(session_id);
        sessions.evict_to(self.budget, keep);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What of the active epoch decides the projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct EpochKey {
    epoch: i64,
    history_from: i64,
    begins_at: i64,
}

impl EpochKey {
    fn of(epoch: &ContextEpoch) -> Self {
        Self { epoch: epoch.epoch, history_from: epoch.history_from, begins_at: epoch.begins_at }
    }

    /// Whether a message at `seq` with `info` is part of the projection (the store's rule).
    fn includes(key: Option<Self>, seq: i64, info: &MessageInfo) -> bool {
        let (history_from, system_from) = key.map_or((0, 0), |k| (k.history_from, k.begins_at));
        seq >= history_from && (!matches!(info, MessageInfo::System(_)) || seq >= system_from)
    }
}

/// One entry's request messages and their JSON size.
#[derive(Debug, Clone)]
struct Converted {
    messages: Vec<Message>,
    chars: u64,
    /// Estimated memory of the entry and its request messages.
    bytes: u64,
}

struct Cached {
    /// The store's event sequence the cache reflects.
    seq: i64,
    key: Option<EpochKey>,
    /// Must be reloaded before use.
    stale: bool,
    history: Vec<MessageWithParts>,
    /// Parallel to `history`; `None` when the entry (or its neighbour) changed since conversion.
    converted: Vec<Option<Converted>>,
    /// Ids of messages that events named but the cache does not hold (new, or hidden by the projection).
    pending: BTreeSet<String>,
}

impl Cached {
    fn stale() -> Self {
        Self { seq: 0, key: None, stale: true, history: Vec::new(), converted: Vec::new(), pending: BTreeSet::new() }
    }

    fn load(r: &Reader<'_>, session_id: &str, seq: i64, key: Option<EpochKey>) -> opencode_session_store::Result<Self> {
        let history = r.full_history(session_id)?;
        let converted = vec![None; history.len()];
        Ok(Self { seq, key, stale: false, history, converted, pending: BTreeSet::new() })
    }

    fn valid_for(&self, seq: i64, key: Option<EpochKey>, no_revert: bool) -> bool {
        !self.stale && self.seq == seq && self.key == key && no_revert
    }

    /// Reads the messages events named but the cache does not hold, in the checking transaction.
    fn resolve(&mut self, r: &Reader<'_>, session_id: &str) -> opencode_session_store::Result<()> {
        for id in std::mem::take(&mut self.pending) {
            let Some(message) = r.message(&id)? else { continue };
            if message.info.session_id() != session_id || !EpochKey::includes(self.key, message.seq, &message.info) {
                continue;
            }
            let at = self.history.partition_point(|m| m.seq < message.seq);
            if self.history.get(at).is_some_and(|m| m.seq == message.seq) {
                self.history[at] = message;
            } else {
                self.history.insert(at, message);
                self.converted.insert(at, None);
            }
            self.touched(at);
        }
        Ok(())
    }

    fn apply(&mut self, event: &Event) {
        if self.stale || event.seq <= self.seq {
            return;
        }
        if event.seq != self.seq + 1 {
            self.stale = true;
            return;
        }
        self.seq = event.seq;
        if !self.apply_kind(event) {
            self.stale = true;
        }
    }

    /// Applies one in-sequence event; `false` when the cache cannot follow it exactly.
    fn apply_kind(&mut self, event: &Event) -> bool {
        match &event.kind {
            EventKind::MessageUpdated => {
                let Some(info) = decode::<MessageInfo>(event, "info") else { return false };
                match self.position(info.id()) {
                    Some(at) => {
                        self.history[at].info = info;
                        self.touched(at);
                    }
                    None => {
                        self.pending.insert(info.id().to_owned());
                    }
                }
                true
            }
            EventKind::PartUpdated => {
                let Some(part) = decode::<Part>(event, "part") else { return false };
                let Some(at) = self.position(&part.message_id) else {
                    self.pending.insert(part.message_id);
                    return true;
                };
                let parts = &mut self.history[at].parts;
                match parts.iter_mut().find(|p| p.id == part.id) {
                    Some(slot) => *slot = part,
                    None => parts.push(part),
                }
                self.touched(at);
                true
            }
            EventKind::PartRemoved => {
                let (Some(message), Some(part)) = (field(event, "messageID"), field(event, "partID")) else {
                    return false;
                };
                if let Some(at) = self.position(message) {
                    self.history[at].parts.retain(|p| p.id != part);
                    self.touched(at);
                }
                true
            }
            EventKind::MessageRemoved => {
                let Some(message) = field(event, "messageID") else { return false };
                self.pending.remove(message);
                if let Some(at) = self.position(message) {
                    self.history.remove(at);
                    self.converted.remove(at);
                    self.touched(at.saturating_sub(1));
                    if at < self.history.len() {
                        self.touched(at);
                    }
                }
                true
            }
            // A staged revert hides history from a message on (committing one removes rows with events).
            EventKind::SessionUpdated => {
                event.data.get("info").and_then(|info| info.get("revert")).is_none_or(Value::is_null)
            }
            // Events that never change messages or parts.
            EventKind::SessionCreated
            | EventKind::SessionDiff
            | EventKind::SessionError
            | EventKind::PromptAdmitted
            | EventKind::Prompted
            | EventKind::ContextUpdated
            | EventKind::CompactionStarted
            | EventKind::CompactionEnded
            | EventKind::Retried
            | EventKind::PermissionAsked
            | EventKind::PermissionReplied
            | EventKind::TodoUpdated => true,
            EventKind::Unknown(_) => false,
        }
    }

    fn position(&self, message_id: &str) -> Option<usize> {
        // New activity is almost always at the end.
        self.history.iter().rposition(|m| m.info.id() == message_id)
    }

    /// Entry `at` changed: its conversion and its predecessor's (a compaction reads the next entry) go.
    fn touched(&mut self, at: usize) {
        if let Some(slot) = self.converted.get_mut(at) {
            *slot = None;
        }
        if let Some(slot) = at.checked_sub(1).and_then(|before| self.converted.get_mut(before)) {
            *slot = None;
        }
    }

    /// Estimated memory held: every entry converted since its last change counts its sizes, the
    /// others (changed since the last turn) an overhead only until the next turn converts them.
    fn bytes(&self) -> u64 {
        let entries: u64 = self
            .converted
            .iter()
            .map(|converted| converted.as_ref().map_or(ENTRY_OVERHEAD, |converted| converted.bytes))
            .sum();
        let pending: u64 = self.pending.iter().map(|id| id.len() as u64 + 32).sum();
        SESSION_OVERHEAD + entries + pending
    }

    fn projected(&mut self, epoch: Option<ContextEpoch>, reloaded: bool) -> Projected {
        let mut messages = Vec::with_capacity(self.history.len() + self.history.len() / 2);
        let mut message_chars = 0;
        for index in 0..self.history.len() {
            let converted = match &self.converted[index] {
                Some(converted) => converted,
                None => {
                    let mut out = Vec::new();
                    history::convert_at(&self.history, index, &mut out);
                    let chars = out.iter().map(json_len).sum();
                    let bytes = chars + json_len(&self.history[index]) + ENTRY_OVERHEAD;
                    self.converted[index].insert(Converted { messages: out, chars, bytes })
                }
            };
            messages.extend(converted.messages.iter().cloned());
            message_chars += converted.chars;
        }
        let parent =
            self.history.iter().rev().find(|m| matches!(m.info, MessageInfo::User(_))).map(|m| m.info.id().to_owned());
        Projected { messages, message_chars, parent, epoch, reloaded }
    }
}

fn decode<T: serde::de::DeserializeOwned>(event: &Event, key: &str) -> Option<T> {
    T::deserialize(event.data.get(key)?).ok()
}

fn field<'e>(event: &'e Event, key: &str) -> Option<&'e str> {
    event.data.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly by design")]

    use opencode_session_store::GLOBAL_PROJECT;
    use opencode_session_store::NewSession;
    use opencode_session_store::id;
    use opencode_session_store::id::IdKind;
    use serde_json::json;

    use super::*;

    /// A store with `sessions` sessions of one user message each, whose text is `size` bytes.
    fn store_with(sessions: usize, size: usize) -> (tempfile::TempDir, Store, Vec<String>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("db")).unwrap();
        let ids = (0..sessions)
            .map(|_| {
                store
                    .write(|tx| {
                        tx.ensure_global_project()?;
                        let session = tx.create_session(NewSession::new(GLOBAL_PROJECT, "/work"))?;
                        let message = id::ascending(IdKind::Message);
                        let info: MessageInfo = serde_json::from_value(json!({
                            "id": message, "sessionID": session.id, "role": "user", "time": {"created": 1},
                            "agent": "build", "model": {"providerID": "p", "modelID": "m"}
                        }))
                        .unwrap();
                        tx.append_message(&info)?;
                        let part: Part = serde_json::from_value(json!({
                            "id": id::ascending(IdKind::Part), "sessionID": session.id, "messageID": message,
                            "type": "text", "text": "x".repeat(size)
                        }))
                        .unwrap();
                        tx.upsert_part(&part)?;
                        Ok(session.id)
                    })
                    .unwrap()
            })
            .collect();
        (dir, store, ids)
    }

    /// Whether `session` is served from memory (checking it marks it used).
    fn held(cache: &HistoryCache, store: &Store, session: &str) -> bool {
        cache.held(store, session).unwrap().is_some()
    }

    #[test]
    fn the_least_recently_used_session_goes_when_the_budget_is_exceeded() {
        let (_dir, store, ids) = store_with(3, 30_000);
        let probe = HistoryCache::new(u64::MAX);
        probe.projected(&store, &ids[0]).unwrap();
        let one = probe.report().bytes;
        assert!(one > 60_000, "a session counts its history and its request messages: {one}");

        // Room for two sessions, not three.
        let cache = HistoryCache::new(one * 2 + one / 2);
        for id in &ids {
            assert!(cache.projected(&store, id).unwrap().reloaded);
        }
        let report = cache.report();
        assert_eq!((report.sessions, report.evicted), (2, 1));
        assert!(report.bytes <= report.budget, "{report:?}");
        // The first one went; the two others are served from memory.
        assert!(held(&cache, &store, &ids[2]));
        assert!(held(&cache, &store, &ids[1]));
        assert!(!held(&cache, &store, &ids[0]), "the evicted session is reloaded");
        // Reloading the first evicted the least recently used of the others: ids[2].
        assert!(held(&cache, &store, &ids[1]));
        assert!(!held(&cache, &store, &ids[2]));
    }

    #[test]
    fn a_session_in_use_is_not_evicted_and_the_last_used_stays_even_beyond_the_budget() {
        let (_dir, store, ids) = store_with(3, 10_000);
        let cache = HistoryCache::new(1);
        // Someone is checking ids[0] right now (holds its entry).
        let in_use = cache.entry(&ids[0]);
        cache.projected(&store, &ids[1]).unwrap();
        assert_eq!(cache.report().sessions, 2, "ids[0] is in use, ids[1] was just used");
        cache.projected(&store, &ids[2]).unwrap();
        assert_eq!(cache.report().sessions, 2, "ids[1] went, ids[0] is still in use");
        assert!(!held(&cache, &store, &ids[1]));
        drop(in_use);
        cache.projected(&store, &ids[2]).unwrap();
        assert_eq!(cache.report().sessions, 1, "only the last used is left");
        assert!(held(&cache, &store, &ids[2]));
    }

    #[test]
    fn a_zero_budget_keeps_nothing_between_turns_and_every_turn_reloads() {
        let (_dir, store, ids) = store_with(1, 100);
        let cache = HistoryCache::new(0);
        let first = cache.projected(&store, &ids[0]).unwrap();
        let second = cache.projected(&store, &ids[0]).unwrap();
        assert!(first.reloaded && second.reloaded);
        assert_eq!(first.messages, second.messages);
        let report = cache.report();
        assert_eq!((report.sessions, report.bytes, report.evicted), (0, 0, 2));
    }

    #[test]
    fn idle_sessions_go_and_those_with_a_drain_stay() {
        let (_dir, store, ids) = store_with(3, 100);
        let before_use = Instant::now();
        let cache = HistoryCache::new(u64::MAX);
        for id in &ids {
            cache.projected(&store, id).unwrap();
        }
        let later = Instant::now() + std::time::Duration::from_secs(1);
        // Nothing was used before `before_use`.
        assert_eq!(cache.evict_idle(Some(before_use), &[]), 0);
        assert_eq!(cache.evict_idle(Some(later), std::slice::from_ref(&ids[1])), 2);
        let report = cache.report();
        assert_eq!((report.sessions, report.evicted), (1, 2));
        assert!(held(&cache, &store, &ids[1]));
        assert_eq!(cache.report().bytes, report.bytes, "the kept session still counts what it holds");
    }

    #[test]
    fn the_total_follows_sessions_that_grow_and_leave() {
        let (_dir, store, ids) = store_with(2, 1_000);
        let cache = HistoryCache::new(u64::MAX);
        cache.projected(&store, &ids[0]).unwrap();
        let one = cache.report().bytes;
        cache.projected(&store, &ids[1]).unwrap();
        assert_eq!(cache.report().bytes, one * 2, "two sessions of the same shape");
        cache.evict_idle(None, std::slice::from_ref(&ids[1]));
        assert_eq!(cache.report().bytes, one);
    }
}
