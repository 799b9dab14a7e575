//! Retry policy as plain data; the mechanism is one small function.

use std::time::Duration;

use crate::LlmError;

/// How the client retries a request that failed before its response started streaming.
/// Failures after the first streamed byte are never retried here: events were already delivered,
/// so the caller decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry; doubles on each further one, with ±20 % jitter.
    pub base_delay: Duration,
    /// Upper bound of the exponential delay.
    pub max_delay: Duration,
    /// The longest `retry-after` the client will honour by waiting; a provider asking for longer
    /// gets its error returned (with `retry_after_ms`) instead of a silent long sleep.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self { max_retries: 0, ..Self::default() }
    }

    /// How long to wait before retry number `retry` (0-based) after `error`, or `None` to give up.
    pub fn delay(&self, retry: u32, error: &LlmError) -> Option<Duration> {
        if !error.retryable || retry >= self.max_retries {
            return None;
        }
        if let Some(wait) = error.retry_after() {
            return (wait <= self.max_retry_after).then_some(wait);
        }
        let exponential = self.base_delay.saturating_mul(2u32.saturating_pow(retry)).min(self.max_delay);
        Some(exponential.mul_f64(0.8 + fastrand::f64() * 0.4))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn backs_off_exponentially_with_jitter_and_gives_up() {
        let policy = RetryPolicy::default();
        let error = LlmError::new(ErrorKind::ProviderInternal, "overloaded");
        let first = policy.delay(0, &error).unwrap();
        let second = policy.delay(1, &error).unwrap();
        assert!((400..=600).contains(&first.as_millis()), "{first:?}");
        assert!((800..=1200).contains(&second.as_millis()), "{second:?}");
        assert_eq!(policy.delay(2, &error), None);
    }

    #[test]
    fn honours_retry_after_within_bounds() {
        let policy = RetryPolicy::default();
        let mut error = LlmError::new(ErrorKind::RateLimit, "slow down");
        error.retry_after_ms = Some(1500);
        assert_eq!(policy.delay(0, &error), Some(Duration::from_millis(1500)));
        error.retry_after_ms = Some(120_000);
        assert_eq!(policy.delay(0, &error), None);
    }

    #[test]
    fn terminal_errors_are_not_retried() {
        let error = LlmError::new(ErrorKind::QuotaExceeded, "no credits");
        assert_eq!(RetryPolicy::default().delay(0, &error), None);
    }
}
