//! Anthropic: the Messages API with `x-api-key` and a pinned `anthropic-version`; signed in with
//! Claude Pro/Max, the same API shaped as Claude Code sends it (reference/llm-protocols.md §11.1).

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use super::SignIn;
use super::secret;
use crate::Auth;
use crate::LlmError;
use crate::RequestShape;
use crate::Route;
use crate::Secret;
use crate::protocol::Protocol;

const ENV: &[&str] = &["ANTHROPIC_API_KEY"];
const BASE_URL: &str = "https://api.anthropic.com/v1";
const VERSION: &str = "2023-06-01";

/// The betas a Claude Pro/Max token requires.
pub const OAUTH_BETAS: &str = "oauth-2025-04-20,interleaved-thinking-2025-05-14";
/// The user agent Claude Pro/Max requests carry.
pub const OAUTH_USER_AGENT: &str = "claude-cli/2.1.2 (external, cli)";
/// The first system block of every Claude Pro/Max request.
pub const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";
/// Prefixed to tool names on Claude Pro/Max (and stripped from the tool calls streamed back).
pub const OAUTH_TOOL_PREFIX: &str = "mcp_";

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "anthropic",
    name: "Anthropic",
    env: ENV,
    default_protocol: "anthropic-messages",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    if let Some(sign_in) = &config.sign_in {
        return Ok(signed_in(sign_in, protocol));
    }
    let auth = Auth::Header { name: "x-api-key".to_owned(), secret: secret(config, ENV) };
    let route = Route::new("anthropic", protocol, BASE_URL, auth);
    Ok(route.with_header("anthropic-version", VERSION))
}

/// Claude Pro/Max: `Authorization: Bearer` instead of `x-api-key`, the OAuth betas, Claude Code's
/// user agent and `?beta=true`; Claude Code's identity first in the system prompt, "OpenCode"
/// spelled "Claude Code" in it (the service refuses the name), and tool names prefixed `mcp_`.
fn signed_in(sign_in: &SignIn, protocol: Arc<dyn Protocol>) -> Route {
    let auth = Auth::Bearer(Secret::Value(sign_in.access_token.clone()));
    let shape = RequestShape {
        system_preamble: Some(CLAUDE_CODE_IDENTITY.to_owned()),
        system_replacements: vec![("OpenCode".to_owned(), "Claude Code".to_owned())],
        tool_name_prefix: Some(OAUTH_TOOL_PREFIX.to_owned()),
        ..RequestShape::default()
    };
    Route::new("anthropic", protocol, BASE_URL, auth)
        .with_header("anthropic-version", VERSION)
        .with_header("anthropic-beta", OAUTH_BETAS)
        .with_header("user-agent", OAUTH_USER_AGENT)
        .with_query("beta", "true")
        .with_shape(shape)
}
