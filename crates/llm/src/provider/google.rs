//! Google Gemini API (`streamGenerateContent` over SSE) with `x-goog-api-key`.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::secret;
use crate::Auth;
use crate::LlmError;
use crate::Route;
use crate::protocol::Protocol;

const ENV: &[&str] = &["GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"];

pub(super) const ADAPTER: ProviderAdapter =
    ProviderAdapter { id: "google", name: "Google", env: ENV, default_protocol: "gemini", build: Build::Custom(build) };

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    let auth = Auth::Header { name: "x-goog-api-key".to_owned(), secret: secret(config, ENV) };
    Ok(Route::new("google", protocol, "https://generativelanguage.googleapis.com/v1beta", auth))
}
