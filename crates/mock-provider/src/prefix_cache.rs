//! Anthropic-style prompt caching, computed (not scripted) from request bodies.
//!
//! [`PrefixCache`] takes Anthropic Messages request bodies (`tools`, `system`, `messages`, with
//! `cache_control` markers) at moments of a simulated clock and answers the usage the provider
//! would bill, in its three disjoint fields. The rules it follows are Anthropic's published ones:
//!
//! - The prompt is one prefix in the order tools → system → messages, cut into content blocks
//!   (one per tool, system block and message content block). A block is identical when its bytes
//!   are, ignoring its own `cache_control` marker; the model is part of the key.
//! - At most [`MAX_BREAKPOINTS`] blocks may carry `cache_control`; more is a request error.
//! - A request reads the longest cached prefix that ends at one of its breakpoints or at one of
//!   the [`LOOKBACK_BLOCKS`] block boundaries before a breakpoint, written by an earlier request
//!   within its lifetime. A hit refreshes that entry's lifetime at no cost.
//! - Every breakpoint past the read point whose prefix is at least the model's minimum cacheable
//!   length is written: the tokens between the read point and the last such breakpoint are billed
//!   as cache creation. A shorter prefix silently does not cache (no error, zero fields).
//! - Lifetimes: 5 minutes by default, 1 hour for `"ttl": "1h"`.
//!
//! Token counts are estimated from bytes (four bytes a token, per block), which is what matters
//! for ratios between modes; the simulated clock is whatever `now` the caller passes.

use std::collections::HashMap;
use std::hash::DefaultHasher;
use std::hash::Hash;
use std::hash::Hasher;
use std::time::Duration;

use serde_json::Value;

/// Anthropic accepts at most four `cache_control` breakpoints per request.
pub const MAX_BREAKPOINTS: usize = 4;
/// How many block boundaries before a breakpoint are checked for an earlier write.
pub const LOOKBACK_BLOCKS: usize = 20;
/// The default cache lifetime.
pub const DEFAULT_TTL: Duration = Duration::from_secs(5 * 60);
/// The lifetime of `"ttl": "1h"` breakpoints.
pub const LONG_TTL: Duration = Duration::from_secs(60 * 60);

/// Usage as Anthropic reports it: three disjoint fields that sum to the prompt's tokens, plus the
/// split of the creation tokens by lifetime (they are billed differently).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Tokens neither read from nor written to the cache (billed at 1×).
    pub input_tokens: u64,
    /// Tokens written to the cache (billed at 1.25× for 5 minutes, 2× for 1 hour).
    pub cache_creation_input_tokens: u64,
    /// Tokens read from the cache (billed at 0.1×).
    pub cache_read_input_tokens: u64,
    /// Of the creation tokens, those written with the 1-hour lifetime.
    pub cache_creation_1h_tokens: u64,
}

impl CacheUsage {
    /// All prompt tokens of the request.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens
    }
}

/// Why a request body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixCacheError {
    #[error("request body is not an Anthropic Messages request: {0}")]
    Shape(String),
    #[error("a maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided, found {0}")]
    TooManyBreakpoints(usize),
}

/// The minimum cacheable prompt length of a model, in tokens (Anthropic's published table:
/// 4,096 for Haiku 4.5 and Opus 4.5/4.6, 2,048 for Haiku 3/3.5, 1,024 otherwise).
pub fn min_cacheable_tokens(model: &str) -> u64 {
    let model = model.to_ascii_lowercase();
    let long = ["haiku-4-5", "haiku-4.5", "opus-4-5", "opus-4.5", "opus-4-6", "opus-4.6"];
    if long.iter().any(|name| model.contains(name)) {
        4096
    } else if model.contains("haiku-3") || model.contains("3-haiku") || model.contains("3-5-haiku") {
        2048
    } else {
        1024
    }
}

/// Estimated tokens of `bytes` bytes of prompt.
pub fn estimate_tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The provider's cache: prefix entries keyed by model and prefix hash, each with its expiry.
#[derive(Debug, Default)]
pub struct PrefixCache {
    entries: HashMap<u64, Duration>,
    min_tokens: Option<u64>,
}

impl PrefixCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Overrides the per-model minimum cacheable length (tests of small prompts).
    #[must_use]
    pub fn with_min_tokens(mut self, tokens: u64) -> Self {
        self.min_tokens = Some(tokens);
        self
    }

    /// The prompt tokens of a request (without serving it): what a provider compares with the
    /// model's context window.
    pub fn prompt_tokens(body: &Value) -> Result<u64, PrefixCacheError> {
        let blocks = blocks(body)?;
        Ok(blocks.iter().map(|block| estimate_tokens(block.bytes.len())).sum())
    }

    /// Serves one request at simulated time `now` and returns its usage; writes and refreshes the
    /// cache entries the request's breakpoints call for.
    pub fn request(&mut self, body: &Value, now: Duration) -> Result<CacheUsage, PrefixCacheError> {
        let model = body.get("model").and_then(Value::as_str).ok_or_else(|| shape("no `model`"))?;
        let blocks = blocks(body)?;
        let breakpoints: Vec<usize> = blocks.iter().enumerate().filter_map(|(i, b)| b.ttl.map(|_| i)).collect();
        if breakpoints.len() > MAX_BREAKPOINTS {
            return Err(PrefixCacheError::TooManyBreakpoints(breakpoints.len()));
        }
        let chain = prefix_chain(model, &blocks);
        let total: u64 = chain.last().map_or(0, |link| link.tokens);
        self.entries.retain(|_, expiry| *expiry > now);
        let read = self.longest_hit(&chain, &blocks, &breakpoints, now);
        let read_tokens = read.map_or(0, |index| chain[index].tokens);
        let min = self.min_tokens.unwrap_or_else(|| min_cacheable_tokens(model));
        let (written, written_1h) = self.write(&chain, &blocks, &breakpoints, read, min, now);
        Ok(CacheUsage {
            input_tokens: total - read_tokens - written,
            cache_creation_input_tokens: written,
            cache_read_input_tokens: read_tokens,
            cache_creation_1h_tokens: written_1h,
        })
    }

    /// The furthest block index whose prefix is cached, searching each breakpoint and the
    /// boundaries up to [`LOOKBACK_BLOCKS`] before it; refreshes the entry it hits.
    fn longest_hit(&mut self, chain: &[Link], blocks: &[Block], breakpoints: &[usize], now: Duration) -> Option<usize> {
        let mut best: Option<usize> = None;
        for &point in breakpoints {
            let lowest = point.saturating_sub(LOOKBACK_BLOCKS - 1);
            let hit = (lowest..=point).rev().find(|&index| self.entries.contains_key(&chain[index].hash));
            if let Some(index) = hit
                && best.is_none_or(|best| index > best)
            {
                best = Some(index);
            }
        }
        // A hit uses every cached prefix of this request's breakpoints up to the read point, so
        // each of them is refreshed (not only the longest).
        if let Some(best) = best {
            let used = breakpoints.iter().copied().filter(|point| *point < best).chain([best]);
            for index in used {
                let ttl = blocks[index].ttl.unwrap_or(DEFAULT_TTL);
                if let Some(expiry) = self.entries.get_mut(&chain[index].hash) {
                    *expiry = (*expiry).max(now + ttl);
                }
            }
        }
        best
    }

    /// Writes every breakpoint past the read point that is long enough; returns the creation
    /// tokens (all, and those of 1-hour entries).
    fn write(
        &mut self,
        chain: &[Link],
        blocks: &[Block],
        breakpoints: &[usize],
        read: Option<usize>,
        min: u64,
        now: Duration,
    ) -> (u64, u64) {
        let start_tokens = read.map_or(0, |index| chain[index].tokens);
        let mut covered = start_tokens;
        let mut long = 0;
        for &point in breakpoints.iter().filter(|&&point| read.is_none_or(|read| point > read)) {
            if chain[point].tokens < min {
                continue;
            }
            let ttl = blocks[point].ttl.unwrap_or(DEFAULT_TTL);
            if ttl > DEFAULT_TTL {
                long += chain[point].tokens - covered;
            }
            covered = chain[point].tokens;
            self.entries.insert(chain[point].hash, now + ttl);
        }
        (covered - start_tokens, long)
    }
}

/// One content block of the prompt prefix.
struct Block {
    bytes: Vec<u8>,
    /// The lifetime its `cache_control` asks for, when it is a breakpoint.
    ttl: Option<Duration>,
}

/// The prefix ending at a block: its hash and its tokens.
struct Link {
    hash: u64,
    tokens: u64,
}

fn shape(what: &str) -> PrefixCacheError {
    PrefixCacheError::Shape(what.to_owned())
}

/// The prompt's blocks in prefix order: tools, system, then each message's content blocks.
fn blocks(body: &Value) -> Result<Vec<Block>, PrefixCacheError> {
    let mut out = Vec::new();
    for tool in body.get("tools").and_then(Value::as_array).into_iter().flatten() {
        out.push(block("tool", tool));
    }
    match body.get("system") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => out.push(block("system", &Value::String(text.clone()))),
        Some(Value::Array(parts)) => out.extend(parts.iter().map(|part| block("system", part))),
        Some(_) => return Err(shape("`system` is neither a string nor an array")),
    }
    let messages = body.get("messages").and_then(Value::as_array).ok_or_else(|| shape("no `messages` array"))?;
    for message in messages {
        let role = message.get("role").and_then(Value::as_str).ok_or_else(|| shape("a message has no `role`"))?;
        match message.get("content") {
            Some(Value::String(text)) => out.push(block(role, &Value::String(text.clone()))),
            Some(Value::Array(parts)) => {
                // The first block of a message carries the message boundary, so moving a block
                // from one message to the next is a change.
                for (index, part) in parts.iter().enumerate() {
                    let label = if index == 0 { format!("{role}:start") } else { role.to_owned() };
                    out.push(block(&label, part));
                }
            }
            _ => return Err(shape("a message has no `content`")),
        }
    }
    Ok(out)
}

fn block(label: &str, value: &Value) -> Block {
    let ttl = value.get("cache_control").map(|control| match control.get("ttl").and_then(Value::as_str) {
        Some("1h") => LONG_TTL,
        _ => DEFAULT_TTL,
    });
    let bytes = match value {
        Value::Object(fields) if fields.contains_key("cache_control") => {
            let mut fields = fields.clone();
            fields.remove("cache_control");
            serde_json::to_vec(&Value::Object(fields))
        }
        other => serde_json::to_vec(other),
    }
    .unwrap_or_default();
    let mut labelled = label.as_bytes().to_vec();
    labelled.push(0);
    labelled.extend(bytes);
    Block { bytes: labelled, ttl }
}

/// Running hashes and token counts of every prefix (the model seeds the chain: caches are per model).
fn prefix_chain(model: &str, blocks: &[Block]) -> Vec<Link> {
    let mut seed = DefaultHasher::new();
    model.hash(&mut seed);
    let mut hash = seed.finish();
    let mut tokens = 0;
    blocks
        .iter()
        .map(|block| {
            let mut hasher = DefaultHasher::new();
            hash.hash(&mut hasher);
            block.bytes.hash(&mut hasher);
            hash = hasher.finish();
            tokens += estimate_tokens(block.bytes.len());
            Link { hash, tokens }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    /// A body with `blocks` user text blocks of `size` bytes, breakpoints on the given blocks.
    fn body(model: &str, texts: &[String], breakpoints: &[usize]) -> Value {
        let content: Vec<Value> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let mut block = json!({"type": "text", "text": text});
                if breakpoints.contains(&i) {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                block
            })
            .collect();
        json!({"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": content}]})
    }

    fn texts(count: usize, size: usize) -> Vec<String> {
        (0..count).map(|i| format!("{i:04}{}", "x".repeat(size - 4))).collect()
    }

    fn tokens_of(texts: &[String], upto: usize) -> u64 {
        let body = body("m", &texts[..=upto], &[]);
        let blocks = blocks(&body).unwrap();
        blocks.iter().map(|block| estimate_tokens(block.bytes.len())).sum()
    }

    #[test]
    fn a_repeat_within_the_ttl_reads_the_prefix_the_first_request_wrote() {
        let mut cache = PrefixCache::new();
        let parts = texts(4, 4000);
        let first = cache.request(&body("claude-sonnet-4-5", &parts, &[2]), Duration::ZERO).unwrap();
        let upto = tokens_of(&parts, 2);
        assert_eq!(first.cache_read_input_tokens, 0);
        assert_eq!(first.cache_creation_input_tokens, upto);
        let second = cache.request(&body("claude-sonnet-4-5", &parts, &[2]), 4 * MIN).unwrap();
        assert_eq!(second.cache_read_input_tokens, upto);
        assert_eq!(second.cache_creation_input_tokens, 0);
        assert_eq!(second.total(), first.total());
        assert_eq!(second.input_tokens, second.total() - upto);
    }

    #[test]
    fn entries_expire_after_five_minutes_and_hits_refresh_them() {
        let mut cache = PrefixCache::new();
        let parts = texts(3, 6000);
        let request = body("claude-sonnet-4-5", &parts, &[2]);
        cache.request(&request, Duration::ZERO).unwrap();
        // A hit at 4 minutes refreshes the entry, so 8 minutes (4 after the hit) still hits.
        assert!(cache.request(&request, 4 * MIN).unwrap().cache_read_input_tokens > 0);
        assert!(cache.request(&request, 8 * MIN).unwrap().cache_read_input_tokens > 0);
        // 5 minutes and a second of idleness: the entry is gone and is written again.
        let cold = cache.request(&request, 13 * MIN + Duration::from_secs(1)).unwrap();
        assert_eq!(cold.cache_read_input_tokens, 0);
        assert_eq!(cold.cache_creation_input_tokens, cold.total());
    }

    #[test]
    fn a_hit_refreshes_the_shorter_prefixes_of_its_breakpoints_too() {
        let mut cache = PrefixCache::new();
        let mut parts = texts(3, 8000);
        cache.request(&body("m", &parts, &[0, 2]), Duration::ZERO).unwrap();
        // Four minutes later the same prefix is read through the last breakpoint...
        assert!(cache.request(&body("m", &parts, &[0, 2]), 4 * MIN).unwrap().cache_read_input_tokens > 0);
        // ...so at eight minutes block 0's entry is still alive when block 1 changes.
        parts[1] = "changed".into();
        let usage = cache.request(&body("m", &parts, &[0, 2]), 8 * MIN).unwrap();
        assert_eq!(usage.cache_read_input_tokens, tokens_of(&parts, 0));
    }

    #[test]
    fn a_changed_block_invalidates_everything_after_it() {
        let mut cache = PrefixCache::new();
        let mut parts = texts(4, 8000);
        cache.request(&body("m", &parts, &[1, 3]), Duration::ZERO).unwrap();
        parts[2] = format!("changed{}", "y".repeat(7993));
        let usage = cache.request(&body("m", &parts, &[1, 3]), MIN).unwrap();
        assert_eq!(usage.cache_read_input_tokens, tokens_of(&parts, 1));
        assert_eq!(usage.cache_creation_input_tokens, tokens_of(&parts, 3) - tokens_of(&parts, 1));
        assert_eq!(usage.input_tokens, 0);
    }

    #[test]
    fn a_prefix_below_the_minimum_silently_does_not_cache() {
        let mut cache = PrefixCache::new();
        let parts = texts(2, 1000);
        let request = body("claude-sonnet-4-5", &parts, &[1]);
        let usage = cache.request(&request, Duration::ZERO).unwrap();
        assert_eq!(usage, CacheUsage { input_tokens: usage.total(), ..CacheUsage::default() });
        assert_eq!(cache.request(&request, MIN).unwrap().cache_read_input_tokens, 0);
    }

    #[test]
    fn minimums_follow_the_published_table() {
        assert_eq!(min_cacheable_tokens("claude-sonnet-4-5"), 1024);
        assert_eq!(min_cacheable_tokens("claude-opus-4-1"), 1024);
        assert_eq!(min_cacheable_tokens("claude-haiku-4-5"), 4096);
        assert_eq!(min_cacheable_tokens("claude-opus-4-5"), 4096);
        assert_eq!(min_cacheable_tokens("claude-3-5-haiku-latest"), 2048);
    }

    #[test]
    fn a_moving_breakpoint_reads_an_earlier_write_within_twenty_blocks() {
        let mut cache = PrefixCache::new().with_min_tokens(1);
        let parts = texts(60, 100);
        cache.request(&body("m", &parts[..10], &[9]), Duration::ZERO).unwrap();
        // Breakpoint on block 28: block 9 is the 20th boundary back, still found.
        let near = cache.request(&body("m", &parts[..29], &[28]), MIN).unwrap();
        assert_eq!(near.cache_read_input_tokens, tokens_of(&parts, 9));
        // Breakpoint on block 59: the newest write (block 28) is 31 blocks back, out of reach.
        let far = cache.request(&body("m", &parts, &[59]), 2 * MIN).unwrap();
        assert_eq!(far.cache_read_input_tokens, 0);
    }

    #[test]
    fn caches_are_per_model() {
        let mut cache = PrefixCache::new();
        let parts = texts(2, 8000);
        cache.request(&body("claude-sonnet-4-5", &parts, &[1]), Duration::ZERO).unwrap();
        let other = cache.request(&body("claude-opus-4-1", &parts, &[1]), MIN).unwrap();
        assert_eq!(other.cache_read_input_tokens, 0);
        assert_eq!(other.cache_creation_input_tokens, other.total());
    }

    #[test]
    fn more_than_four_breakpoints_is_a_request_error() {
        let mut cache = PrefixCache::new();
        let parts = texts(5, 10);
        let error = cache.request(&body("m", &parts, &[0, 1, 2, 3, 4]), Duration::ZERO).unwrap_err();
        assert_eq!(error, PrefixCacheError::TooManyBreakpoints(5));
    }

    #[test]
    fn tools_and_system_come_first_and_a_tool_change_invalidates_all() {
        let mut cache = PrefixCache::new().with_min_tokens(1);
        let system = json!([{"type": "text", "text": "s".repeat(4000), "cache_control": {"type": "ephemeral"}}]);
        let request = |tool: &str| {
            json!({"model": "m", "tools": [{"name": tool, "input_schema": {}}], "system": system,
                   "messages": [{"role": "user", "content": "hi"}]})
        };
        cache.request(&request("read"), Duration::ZERO).unwrap();
        assert!(cache.request(&request("read"), MIN).unwrap().cache_read_input_tokens > 1000);
        assert_eq!(cache.request(&request("grep"), MIN).unwrap().cache_read_input_tokens, 0);
    }

    #[test]
    fn one_hour_breakpoints_outlive_five_minutes_and_are_reported_apart() {
        let mut cache = PrefixCache::new();
        let parts = texts(2, 8000);
        let mut request = body("m", &parts, &[1]);
        request["messages"][0]["content"][1]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        let first = cache.request(&request, Duration::ZERO).unwrap();
        assert_eq!(first.cache_creation_1h_tokens, first.cache_creation_input_tokens);
        assert_eq!(cache.request(&request, 30 * MIN).unwrap().cache_read_input_tokens, first.total());
    }

    #[test]
    fn a_body_without_messages_is_refused_with_its_reason() {
        let error = PrefixCache::new().request(&json!({"model": "m"}), Duration::ZERO).unwrap_err();
        assert_eq!(error.to_string(), "request body is not an Anthropic Messages request: no `messages` array");
    }
}
