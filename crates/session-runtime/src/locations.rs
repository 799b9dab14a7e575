//! The runtime's table of open Locations, by directory: opened on first use, reloaded (dropped, or
//! marked until no drain holds them), shut down when idle; their MCP events relayed with the
//! directory.

use std::collections::HashMap;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::PoisonError;
use std::sync::Weak;
use std::time::Duration;
use std::time::Instant;

use opencode_mcp::McpManager;
use tokio::sync::broadcast;

use crate::error::Result;
use crate::location::Location;
use crate::runtime::Inner;

/// What [`SessionRuntime::reload_location`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// The Location was dropped (its MCP servers stopped); its next use opens it again.
    Disposed,
    /// A drain of the directory still holds the Location: it is dropped once none does, and opened
    /// again at the next use after that.
    Deferred,
    /// No Location was open for the directory: its next use loads the current configuration anyway.
    NotOpen,
}

/// An open Location, and whether it is to be reopened once no drain holds it.
pub(crate) struct Opened {
    pub(crate) location: Arc<Location>,
    pub(crate) stale: bool,
    /// When it was last handed out.
    pub(crate) used: Instant,
}

impl Opened {
    /// Whether anyone but the runtime's table holds the Location. Clones are only handed out under
    /// the table's lock, so a count of one under that lock means nobody can be using it.
    pub(crate) fn in_use(&self) -> bool {
        Arc::strong_count(&self.location) > 1
    }
}

impl Inner {
    /// The Location of `directory`, opened on first use and kept until it is reloaded.
    pub(crate) fn location(&self, directory: &str) -> Result<Arc<Location>> {
        let key = PathBuf::from(directory);
        let mut locations = self.open_locations();
        if let Some(opened) = locations.get_mut(&key)
            && (!opened.stale || opened.in_use())
        {
            opened.used = Instant::now();
            return Ok(Arc::clone(&opened.location));
        }
        let location = Arc::new(self.location_factory.open(&key)?);
        tracing::info!(directory = %key.display(), "location opened");
        let subagents = crate::subagent::Subagents::new(Weak::clone(&self.me));
        location.tools.attach_subagents(Arc::new(subagents), &self.agents);
        if let Some(mcp) = location.tools.mcp() {
            self.relay_mcp_events(&key, &mcp);
        }
        let retired =
            locations.insert(key, Opened { location: Arc::clone(&location), stale: false, used: Instant::now() });
        // A stale Location is dropped after the lock is released: stopping MCP servers takes a moment.
        drop(locations);
        drop(retired);
        Ok(location)
    }

    /// Relays the events of a Location's MCP servers onto [`SessionRuntime::mcp_events`] until the
    /// servers are dropped with their Location.
    pub(crate) fn relay_mcp_events(&self, directory: &Path, mcp: &McpManager) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let (mut events, out, directory) = (mcp.events(), self.mcp_events.clone(), directory.to_path_buf());
        runtime.spawn(async move {
            loop {
                match events.recv().await {
                    // Nobody listening is fine.
                    Ok(event) => drop(out.send((directory.clone(), event))),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, directory = %directory.display(), "MCP events were dropped");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Drops `directory`'s Location now, or marks it for when no drain holds it.
    pub(crate) fn reload(&self, directory: &Path) -> Reload {
        let reloaded = self.reload_where(|open| open == directory);
        reloaded.first().map_or(Reload::NotOpen, |(_, reload)| *reload)
    }

    /// Drops the Locations of the directories `which` selects, or marks those a drain holds.
    pub(crate) fn reload_where(&self, which: impl Fn(&Path) -> bool) -> Vec<(PathBuf, Reload)> {
        let mut locations = self.open_locations();
        let mut retired = Vec::new();
        let mut reloaded = Vec::new();
        let selected: Vec<PathBuf> = locations.keys().filter(|open| which(open)).cloned().collect();
        for directory in selected {
            let Some(opened) = locations.get_mut(&directory) else { continue };
            let reload = if opened.in_use() {
                opened.stale = true;
                Reload::Deferred
            } else {
                retired.extend(locations.remove(&directory));
                Reload::Disposed
            };
            tracing::info!(directory = %directory.display(), ?reload, "location reloaded");
            reloaded.push((directory, reload));
        }
        // Dropped after the lock is released: stopping MCP servers takes a moment.
        drop(locations);
        drop(retired);
        reloaded
    }

    /// Drops the Locations marked for reload that no drain holds any more.
    pub(crate) fn retire_stale(&self) {
        let mut locations = self.open_locations();
        let done: Vec<PathBuf> = locations
            .iter()
            .filter(|(_, opened)| opened.stale && !opened.in_use())
            .map(|(directory, _)| directory.clone())
            .collect();
        let retired: Vec<Opened> = done.iter().filter_map(|directory| locations.remove(directory)).collect();
        drop(locations);
        for directory in &done {
            tracing::info!(directory = %directory.display(), "location disposed after its drains ended");
        }
        drop(retired);
    }

    /// Shuts down the Locations no drain holds that were last used `idle` or longer before `now`
    /// (their tools go, MCP servers and language servers stop); their next use opens them again.
    /// How many were shut down.
    pub(crate) fn retire_idle(&self, now: Instant, idle: Duration) -> usize {
        let mut locations = self.open_locations();
        let done: Vec<PathBuf> = locations
            .iter()
            .filter(|(_, opened)| !opened.in_use() && now.saturating_duration_since(opened.used) >= idle)
            .map(|(directory, _)| directory.clone())
            .collect();
        let retired: Vec<Opened> = done.iter().filter_map(|directory| locations.remove(directory)).collect();
        drop(locations);
        for directory in &done {
            tracing::info!(directory = %directory.display(), idle_seconds = idle.as_secs(), "location shut down after being idle");
        }
        // Dropped after the lock is released: stopping MCP servers takes a moment.
        drop(retired);
        done.len()
    }

    pub(crate) fn open_locations(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Opened>> {
        self.locations.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
