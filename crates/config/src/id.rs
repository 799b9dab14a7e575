//! Prefixed, time-ordered identifiers in OpenCode's format (spec/03 §6).
//!
//! `<prefix>_<12 hex digits><14 base62 characters>`: the hex digits are the low 48 bits of
//! `milliseconds × 0x1000 + counter`, so ids made in the same process sort in creation order even within
//! one millisecond; descending ids invert those bits so that the newest sorts first. The random tail makes
//! ids from different processes distinct.

use std::sync::Mutex;
use std::sync::PoisonError;
use std::time::SystemTime;
use std::time::UNIX_EPOCH;

/// What an id identifies; the prefix is part of the id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdKind {
    Session,
    Message,
    Part,
    Permission,
    Question,
    Project,
    Event,
    Pty,
}

impl IdKind {
    /// The id prefix OpenCode uses for this kind.
    pub fn prefix(self) -> &'static str {
        match self {
            Self::Session => "ses",
            Self::Message => "msg",
            Self::Part => "prt",
            Self::Permission => "per",
            Self::Question => "que",
            Self::Project => "prj",
            Self::Event => "evt",
            Self::Pty => "pty",
        }
    }
}

/// A new id that sorts after every id this process made before (sessions use [`descending`]).
pub fn ascending(kind: IdKind) -> String {
    create(kind, false, now_ms())
}

/// A new id that sorts before every id this process made before: the newest session lists first.
pub fn descending(kind: IdKind) -> String {
    create(kind, true, now_ms())
}

/// The creation time (Unix milliseconds, modulo 2^36) of an ascending id; `None` for a malformed id.
pub fn timestamp(id: &str) -> Option<u64> {
    let (_, rest) = id.split_once('_')?;
    let hex = rest.get(..12)?;
    let encoded = u64::from_str_radix(hex, 16).ok()?;
    Some(encoded / 0x1000)
}

/// Whether `id` has `kind`'s prefix and the `<prefix>_<12 hex>…` shape.
pub fn has_kind(id: &str, kind: IdKind) -> bool {
    id.split_once('_').is_some_and(|(prefix, rest)| {
        prefix == kind.prefix() && rest.get(..12).is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// (last millisecond used, counter within it). Shared by every kind, as in the original.
static CLOCK: Mutex<(i64, u64)> = Mutex::new((0, 0));

const COUNTER_SPAN: u64 = 0x1000;
const LOW_48: u64 = (1 << 48) - 1;
const RANDOM_LEN: usize = 14;

fn create(kind: IdKind, descending: bool, now: i64) -> String {
    let packed = next_packed(now);
    let time = if descending { !packed & LOW_48 } else { packed & LOW_48 };
    let mut id = String::with_capacity(kind.prefix().len() + 1 + 12 + RANDOM_LEN);
    id.push_str(kind.prefix());
    id.push('_');
    id.push_str(&format!("{time:012x}"));
    id.extend(std::iter::repeat_with(fastrand::alphanumeric).take(RANDOM_LEN));
    id
}

/// `ms × 0x1000 + counter`, never going backwards: a clock step back reuses the last millisecond, and a
/// counter overflow borrows the next millisecond.
fn next_packed(now: i64) -> u64 {
    let mut clock = CLOCK.lock().unwrap_or_else(PoisonError::into_inner);
    let (last, counter) = *clock;
    let (ms, counter) = if now > last {
        (now, 1)
    } else if counter + 1 < COUNTER_SPAN {
        (last, counter + 1)
    } else {
        (last + 1, 1)
    };
    *clock = (ms, counter);
    u64::try_from(ms).unwrap_or(0).wrapping_mul(COUNTER_SPAN).wrapping_add(counter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascending_ids_sort_in_creation_order_within_one_millisecond() {
        let ids: Vec<String> = (0..5000).map(|_| create(IdKind::Message, false, 1_700_000_000_000)).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
    }

    #[test]
    fn descending_ids_sort_newest_first() {
        let older = create(IdKind::Session, true, 1_700_000_000_000);
        let newer = create(IdKind::Session, true, 1_700_000_000_500);
        assert!(newer < older, "{newer} should sort before {older}");
    }

    #[test]
    fn timestamp_is_recovered_from_an_ascending_id() {
        let ms = 1_700_000_123_456_i64;
        let id = create(IdKind::Part, false, ms);
        let expected = u64::try_from(ms).unwrap() % (1 << 36);
        assert_eq!(timestamp(&id), Some(expected));
        assert!(has_kind(&id, IdKind::Part));
        assert!(!has_kind(&id, IdKind::Message));
        assert_eq!(id.len(), "prt_".len() + 12 + RANDOM_LEN);
    }

    #[test]
    fn malformed_ids_have_no_timestamp() {
        assert_eq!(timestamp("msg_xyz"), None);
        assert_eq!(timestamp("nounderscore"), None);
    }
}
