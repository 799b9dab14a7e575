//! What the browser sign-in flows share: PKCE (RFC 7636, S256) and random `state` values from the
//! TLS stack's CSPRNG, form and query encoding, token answers as stored OAuth entries, and refreshing
//! stored tokens before they expire.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::future::BoxFuture;
use opencode_config::AuthInfo;
use opencode_config::AuthStore;
use reqwest::Url;
use serde::Deserialize;
use sha2::Digest;
use sha2::Sha256;

use super::AuthError;
use super::copilot::protocol;
use super::copilot::send;
use super::now_ms;

/// Refresh OAuth tokens this long before they expire.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(5 * 60);

/// A PKCE verifier and its S256 challenge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    /// A fresh verifier (43 characters of base64url over 32 random bytes).
    pub fn generate() -> Result<Self, AuthError> {
        let verifier = random_token(32)?;
        Ok(Self { challenge: challenge(&verifier), verifier })
    }
}

/// The S256 challenge of `verifier`: base64url(SHA-256(verifier)), unpadded.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// `bytes` random bytes from a CSPRNG, base64url without padding.
pub fn random_token(bytes: usize) -> Result<String, AuthError> {
    let mut buffer = vec![0; bytes];
    rustls::crypto::ring::default_provider().secure_random.fill(&mut buffer).map_err(|_| AuthError::Random)?;
    Ok(URL_SAFE_NO_PAD.encode(buffer))
}

/// `base?pairs` with the pairs form-encoded.
pub(crate) fn url_with(base: &str, pairs: &[(&str, &str)]) -> Result<String, AuthError> {
    Url::parse_with_params(base, pairs).map(String::from).map_err(|err| protocol(base, &err.to_string()))
}

/// An `application/x-www-form-urlencoded` body.
pub(crate) fn form(pairs: &[(&str, &str)]) -> Result<String, AuthError> {
    let url = url_with("http://form.invalid/", pairs)?;
    Ok(url.split_once('?').map_or_else(String::new, |(_, query)| query.to_owned()))
}

/// A token endpoint's answer (RFC 6749 §5.1).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TokenAnswer {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Seconds.
    #[serde(default)]
    pub expires_in: Option<u64>,
    #[serde(default)]
    pub id_token: Option<String>,
}

impl TokenAnswer {
    /// As a stored entry; a refresh that returns no new refresh token keeps `previous`.
    pub(crate) fn into_info(self, previous: Option<&str>, account_id: Option<String>) -> AuthInfo {
        let refresh = self.refresh_token.or_else(|| previous.map(str::to_owned)).unwrap_or_default();
        let expires = self.expires_in.map_or(0, |seconds| now_ms().saturating_add(seconds.saturating_mul(1000)));
        AuthInfo::Oauth { refresh, access: self.access_token, expires, account_id, enterprise_url: None }
    }
}

/// Posts `body` (with `content_type`) to a token endpoint.
pub(crate) async fn post_token(
    http: &reqwest::Client,
    url: &str,
    content_type: &str,
    body: String,
) -> Result<TokenAnswer, AuthError> {
    let request = http.post(url).header("Accept", "application/json").header("Content-Type", content_type).body(body);
    send(request, url).await
}

/// The stored credentials of `provider`, refreshed with `refresh` (and stored again) when an OAuth
/// entry expires within [`REFRESH_MARGIN`]. Entries with `expires: 0` never expire.
pub(crate) async fn refreshed<'a>(
    store: &'a AuthStore,
    provider: &'a str,
    refresh: impl FnOnce(String, Option<String>) -> BoxFuture<'a, Result<AuthInfo, AuthError>>,
) -> Result<Option<AuthInfo>, AuthError> {
    let stored = store.get(provider).map_err(|err| AuthError::Store(err.to_string()))?;
    let Some(AuthInfo::Oauth { refresh: token, expires, account_id, .. }) = &stored else {
        return Ok(stored);
    };
    let margin = u64::try_from(REFRESH_MARGIN.as_millis()).unwrap_or(u64::MAX);
    if *expires == 0 || expires.saturating_sub(margin) > now_ms() {
        return Ok(stored);
    }
    let renewed = refresh(token.clone(), account_id.clone()).await?;
    store.set(provider, renewed.clone()).map_err(|err| AuthError::Store(err.to_string()))?;
    Ok(Some(renewed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_s256_challenge_is_unpadded_base64url_of_sha256() {
        // Expected value from Python: urlsafe_b64encode(sha256(verifier).digest()).rstrip(b"=").
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r-wW1gFWFOEjXk"),
            "NPsYzawS-__wqk67X9gyb4dr3JBo3hnlEi5MNyD5jX0"
        );
    }

    #[test]
    fn verifiers_are_fresh_and_long_enough() {
        let (a, b) = (Pkce::generate().unwrap(), Pkce::generate().unwrap());
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.verifier.len(), 43);
        assert_eq!(a.challenge, challenge(&a.verifier));
    }

    #[test]
    fn form_bodies_are_url_encoded() {
        assert_eq!(form(&[("a", "x y"), ("b", "1&2=3")]).ok(), Some("a=x+y&b=1%262%3D3".to_owned()));
    }
}
