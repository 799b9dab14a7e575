//! From a catalog model to an `opencode-llm` route, by its `npm` package (the model's override
//! first, then the provider's).
//!
//! The mapping is data: a package names an `opencode-llm` adapter (whose base URL, auth scheme and
//! default protocol are reused as they are) or the generic OpenAI-compatible Chat route at the
//! provider's `api` URL. So a new OpenAI-compatible provider on models.dev works with no code change.
//! A package that cannot be routed is a [`CatalogError::Unsupported`] naming it and the reason.

use opencode_config::Env;
use opencode_llm::provider::{self, ProviderConfig, SignIn};
use opencode_llm::{Auth, Route, Secret};

use crate::{CatalogError, Model, Provider};

/// How a model is reached, before credentials and environment are looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutePlan {
    /// The `opencode-llm` adapter (`openai`, `anthropic`, `google`, `amazon-bedrock`, `azure`,
    /// `github-copilot`, `openai-compatible`).
    pub adapter: &'static str,
    /// The wire protocol (`opencode_llm::protocol::PROTOCOL_IDS`).
    pub protocol: &'static str,
    /// Base URL replacing the adapter's; may hold `${ENV_VAR}` placeholders.
    pub base_url: Option<String>,
}

/// The route plan of `model` of `provider`, or why it has none.
pub fn plan(provider: &Provider, model: &Model) -> Result<RoutePlan, CatalogError> {
    let over = model.info.provider.as_ref();
    let npm = over.and_then(|p| p.npm.as_deref()).or(provider.npm.as_deref()).unwrap_or("@ai-sdk/openai-compatible");
    let api =
        over.and_then(|p| p.api.clone()).or_else(|| provider.api.clone()).or_else(|| provider.options.base_url.clone());
    let shape = over.and_then(|p| p.shape.as_deref());
    let unsupported = |reason: &str| CatalogError::Unsupported {
        provider: provider.id.clone(),
        model: model.id.clone(),
        npm: npm.to_owned(),
        reason: reason.to_owned(),
    };
    let plan = |adapter, protocol, base_url| Ok(RoutePlan { adapter, protocol, base_url });
    if provider.id == COPILOT || npm == "@ai-sdk/github-copilot" {
        // The adapter knows Copilot's host (and a GitHub Enterprise sign-in's); `api` would hide it.
        return plan(COPILOT, copilot_protocol(&model.api_id), None);
    }
    match npm {
        "@ai-sdk/openai" => {
            let protocol = if shape == Some("completions") { "openai-chat" } else { "openai-responses" };
            plan("openai", protocol, api)
        }
        "@ai-sdk/anthropic" => plan("anthropic", "anthropic-messages", api),
        "@ai-sdk/google" => plan("google", "gemini", api),
        "@ai-sdk/amazon-bedrock" => plan("amazon-bedrock", "bedrock-converse", None),
        "@ai-sdk/amazon-bedrock/mantle" => match api {
            Some(api) => plan("openai", "openai-responses", Some(api)),
            None => Err(unsupported("Bedrock Mantle needs an `api` URL")),
        },
        "@ai-sdk/azure" => {
            let protocol = if shape == Some("completions") { "openai-chat" } else { "openai-responses" };
            plan("azure", protocol, api)
        }
        "@ai-sdk/google-vertex" | "@ai-sdk/google-vertex/anthropic" => {
            Err(unsupported("Vertex AI needs Google Cloud credentials, which are not supported yet"))
        }
        "gitlab-ai-provider" => Err(unsupported("GitLab Duo speaks its own protocol, which is not supported yet")),
        "@jerome-benoit/sap-ai-provider-v2" => {
            Err(unsupported("SAP AI Core needs a service-key token exchange, which is not supported yet"))
        }
        _ => match api.or_else(|| compatible_base_url(npm)) {
            Some(url) => plan("openai-compatible", "openai-compatible-chat", Some(url)),
            None => {
                Err(unsupported("no base URL is known for this package; set `provider.<id>.api` or `options.baseURL`"))
            }
        },
    }
}

/// Adapters with a signed-in route for an OAuth credential.
pub const SIGN_IN_ADAPTERS: &[&str] = &["anthropic", "openai", COPILOT];

const COPILOT: &str = "github-copilot";

/// Builds the route: the adapter's route with the catalog's base URL, the provider's id and its
/// credential (a resolved key, or the provider's key variables read when sending). A sign-in
/// selects the adapter's signed-in route where it has one ([`SIGN_IN_ADAPTERS`]); elsewhere its
/// access token is sent as the key.
pub fn build(
    plan: &RoutePlan,
    provider: &Provider,
    key: Option<String>,
    sign_in: Option<SignIn>,
    env: &Env,
) -> Result<Route, CatalogError> {
    let sign_in = sign_in.filter(|_| SIGN_IN_ADAPTERS.contains(&plan.adapter));
    let base_url = match provider.options.base_url.clone().or_else(|| plan.base_url.clone()) {
        Some(url) => Some(
            expand(&url, env)
                .map_err(|var| CatalogError::MissingVariable { provider: provider.id.clone(), variable: var })?,
        ),
        None => None,
    };
    let config = ProviderConfig {
        base_url,
        api_key: key.clone(),
        protocol: Some(plan.protocol.to_owned()),
        region: env.get("AWS_REGION").or_else(|| env.get("AWS_DEFAULT_REGION")).map(str::to_owned),
        resource: resource(provider, env),
        sign_in: sign_in.clone(),
    };
    let llm_error =
        |err: opencode_llm::LlmError| CatalogError::Route { provider: provider.id.clone(), message: err.message };
    let mut route = provider::route(plan.adapter, &config).map_err(llm_error)?;
    route.provider = provider.id.clone();
    if plan.adapter != "amazon-bedrock" && sign_in.is_none() {
        let secret = match key {
            Some(key) => Some(Secret::Value(key)),
            None => key_variables(provider).map(Secret::Env),
        };
        route.auth = match (route.auth, secret) {
            (Auth::Bearer(_), Some(secret)) => Auth::Bearer(secret),
            (Auth::Header { name, .. }, Some(secret)) => Auth::Header { name, secret },
            (Auth::None, Some(secret)) => Auth::Bearer(secret),
            (auth, _) => auth,
        };
    }
    Ok(route)
}

/// Copilot serves GPT-5 and later (but not `gpt-5-mini`) on Responses, every other model on Chat
/// Completions (as OpenCode routes them).
fn copilot_protocol(model: &str) -> &'static str {
    let major =
        model.strip_prefix("gpt-").map(|rest| rest.chars().take_while(char::is_ascii_digit).collect::<String>());
    let responses = major.and_then(|digits| digits.parse::<u32>().ok()).is_some_and(|major| major >= 5)
        && !model.starts_with("gpt-5-mini");
    if responses { "openai-responses" } else { "openai-compatible-chat" }
}

/// The provider's variables that hold a key (not resource names or regions), if any.
pub fn key_variables(provider: &Provider) -> Option<Vec<String>> {
    let keys: Vec<String> = provider
        .env
        .iter()
        .filter(|var| var.ends_with("_KEY") || var.ends_with("_TOKEN") || var.contains("API_KEY"))
        .cloned()
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// Replaces `${VAR}` placeholders from `env`; the first missing variable is the error.
pub fn expand(url: &str, env: &Env) -> Result<String, String> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else { break };
        let var = &rest[start + 2..start + end];
        out.push_str(&rest[..start]);
        out.push_str(env.get(var).ok_or_else(|| var.to_owned())?);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Azure's resource name: `options.resourceName`, else the provider's `*_RESOURCE_NAME` variable.
fn resource(provider: &Provider, env: &Env) -> Option<String> {
    if let Some(name) = provider.options.extra.get("resourceName").and_then(|v| v.as_str()) {
        return Some(name.to_owned());
    }
    provider.env.iter().filter(|var| var.ends_with("_RESOURCE_NAME")).find_map(|var| env.get(var)).map(str::to_owned)
}

/// Base URLs of packages whose API is OpenAI-compatible Chat but which models.dev lists without an
/// `api` (their SDK package knows it). The `opencode-llm` profile is used where one exists.
fn compatible_base_url(npm: &str) -> Option<String> {
    let profile = |id: &str| provider::compatible::PROFILES.iter().find(|p| p.id == id).map(|p| p.base_url.to_owned());
    match npm {
        "@ai-sdk/groq" => profile("groq"),
        "@ai-sdk/xai" => profile("xai"),
        "@ai-sdk/deepinfra" => profile("deepinfra"),
        "@ai-sdk/togetherai" => profile("togetherai"),
        "@ai-sdk/cerebras" => profile("cerebras"),
        "@ai-sdk/deepseek" => profile("deepseek"),
        "@ai-sdk/fireworks" => profile("fireworks"),
        _ => COMPATIBLE_URLS.iter().find(|(package, _)| *package == npm).map(|(_, url)| (*url).to_owned()),
    }
}

const COMPATIBLE_URLS: &[(&str, &str)] = &[
    ("@ai-sdk/mistral", "https://api.mistral.ai/v1"),
    ("@ai-sdk/perplexity", "https://api.perplexity.ai"),
    ("@ai-sdk/vercel", "https://api.v0.dev/v1"),
    ("@ai-sdk/gateway", "https://ai-gateway.vercel.sh/v1"),
    ("@ai-sdk/cohere", "https://api.cohere.ai/compatibility/v1"),
    ("@aihubmix/ai-sdk-provider", "https://aihubmix.com/v1"),
    ("venice-ai-sdk-provider", "https://api.venice.ai/api/v1"),
    (
        "ai-gateway-provider",
        "https://gateway.ai.cloudflare.com/v1/${CLOUDFLARE_ACCOUNT_ID}/${CLOUDFLARE_GATEWAY_ID}/compat",
    ),
];
