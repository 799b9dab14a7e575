//! End to end through the real Anthropic encoding and the prefix-caching mock: defer passes read
//! everything the previous request cached, so the only busts are the attributed ones.

use std::time::Duration;

use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::protocol::Protocol;
use opencode_llm::protocol::anthropic_messages::AnthropicMessages;
use opencode_magic_context::Decision;
use opencode_mock_provider::prefix_cache::PrefixCache;

use super::sessions;
use super::support::*;

fn body(model: &str, messages: Vec<Message>) -> serde_json::Value {
    let mut request =
        LlmRequest::new(model.trim_start_matches("anthropic/")).system("You are a coding agent. ".repeat(300));
    request.messages = messages;
    AnthropicMessages.encode(&request).unwrap()
}

#[test]
fn every_bust_on_the_mock_cache_is_a_pass_that_said_why() {
    for seed in 0..4 {
        let session = sessions::generate(seed, 40);
        let mut harness = Harness::new(config(48_000));
        let mut cache = PrefixCache::new();
        let mut cached: Option<(String, u64)> = None;
        let (mut reads, mut total) = (0, 0);
        for request in requests(&session, 15_000, true, true) {
            let (messages, report) = harness.pass(&request.history, request.now_ms, &request.model);
            let usage = cache.request(&body(&request.model, messages), Duration::from_millis(request.now_ms)).unwrap();
            if let Some((model, previous)) = &cached
                && *model == request.model
                && usage.cache_read_input_tokens < *previous
            {
                assert_eq!(report.decision, Decision::Execute, "seed {seed}: a defer pass busted the cache");
                assert!(!report.reason.is_empty());
            }
            if report.historian_due {
                harness.engine.run_historian(SESSION, request.now_ms).unwrap();
            }
            reads += usage.cache_read_input_tokens;
            total += usage.total();
            cached = Some((request.model.clone(), usage.cache_read_input_tokens + usage.cache_creation_input_tokens));
        }
        assert!(reads * 100 / total >= 85, "seed {seed}: only {}% read from cache", reads * 100 / total);
    }
}
