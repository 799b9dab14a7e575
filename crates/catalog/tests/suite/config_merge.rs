//! Custom providers and models from config, merged over the catalog.

use opencode_catalog::{Catalog, CatalogError};
use opencode_config::{Config, Env};
use pretty_assertions::assert_eq;

fn config(json: serde_json::Value) -> Config {
    serde_json::from_value(json).unwrap()
}

#[test]
fn a_custom_openai_compatible_provider_is_routed_at_its_base_url() {
    let catalog = Catalog::bundled()
        .unwrap()
        .with_config(&config(serde_json::json!({
            "provider": {"ollama": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Ollama (local)",
                "options": {"baseURL": "http://localhost:11434/v1"},
                "models": {"qwen3:8b": {"name": "Qwen3 8B", "limit": {"context": 32768, "output": 8192}}}
            }}
        })))
        .unwrap();
    let provider = catalog.provider("ollama").unwrap();
    assert!(provider.custom);
    let model = catalog.lookup("ollama/qwen3:8b").unwrap();
    assert_eq!((model.info.name.as_str(), model.info.limit.context), ("Qwen3 8B", 32768));
    let resolved = catalog.resolve("ollama", "qwen3:8b", None, None, &Env::default()).unwrap();
    assert_eq!(resolved.route.endpoint.base_url, "http://localhost:11434/v1");
    assert_eq!(resolved.route.protocol.id(), "openai-compatible-chat");
    assert_eq!(resolved.route.auth, opencode_llm::Auth::None);
}

#[test]
fn config_overrides_merge_into_catalog_models() {
    let catalog = Catalog::bundled()
        .unwrap()
        .with_config(&config(serde_json::json!({
            "provider": {"anthropic": {
                "options": {"baseURL": "https://gateway.example/anthropic"},
                "models": {
                    "claude-sonnet-4-5": {"limit": {"output": 8000}, "options": {"temperature": 0.3}},
                    "sonnet-alias": {"id": "claude-sonnet-4-5", "name": "Sonnet via alias"}
                }
            }}
        })))
        .unwrap();
    let sonnet = catalog.model("anthropic", "claude-sonnet-4-5").unwrap();
    assert_eq!(sonnet.info.limit.output, 8000);
    assert_eq!(sonnet.info.limit.context, 200_000, "untouched fields keep the catalog's values");
    assert_eq!(sonnet.info.cost.as_ref().unwrap().input, 3.0);
    let resolved = catalog.resolve("anthropic", "claude-sonnet-4-5", None, None, &Env::default()).unwrap();
    assert_eq!(resolved.route.endpoint.base_url, "https://gateway.example/anthropic");
    assert_eq!(resolved.options.generation.temperature, Some(0.3));
    let alias = catalog.resolve("anthropic", "sonnet-alias", None, None, &Env::default()).unwrap();
    assert_eq!(alias.api_id, "claude-sonnet-4-5");
}

#[test]
fn lists_and_switches_filter_providers_and_models() {
    let catalog = Catalog::bundled()
        .unwrap()
        .with_config(&config(serde_json::json!({
            "disabled_providers": ["openai"],
            "provider": {"anthropic": {"whitelist": ["claude-sonnet-4-5", "claude-opus-4-1"], "blacklist": ["claude-opus-4-1"]}}
        })))
        .unwrap();
    assert!(catalog.provider("openai").is_none());
    let anthropic: Vec<&String> = catalog.provider("anthropic").unwrap().models.keys().collect();
    assert_eq!(anthropic, vec!["claude-sonnet-4-5"]);
    let only =
        Catalog::bundled().unwrap().with_config(&config(serde_json::json!({"enabled_providers": ["groq"]}))).unwrap();
    assert_eq!(only.providers().map(|p| p.id.as_str()).collect::<Vec<_>>(), vec!["groq"]);
}

#[test]
fn a_bad_model_override_is_a_clear_error() {
    let err = Catalog::bundled()
        .unwrap()
        .with_config(&config(serde_json::json!({"provider": {"openai": {"models": {"gpt-x": {"limit": "big"}}}}})))
        .unwrap_err();
    assert!(
        matches!(&err, CatalogError::InvalidModelConfig { provider, model, .. } if provider == "openai" && model == "gpt-x")
    );
}
