//! OpenAI: the Responses API by default, Chat Completions with `protocol = "openai-chat"`.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::bearer;
use crate::LlmError;
use crate::Route;
use crate::protocol::Protocol;

const ENV: &[&str] = &["OPENAI_API_KEY"];

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "openai",
    name: "OpenAI",
    env: ENV,
    default_protocol: "openai-responses",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    Ok(Route::new("openai", protocol, "https://api.openai.com/v1", bearer(config, ENV)))
}
