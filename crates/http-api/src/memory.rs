//! What `GET /global/health` reports of the server's memory (opencode-rs only): the process's
//! resident memory, the driver's caches (the session runtime's projected histories with their
//! budget, open Locations) and, when the binary registered one, its allocator's statistics.

use std::sync::OnceLock;

use serde_json::Value;
use serde_json::json;

use crate::driver::SessionDriver;

static ALLOCATOR: OnceLock<fn() -> Value> = OnceLock::new();

/// Registers the function reporting the process's allocator (the binary that chose the allocator
/// knows how to ask it); the first registration wins.
pub fn report_allocator(report: fn() -> Value) {
    // A second registration is ignored: one process has one allocator.
    let _first = ALLOCATOR.set(report);
}

/// `memory` of `/global/health`.
pub(crate) fn report(driver: &dyn SessionDriver) -> Value {
    json!({
        "rss": resident_bytes(),
        "runtime": driver.memory(),
        "allocator": ALLOCATOR.get().map(|report| report()),
    })
}

/// The process's resident memory in bytes (Linux), `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|line| line.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}
