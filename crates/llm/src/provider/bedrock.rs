//! Amazon Bedrock: Converse Stream, signed with SigV4 from the usual AWS environment variables, or
//! a Bedrock API key (`AWS_BEARER_TOKEN_BEDROCK`) sent as a bearer token.

use std::sync::Arc;

use super::Build;
use super::ProviderAdapter;
use super::ProviderConfig;
use crate::Auth;
use crate::LlmError;
use crate::Route;
use crate::Secret;
use crate::SigV4Credentials;
use crate::protocol::Protocol;

const ENV: &[&str] = &["AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"];

pub(super) const ADAPTER: ProviderAdapter = ProviderAdapter {
    id: "amazon-bedrock",
    name: "Amazon Bedrock",
    env: ENV,
    default_protocol: "bedrock-converse",
    build: Build::Custom(build),
};

fn build(config: &ProviderConfig, protocol: Arc<dyn Protocol>) -> Result<Route, LlmError> {
    let region = config
        .region
        .clone()
        .or_else(|| Secret::Env(vec!["AWS_REGION".into(), "AWS_DEFAULT_REGION".into()]).lookup())
        .unwrap_or_else(|| "us-east-1".to_owned());
    let bearer = config.api_key.clone().map(Secret::Value).or_else(|| {
        let token = Secret::env("AWS_BEARER_TOKEN_BEDROCK");
        token.lookup().map(|_| token)
    });
    let auth = match bearer {
        Some(secret) => Auth::Bearer(secret),
        None => Auth::AwsSigV4(SigV4Credentials::from_env(region.clone(), "bedrock")),
    };
    let base_url = format!("https://bedrock-runtime.{region}.amazonaws.com");
    Ok(Route::new("amazon-bedrock", protocol, base_url, auth))
}
