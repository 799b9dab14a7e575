//! `core/date`: the host-local calendar date; its update states only the newly effective date.

use std::sync::Arc;

use super::DATE;
use crate::key::SourceKey;
use crate::source::ContextSource;
use crate::source::Loaded;

/// A calendar date (proleptic Gregorian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CalendarDate {
    pub year: i16,
    pub month: i8,
    pub day: i8,
}

type Clock = Arc<dyn Fn() -> CalendarDate + Send + Sync>;

/// The date source. Its value is the date as JavaScript's `Date.toDateString()` writes it
/// (`Tue Nov 24 2026`), which is what OpenCode stores and shows.
#[derive(Clone)]
pub struct DateSource {
    key: SourceKey,
    today: Clock,
}

impl DateSource {
    /// Today in the host's local time zone (UTC when the zone cannot be determined).
    pub fn host_local() -> Self {
        Self::with_clock(|| {
            let today = jiff::Zoned::now().date();
            CalendarDate { year: today.year(), month: today.month(), day: today.day() }
        })
    }

    /// Today according to `today` (tests inject a fixed or scripted clock).
    pub fn with_clock(today: impl Fn() -> CalendarDate + Send + Sync + 'static) -> Self {
        Self { key: SourceKey::builtin(DATE), today: Arc::new(today) }
    }
}

impl ContextSource for DateSource {
    type Value = String;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<String> {
        let CalendarDate { year, month, day } = (self.today)();
        match jiff::civil::Date::new(year, month, day) {
            Ok(date) => Loaded::Value(date.strftime("%a %b %d %Y").to_string()),
            // A clock that cannot name a real day is a temporary observation failure, not a removal.
            Err(_) => Loaded::Unavailable,
        }
    }

    fn baseline(&self, current: &String) -> String {
        format!("Today's date: {current}")
    }

    fn update(&self, _previous: &String, current: &String) -> String {
        format!("Today's date is now: {current}")
    }
}
