//! USD cost of one provider turn from normalised usage and the catalog's prices.
//!
//! Prices are per million tokens. Non-cached input, cache reads and cache writes are priced
//! separately (a missing cache price counts as free, as OpenCode does); reasoning tokens are priced
//! at the `reasoning` price when there is one, else as output. When the prompt is larger than a
//! price tier's context size (the newer `tiers`, or the legacy `context_over_200k`), that tier's
//! prices apply to the whole turn.

use opencode_llm::Usage;

use crate::models_dev::Cost;

/// The cost in USD of `usage` at `prices`.
pub fn cost(prices: &Cost, usage: &Usage) -> f64 {
    let prices = tier(prices, usage.input_tokens);
    let per_token = |price: f64, tokens: u64| price * tokens as f64 / 1_000_000.0;
    let reasoning_price = prices.reasoning.unwrap_or(prices.output);
    per_token(prices.input, usage.non_cached_input_tokens)
        + per_token(prices.cache_read.unwrap_or(0.0), usage.cache_read_input_tokens)
        + per_token(prices.cache_write.unwrap_or(0.0), usage.cache_write_input_tokens)
        + per_token(prices.output, usage.visible_output_tokens())
        + per_token(reasoning_price, usage.reasoning_tokens)
}

/// The prices that apply to a prompt of `input_tokens`.
pub fn tier(prices: &Cost, input_tokens: u64) -> &Cost {
    let tiered = prices
        .tiers
        .iter()
        .filter(|tier| (tier.tier.kind.is_empty() || tier.tier.kind == "context") && input_tokens > tier.tier.size)
        .max_by_key(|tier| tier.tier.size)
        .map(|tier| &tier.prices);
    match (tiered, &prices.context_over_200k) {
        (Some(tier), _) => tier,
        (None, Some(over)) if input_tokens > 200_000 => over,
        _ => prices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sonnet() -> Cost {
        Cost {
            input: 3.0,
            output: 15.0,
            cache_read: Some(0.3),
            cache_write: Some(3.75),
            context_over_200k: Some(Box::new(Cost {
                input: 6.0,
                output: 22.5,
                cache_read: Some(0.6),
                cache_write: Some(7.5),
                ..Cost::default()
            })),
            ..Cost::default()
        }
    }

    #[test]
    fn cache_reads_and_writes_have_their_own_prices() {
        let usage = Usage::from_exclusive(1_000, 10_000, 2_000, 500, 0);
        let expected = (1_000.0 * 3.0 + 10_000.0 * 0.3 + 2_000.0 * 3.75 + 500.0 * 15.0) / 1e6;
        assert!((cost(&sonnet(), &usage) - expected).abs() < 1e-12);
    }

    #[test]
    fn prompts_over_200k_use_the_higher_tier() {
        let usage = Usage::from_inclusive(250_000, 0, 0, 1_000, 0);
        let expected = (250_000.0 * 6.0 + 1_000.0 * 22.5) / 1e6;
        assert!((cost(&sonnet(), &usage) - expected).abs() < 1e-12);
    }

    #[test]
    fn reasoning_uses_its_own_price_when_listed() {
        let prices = Cost { input: 1.0, output: 2.0, reasoning: Some(4.0), ..Cost::default() };
        let usage = Usage::from_inclusive(0, 0, 0, 1_000_000, 250_000);
        assert!((cost(&prices, &usage) - (0.75 * 2.0 + 0.25 * 4.0)).abs() < 1e-12);
    }
}
