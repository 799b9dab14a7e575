//! What a long-lived runtime keeps in memory, bounded: the projected-history caches have a byte
//! budget (least recently used idle sessions go first) and forget sessions idle for a while; a
//! Location no session used for a while is shut down (its tools, MCP servers and language servers
//! with it) and opened again by its next use; SQLite's page caches are released when the runtime has
//! nothing to do. A background sweep applies the time limits. Everything dropped is rebuilt from the
//! store on next use, exactly as after a restart: the "reload projected history before each provider
//! turn" invariant already allows it.

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use opencode_config::MemoryConfig;
use serde::Serialize;

use crate::runtime::Inner;

/// How much the runtime keeps in memory, and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryOptions {
    /// Estimated bytes of projected history kept across all sessions; beyond it the least recently
    /// used sessions not being read are dropped (the session of the latest turn stays, even alone
    /// beyond the budget). 0 keeps none between turns.
    pub history_budget: u64,
    /// A session's projected history is dropped after this long without use (`None`: only the
    /// budget applies).
    pub session_idle: Option<Duration>,
    /// A Location that no session used for this long, and that no drain holds, is shut down
    /// (`None`: Locations stay open until reloaded).
    pub location_idle: Option<Duration>,
}

/// The history budget when config sets none.
pub const DEFAULT_HISTORY_BUDGET: u64 = 4 * 1024 * 1024;
/// How long a session's history stays cached without use when config says nothing.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);
/// How long an unused Location stays open when config says nothing.
pub const DEFAULT_LOCATION_IDLE: Duration = Duration::from_secs(900);

const MIN_SWEEP_PERIOD: Duration = Duration::from_millis(250);
const MAX_SWEEP_PERIOD: Duration = Duration::from_secs(2);

impl Default for MemoryOptions {
    fn default() -> Self {
        Self {
            history_budget: DEFAULT_HISTORY_BUDGET,
            session_idle: Some(DEFAULT_SESSION_IDLE),
            location_idle: Some(DEFAULT_LOCATION_IDLE),
        }
    }
}

impl MemoryOptions {
    /// These options with what config `memory` sets applied over them.
    pub fn with_config(mut self, config: Option<&MemoryConfig>) -> Self {
        let Some(config) = config else { return self };
        if let Some(mb) = config.history_cache_mb {
            // Negative or NaN budgets keep nothing; `as` saturates huge ones.
            self.history_budget = (mb.max(0.0) * 1024.0 * 1024.0) as u64;
        }
        let seconds = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        if let Some(idle) = config.session_idle_seconds {
            self.session_idle = seconds(idle);
        }
        if let Some(idle) = config.location_idle_seconds {
            self.location_idle = seconds(idle);
        }
        self
    }

    /// How often the background sweep runs: a quarter of the shortest idle time, between 250 ms
    /// and 2 s (so that a server gone quiet releases SQLite's caches within a few seconds).
    pub(crate) fn sweep_period(&self) -> Duration {
        let shortest = [self.session_idle, self.location_idle].into_iter().flatten().min();
        shortest.map_or(MAX_SWEEP_PERIOD, |shortest| (shortest / 4).clamp(MIN_SWEEP_PERIOD, MAX_SWEEP_PERIOD))
    }
}

/// What the runtime holds in memory now ([`crate::SessionRuntime::memory`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryReport {
    pub history: HistoryReport,
    /// Open Locations (each with its tools, MCP servers and language servers).
    pub locations: usize,
    /// Sessions with a drain in progress.
    pub active_sessions: usize,
}

/// The projected-history caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HistoryReport {
    /// Sessions whose projected history is held.
    pub sessions: usize,
    /// Their estimated size in bytes.
    pub bytes: u64,
    /// The budget in bytes.
    pub budget: u64,
    /// Sessions dropped so far (budget or idle time), each reloaded from the store by its next turn.
    pub evicted: u64,
}

/// Starts the background sweep of `inner` (on the current tokio runtime; none outside one). It
/// holds the runtime weakly and ends with it.
pub(crate) fn start_sweep(inner: &Arc<Inner>) {
    let period = inner.options.memory.sweep_period();
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
    let weak = Arc::downgrade(inner);
    handle.spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Provider turns seen at the previous tick, and when the store's caches were last released.
        let (mut last_uses, mut released_at) = (u64::MAX, None);
        loop {
            ticks.tick().await;
            let Some(inner) = weak.upgrade() else { return };
            sweep(&inner, Instant::now());
            // Quiet for a whole period after some work: SQLite's page caches go too (the next turn
            // reads its pages back from the file).
            let uses = inner.history.uses();
            if uses == last_uses && released_at != Some(uses) && inner.coordinator.active().is_empty() {
                let store = Arc::clone(&inner.store);
                drop(inner);
                let released = tokio::task::spawn_blocking(move || store.release_memory()).await;
                if released.is_ok() {
                    tracing::debug!("quiet: SQLite's page caches released");
                }
                released_at = Some(uses);
            }
            last_uses = uses;
        }
    });
}

/// One sweep: sessions and Locations idle past their limits are dropped. Whether anything was.
pub(crate) fn sweep(inner: &Inner, now: Instant) -> bool {
    let options = inner.options.memory;
    let active = inner.coordinator.active();
    let before = options.session_idle.and_then(|idle| now.checked_sub(idle));
    let sessions = before.map_or(0, |before| inner.history.evict_idle(Some(before), &active));
    let locations = options.location_idle.map_or(0, |idle| inner.retire_idle(now, idle));
    sessions + locations > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_overrides_what_it_sets_and_zero_turns_a_time_limit_off() {
        let config =
            MemoryConfig { history_cache_mb: Some(1.5), session_idle_seconds: Some(0), location_idle_seconds: None };
        let options = MemoryOptions::default().with_config(Some(&config));
        assert_eq!(options.history_budget, 1536 * 1024);
        assert_eq!(options.session_idle, None);
        assert_eq!(options.location_idle, Some(DEFAULT_LOCATION_IDLE));
        assert_eq!(MemoryOptions::default().with_config(None), MemoryOptions::default());
        let negative = MemoryConfig { history_cache_mb: Some(-3.0), ..MemoryConfig::default() };
        assert_eq!(MemoryOptions::default().with_config(Some(&negative)).history_budget, 0);
    }

    #[test]
    fn the_sweep_runs_often_enough_for_the_shortest_limit() {
        let options = |session: u64, location: u64| MemoryOptions {
            history_budget: 0,
            session_idle: (session > 0).then(|| Duration::from_secs(session)),
            location_idle: (location > 0).then(|| Duration::from_secs(location)),
        };
        assert_eq!(options(1, 900).sweep_period(), Duration::from_millis(250));
        assert_eq!(options(4, 0).sweep_period(), Duration::from_secs(1));
        assert_eq!(options(300, 900).sweep_period(), MAX_SWEEP_PERIOD);
        assert_eq!(options(0, 0).sweep_period(), MAX_SWEEP_PERIOD);
    }
}
