//! Globally unique identifiers that sort by creation time.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::SystemTime;
use std::time::UNIX_EPOCH;

/// `<prefix><millis hex><sequence hex><random hex>`: unique across processes, ascending within one.
pub(crate) fn ascending(prefix: &str) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed) & 0xffff;
    format!("{prefix}{millis:012x}{sequence:04x}{:08x}", fastrand::u32(..))
}
