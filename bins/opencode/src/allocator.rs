//! The process's allocator: jemalloc, in place of glibc's malloc for Rust and C code alike (SQLite
//! included). Measured on `opencode serve` after 3,000 sessions with 50 at once and 10 s idle, glibc
//! held 60-69 MB in 16 arenas of which 31 MB was in use, and `malloc_trim` gave back only 9 MB
//! (docs/BENCHMARKS.md, "Memory of a long-lived server"): freed memory stayed in the arenas of a burst
//! of blocking threads long gone. jemalloc is configured at build time (`.cargo/config.toml`:
//! one arena, no thread caches, a 1 s decay; `MALLOC_CONF` overrides it at run time): with its own
//! defaults it fragmented worse than glibc on that load. Its background thread returns freed pages
//! while the process is idle, and its statistics are reported by `/global/health`.
//!
//! Shared by the `opencode` and `opencode-server` binaries; only binaries choose the allocator.
//! jemalloc does not build for MSVC, so Windows keeps the system allocator (and reports none).

#[cfg(target_env = "msvc")]
pub fn serve() {}

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// For long-lived processes (servers): starts the background purging and reports the allocator's
/// statistics in `/global/health`.
#[cfg(not(target_env = "msvc"))]
pub fn serve() {
    if let Err(err) = tikv_jemalloc_ctl::background_thread::write(true) {
        eprintln!(
            "warning: jemalloc's background thread did not start ({err}); freed memory returns only as memory is used"
        );
    }
    opencode_http_api::report_allocator(report);
}

/// jemalloc's view, in bytes: `allocated` (live allocations), `active` (their pages), `resident`
/// (pages the allocator holds in memory, metadata included), `retained` (address space kept for
/// reuse, not resident).
#[cfg(not(target_env = "msvc"))]
fn report() -> serde_json::Value {
    use tikv_jemalloc_ctl::stats;
    // Statistics are a snapshot taken when the epoch advances.
    if tikv_jemalloc_ctl::epoch::advance().is_err() {
        return serde_json::Value::Null;
    }
    serde_json::json!({
        "name": "jemalloc",
        "allocated": stats::allocated::read().ok(),
        "active": stats::active::read().ok(),
        "resident": stats::resident::read().ok(),
        "metadata": stats::metadata::read().ok(),
        "retained": stats::retained::read().ok(),
        "background_thread": tikv_jemalloc_ctl::background_thread::read().ok(),
    })
}
