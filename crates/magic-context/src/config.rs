//! The `magic_context` section of the configuration. Absent, `false` or `{"enabled": false}` means
//! off: nothing of Magic Context runs and requests are exactly what they are without it.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;

/// Magic Context's settings, with the defaults of the reference design.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MagicContextConfig {
    pub enabled: bool,
    /// Whether the agent sees `§N§` tags and the `ctx_reduce` tool.
    pub ctx_reduce_enabled: bool,
    /// The provider's cache lifetime in seconds: an idle gap longer than this means the cache is
    /// already dead, so pending work runs for free.
    pub cache_ttl_seconds: u64,
    /// The lifetime asked for the baseline's breakpoint (m[0], and the system prompt and tools
    /// before it): 3600 keeps the stable prefix cached across pauses of up to an hour, at twice
    /// the base price for its (rare) writes instead of 1.25 times; `cache_ttl_seconds` turns it off.
    pub baseline_cache_ttl_seconds: u64,
    /// Usage (percent of the context window) from which a pass executes pending work.
    pub execute_threshold_percentage: u8,
    /// The context window in tokens assumed when the embedder gives no per-model limit.
    pub context_limit: u64,
    /// At most this many newest tags are never dropped (fewer once they hold 5% of the window).
    pub protected_tags: u32,
    /// Tool outputs older than this many tags are dropped on the next executing pass.
    pub auto_drop_tool_age: u32,
    /// Share of the usable window the rendered history (m[0] + m[1]) may take.
    pub history_budget_percentage: f64,
    /// User turns at the end of the session that compartments never cover.
    pub protected_user_turns: usize,
    /// Tokens of the system prompt and tool definitions, which message transforms do not see.
    pub overhead_tokens: u64,
    /// Where `context.db` lives (default: the data directory's `magic-context/`).
    pub data_dir: Option<PathBuf>,
}

impl Default for MagicContextConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            ctx_reduce_enabled: true,
            cache_ttl_seconds: 300,
            baseline_cache_ttl_seconds: 3600,
            execute_threshold_percentage: 65,
            context_limit: 200_000,
            protected_tags: 20,
            auto_drop_tool_age: 100,
            history_budget_percentage: 0.15,
            protected_user_turns: 3,
            overhead_tokens: 10_000,
            data_dir: None,
        }
    }
}

/// Usage from which queued and heuristic drops run even mid tool loop.
pub const FORCE_PERCENTAGE: f64 = 85.0;
/// Usage from which the pass waits for the historian before it answers.
pub const BLOCK_PERCENTAGE: f64 = 95.0;

impl MagicContextConfig {
    /// Reads the section as written (`true`, `false` or an object); `None` when it is absent or
    /// turns Magic Context off.
    pub fn from_section(section: Option<&Value>) -> Result<Option<Self>, Error> {
        let config = match section {
            None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(None),
            Some(Value::Bool(true)) => Self::default(),
            Some(value) => Self::deserialize(value).map_err(|err| Error::Config(err.to_string()))?,
        };
        config.validate()?;
        Ok(config.enabled.then_some(config))
    }

    /// Reads `magic_context` from a loaded configuration.
    pub fn from_config(config: &opencode_config::Config) -> Result<Option<Self>, Error> {
        Self::from_section(config.magic_context.as_ref())
    }

    fn validate(&self) -> Result<(), Error> {
        if !(20..=90).contains(&self.execute_threshold_percentage) {
            return Err(Error::Config(format!(
                "execute_threshold_percentage must be 20..=90, got {}",
                self.execute_threshold_percentage
            )));
        }
        if self.context_limit < 8_000 {
            return Err(Error::Config(format!(
                "context_limit must be at least 8000 tokens, got {}",
                self.context_limit
            )));
        }
        if !(self.cache_ttl_seconds..=3600).contains(&self.baseline_cache_ttl_seconds) {
            return Err(Error::Config(format!(
                "baseline_cache_ttl_seconds must be from cache_ttl_seconds ({}) to 3600, got {}",
                self.cache_ttl_seconds, self.baseline_cache_ttl_seconds
            )));
        }
        if !(0.01..=0.5).contains(&self.history_budget_percentage) {
            return Err(Error::Config("history_budget_percentage must be within 0.01..=0.5".into()));
        }
        Ok(())
    }

    pub(crate) fn ttl_ms(&self) -> u64 {
        self.cache_ttl_seconds.saturating_mul(1000)
    }

    pub(crate) fn baseline_ttl_ms(&self) -> u64 {
        self.baseline_cache_ttl_seconds.saturating_mul(1000)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_or_false_is_off() {
        assert_eq!(MagicContextConfig::from_section(None).unwrap(), None);
        assert_eq!(MagicContextConfig::from_section(Some(&json!(false))).unwrap(), None);
        assert_eq!(MagicContextConfig::from_section(Some(&json!({"enabled": false}))).unwrap(), None);
    }

    #[test]
    fn true_or_an_object_is_on_with_defaults_for_what_it_leaves_out() {
        assert_eq!(MagicContextConfig::from_section(Some(&json!(true))).unwrap(), Some(MagicContextConfig::default()));
        let config = MagicContextConfig::from_section(Some(&json!({"context_limit": 64000}))).unwrap().unwrap();
        assert_eq!(config.context_limit, 64_000);
        assert_eq!(config.execute_threshold_percentage, 65);
    }

    #[test]
    fn bad_values_are_one_line_errors() {
        let error = MagicContextConfig::from_section(Some(&json!({"execute_threshold_percentage": 99}))).unwrap_err();
        assert_eq!(error.to_string(), "magic_context config: execute_threshold_percentage must be 20..=90, got 99");
        let error = MagicContextConfig::from_section(Some(&json!({"baseline_cache_ttl_seconds": 7200}))).unwrap_err();
        assert_eq!(
            error.to_string(),
            "magic_context config: baseline_cache_ttl_seconds must be from cache_ttl_seconds (300) to 3600, got 7200"
        );
        let error = MagicContextConfig::from_section(Some(&json!({"ttl": 3}))).unwrap_err();
        assert!(error.to_string().starts_with("magic_context config: unknown field `ttl`"), "{error}");
    }
}
