//! The authorization server's endpoints: dynamic client registration (RFC 7591), the code
//! exchange and refresh grants, and PKCE (RFC 7636, S256) with random values from the TLS stack's
//! CSPRNG.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use serde_json::json;
use sha2::Digest;
use sha2::Sha256;

use super::http::post_form;
use super::http::post_json;
use super::store::McpClientInfo;
use super::store::McpTokens;
use super::store::now_seconds;
use crate::error::McpError;

/// The client to present: from config, or registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Client {
    pub id: String,
    pub secret: Option<String>,
}

impl From<&McpClientInfo> for Client {
    fn from(info: &McpClientInfo) -> Self {
        Self { id: info.client_id.clone(), secret: info.client_secret.clone() }
    }
}

/// Registers OpenCode as a public client with `redirect_uri`.
pub(crate) async fn register(
    http: &reqwest::Client,
    endpoint: &str,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<McpClientInfo, McpError> {
    #[derive(Deserialize)]
    struct Registered {
        client_id: String,
        #[serde(default)]
        client_secret: Option<String>,
        #[serde(default)]
        client_id_issued_at: Option<f64>,
        #[serde(default)]
        client_secret_expires_at: Option<f64>,
    }
    let mut body = json!({
        "redirect_uris": [redirect_uri],
        "client_name": "OpenCode",
        "client_uri": "https://opencode.ai",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(scope) = scope {
        body["scope"] = json!(scope);
    }
    let registered: Registered = post_json(http, endpoint, &body).await?;
    Ok(McpClientInfo {
        client_id: registered.client_id,
        client_secret: registered.client_secret,
        client_id_issued_at: registered.client_id_issued_at,
        client_secret_expires_at: registered.client_secret_expires_at,
    })
}

/// Exchanges an authorization code (with its PKCE verifier) for tokens.
pub(crate) async fn exchange(
    http: &reqwest::Client,
    endpoint: &str,
    client: &Client,
    grant: &CodeGrant<'_>,
) -> Result<McpTokens, McpError> {
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("code", grant.code),
        ("code_verifier", grant.verifier),
        ("redirect_uri", grant.redirect_uri),
        ("resource", grant.resource),
    ];
    with_client(&mut pairs, client);
    token(http, endpoint, &pairs, None).await
}

/// The parts of a code exchange besides the client.
pub(crate) struct CodeGrant<'a> {
    pub code: &'a str,
    pub verifier: &'a str,
    pub redirect_uri: &'a str,
    pub resource: &'a str,
}

/// Trades a refresh token for new tokens; the old refresh token is kept when none is returned.
pub(crate) async fn refresh(
    http: &reqwest::Client,
    endpoint: &str,
    client: &Client,
    refresh_token: &str,
    resource: &str,
) -> Result<McpTokens, McpError> {
    let mut pairs = vec![("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("resource", resource)];
    with_client(&mut pairs, client);
    token(http, endpoint, &pairs, Some(refresh_token)).await
}

/// A PKCE verifier (43 characters of base64url over 32 random bytes) and its S256 challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    pub(crate) fn generate() -> Result<Self, McpError> {
        let verifier = random_token(32)?;
        Ok(Self { challenge: challenge(&verifier), verifier })
    }
}

/// base64url(SHA-256(verifier)), unpadded.
pub(crate) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `bytes` random bytes from a CSPRNG, base64url without padding.
pub(crate) fn random_token(bytes: usize) -> Result<String, McpError> {
    let mut buffer = vec![0; bytes];
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(&mut buffer)
        .map_err(|_| McpError::Auth("the system random number generator failed".into()))?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// Public clients send their id; confidential ones also their secret (`client_secret_post`).
fn with_client<'a>(pairs: &mut Vec<(&'a str, &'a str)>, client: &'a Client) {
    pairs.push(("client_id", &client.id));
    if let Some(secret) = &client.secret {
        pairs.push(("client_secret", secret));
    }
}

async fn token(
    http: &reqwest::Client,
    endpoint: &str,
    pairs: &[(&str, &str)],
    previous_refresh: Option<&str>,
) -> Result<McpTokens, McpError> {
    #[derive(Deserialize)]
    struct Answer {
        access_token: String,
        #[serde(default)]
        refresh_token: Option<String>,
        #[serde(default)]
        expires_in: Option<f64>,
        #[serde(default)]
        scope: Option<String>,
    }
    let answer: Answer = post_form(http, endpoint, pairs).await?;
    Ok(McpTokens {
        access_token: answer.access_token,
        refresh_token: answer.refresh_token.or_else(|| previous_refresh.map(str::to_owned)),
        expires_at: answer.expires_in.map(|seconds| now_seconds() + seconds),
        scope: answer.scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_matches_rfc_7636_appendix_b() {
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn verifiers_are_43_unreserved_characters_and_differ() {
        let first = Pkce::generate().unwrap();
        let second = Pkce::generate().unwrap();
        assert_eq!(first.verifier.len(), 43);
        assert!(first.verifier.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_'));
        assert_ne!(first.verifier, second.verifier);
    }
}
