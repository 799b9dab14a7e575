//! GitHub Copilot: OpenAI Chat Completions (and Responses for GPT-5 and later) at
//! `https://api.githubcopilot.com` (GitHub Enterprise: `https://copilot-api.<domain>`), the GitHub
//! sign-in token as the bearer, and the headers current OpenCode sends (reference/llm-protocols.md
//! §11.3): its user agent, `Openai-Intent: conversation-edits`, `x-initiator` (`user` when the last
//! message is the user's, else `agent`) and `Copilot-Vision-Request: true` when images are sent.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::USER_AGENT;
use super::secret;
use crate::Auth;
use crate::DynamicHeader;
use crate::LlmError;
use crate::RequestShape;
use crate::Route;
use crate::protocol::Protocol;

const ENV: &[&str] = &["GITHUB_TOKEN"];
pub const BASE_URL: &str = "https://api.githubcopilot.com";

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "github-copilot",
    name: "GitHub Copilot",
    env: ENV,
    default_protocol: "openai-compatible-chat",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    let enterprise = config.sign_in.as_ref().and_then(|sign_in| sign_in.enterprise_url.as_deref());
    let base_url = match enterprise.map(domain).filter(|domain| !domain.is_empty()) {
        Some(domain) => format!("https://copilot-api.{domain}"),
        None => BASE_URL.to_owned(),
    };
    let shape = RequestShape {
        headers: vec![
            DynamicHeader::Initiator("x-initiator".to_owned()),
            DynamicHeader::Vision("copilot-vision-request".to_owned()),
        ],
        ..RequestShape::default()
    };
    Ok(Route::new("github-copilot", protocol, base_url, Auth::Bearer(secret(config, ENV)))
        .with_header("user-agent", USER_AGENT)
        .with_header("openai-intent", "conversation-edits")
        .with_shape(shape))
}

/// `github.acme.com` of `https://github.acme.com/` (or of the bare domain).
fn domain(url: &str) -> &str {
    let url = url.trim();
    let url = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")).unwrap_or(url);
    url.trim_end_matches('/')
}
