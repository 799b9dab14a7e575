//! Anthropic: the Messages API with `x-api-key` and a pinned `anthropic-version`.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::secret;
use crate::Auth;
use crate::LlmError;
use crate::Route;
use crate::protocol::Protocol;

const ENV: &[&str] = &["ANTHROPIC_API_KEY"];

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "anthropic",
    name: "Anthropic",
    env: ENV,
    default_protocol: "anthropic-messages",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    let auth = Auth::Header { name: "x-api-key".to_owned(), secret: secret(config, ENV) };
    let route = Route::new("anthropic", protocol, "https://api.anthropic.com/v1", auth);
    Ok(route.with_header("anthropic-version", "2023-06-01"))
}
