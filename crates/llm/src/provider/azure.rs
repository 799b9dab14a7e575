//! Azure OpenAI (v1 API): OpenAI's wire formats at a per-resource host, with an `api-key` header.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::secret;
use crate::Auth;
use crate::LlmError;
use crate::Route;
use crate::Secret;
use crate::protocol::Protocol;

const ENV: &[&str] = &["AZURE_API_KEY", "AZURE_OPENAI_API_KEY"];

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "azure",
    name: "Azure OpenAI",
    env: ENV,
    default_protocol: "openai-responses",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    let base_url = match (&config.base_url, &config.resource) {
        (Some(base_url), _) => base_url.clone(),
        (None, Some(resource)) => resource_url(resource),
        (None, None) => match Secret::env("AZURE_RESOURCE_NAME").lookup() {
            Some(resource) => resource_url(&resource),
            None => {
                return Err(LlmError::configuration(
                    "Azure needs a resource: set AZURE_RESOURCE_NAME or configure a base URL",
                ));
            }
        },
    };
    let auth = Auth::Header { name: "api-key".to_owned(), secret: secret(config, ENV) };
    Ok(Route::new("azure", protocol, base_url, auth))
}

fn resource_url(resource: &str) -> String {
    format!("https://{resource}.openai.azure.com/openai/v1")
}
