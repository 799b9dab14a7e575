//! The `opencode.json` that names a [`MockProvider`]: what every test and benchmark that runs the
//! product against the mock writes, in one place.

use serde_json::Value;
use serde_json::json;

use crate::MockProvider;

impl MockProvider {
    /// Configuration with this mock as the OpenAI-compatible provider `mock` whose model `m` (tool
    /// calls, 200,000 tokens of context, 8,000 of output) is the default model, with `extra` merged
    /// over it object by object (so `{"provider": {"mock": {"models": {"m": {"limit": {"context":
    /// 3000}}}}}}` changes only that limit).
    pub fn opencode_config(&self, extra: Value) -> Value {
        let mut config = json!({
            "model": "mock/m",
            "provider": {"mock": {
                "npm": "@ai-sdk/openai-compatible",
                "options": {"baseURL": format!("{}/v1", self.base_url()), "apiKey": "x"},
                "models": {"m": {"tool_call": true, "limit": {"context": 200_000, "output": 8_000}}}
            }}
        });
        merge(&mut config, extra);
        config
    }
}

/// Merges `over` into `base`: objects key by key, anything else replaced.
fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(existing) => merge(existing, value),
                    None => drop(base.insert(key, value)),
                }
            }
        }
        (base, over) => *base = over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_settings_merge_object_by_object() {
        let mut base = json!({"a": {"b": 1, "c": {"d": 2}}, "e": [1]});
        merge(&mut base, json!({"a": {"c": {"d": 3, "f": 4}}, "e": [2], "g": null}));
        assert_eq!(base, json!({"a": {"b": 1, "c": {"d": 3, "f": 4}}, "e": [2], "g": null}));
    }
}
