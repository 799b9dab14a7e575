//! Finding a server's authorization server: the protected resource metadata (RFC 9728), named by
//! the 401's `WWW-Authenticate: Bearer resource_metadata="…"` or at the well-known path beside the
//! server URL, then the authorization server metadata (RFC 8414, or OpenID Connect discovery).
//! A server that publishes neither gets the MCP specification's default endpoints at its origin.

use reqwest::Url;
use serde::Deserialize;

use super::http::get_json;
use crate::error::McpError;

/// The parameters of a `WWW-Authenticate: Bearer …` challenge that matter here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
}

impl Challenge {
    /// Reads `key="value"` and `key=token` parameters (case-insensitive keys); unknown ones are ignored.
    pub(crate) fn parse(header: &str) -> Self {
        let mut challenge = Self::default();
        for (key, value) in auth_params(header) {
            match key.to_ascii_lowercase().as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                _ => {}
            }
        }
        challenge
    }
}

/// What the authorization server publishes about itself (the fields used here).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct ServerMetadata {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
}

/// The outcome of discovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Discovery {
    /// The resource indicator (RFC 8707) to request tokens for.
    pub resource: String,
    pub metadata: ServerMetadata,
    /// Scopes the resource asks for (challenge first, then its metadata).
    pub scope: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
}

/// Discovers the authorization server of the MCP server at `server_url`.
pub(crate) async fn discover(
    http: &reqwest::Client,
    server_url: &str,
    challenge: &Challenge,
) -> Result<Discovery, McpError> {
    let url = parse_url(server_url)?;
    let mut candidates = Vec::new();
    if let Some(named) = &challenge.resource_metadata {
        candidates.push(url.join(named).map_err(|err| McpError::Auth(format!("bad resource_metadata URL: {err}")))?);
    }
    candidates.extend(well_known(&url, "oauth-protected-resource", true));
    let mut resource_metadata = None;
    for candidate in candidates {
        if let Some(found) = get_json::<ResourceMetadata>(http, candidate.as_str()).await? {
            resource_metadata = Some(found);
            break;
        }
    }
    let (resource, issuer, resource_scopes) = match resource_metadata {
        Some(found) => {
            let issuer = match found.authorization_servers.first() {
                Some(issuer) => parse_url(issuer)?,
                None => origin(&url),
            };
            (found.resource.unwrap_or_else(|| server_url.to_owned()), issuer, found.scopes_supported)
        }
        None => (server_url.to_owned(), origin(&url), Vec::new()),
    };
    let metadata = server_metadata(http, &issuer).await?;
    if let Some(methods) = &metadata.code_challenge_methods_supported
        && !methods.iter().any(|method| method == "S256")
    {
        return Err(McpError::Auth("the authorization server does not support PKCE with S256".into()));
    }
    let scope = challenge.scope.clone().or_else(|| (!resource_scopes.is_empty()).then(|| resource_scopes.join(" ")));
    Ok(Discovery { resource, metadata, scope })
}

/// RFC 8414 first, then OpenID Connect discovery (both path placements); the MCP defaults last.
async fn server_metadata(http: &reqwest::Client, issuer: &Url) -> Result<ServerMetadata, McpError> {
    let mut candidates = well_known(issuer, "oauth-authorization-server", false);
    candidates.extend(well_known(issuer, "openid-configuration", false));
    let path = issuer.path().trim_end_matches('/');
    if !path.is_empty() {
        let mut appended = issuer.clone();
        appended.set_path(&format!("{path}/.well-known/openid-configuration"));
        candidates.push(appended);
    }
    for candidate in candidates {
        if let Some(found) = get_json::<ServerMetadata>(http, candidate.as_str()).await? {
            return Ok(found);
        }
    }
    let root = origin(issuer);
    let at = |path: &str| root.join(path).map(String::from).unwrap_or_default();
    Ok(ServerMetadata {
        authorization_endpoint: at("/authorize"),
        token_endpoint: at("/token"),
        registration_endpoint: Some(at("/register")),
        code_challenge_methods_supported: None,
    })
}

/// `<origin>/.well-known/<name><path>`, and (for resources) `<origin>/.well-known/<name>` after it.
fn well_known(url: &Url, name: &str, root_fallback: bool) -> Vec<Url> {
    let path = url.path().trim_end_matches('/');
    let mut found = Vec::new();
    let mut at = origin(url);
    at.set_path(&format!("/.well-known/{name}{path}"));
    found.push(at);
    if root_fallback && !path.is_empty() {
        let mut root = origin(url);
        root.set_path(&format!("/.well-known/{name}"));
        found.push(root);
    }
    found
}

fn origin(url: &Url) -> Url {
    let mut origin = url.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    origin
}

fn parse_url(text: &str) -> Result<Url, McpError> {
    Url::parse(text).map_err(|err| McpError::Auth(format!("bad URL {text}: {err}")))
}

/// The `key=value` parameters of a challenge, values unquoted (`\"` escapes honoured).
fn auth_params(header: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut rest = header.trim();
    // Skip the scheme (`Bearer`).
    if let Some((scheme, tail)) = rest.split_once(' ')
        && !scheme.contains('=')
    {
        rest = tail;
    }
    while !rest.is_empty() {
        rest = rest.trim_start_matches([' ', ',']);
        let Some((key, tail)) = rest.split_once('=') else { break };
        let key = key.trim().to_owned();
        let tail = tail.trim_start();
        let (value, remainder) = if let Some(quoted) = tail.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((index, ch)) = chars.next() {
                match ch {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        end = index + 1;
                        break;
                    }
                    other => value.push(other),
                }
            }
            (value, &quoted[end.min(quoted.len())..])
        } else {
            let end = tail.find(',').unwrap_or(tail.len());
            (tail[..end].trim().to_owned(), &tail[end..])
        };
        params.push((key, value));
        rest = remainder;
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_yield_resource_metadata_and_scope() {
        let challenge = Challenge::parse(
            r#"Bearer error="invalid_token", resource_metadata="https://x/.well-known/oauth-protected-resource/mcp", scope="a b""#,
        );
        assert_eq!(challenge.resource_metadata.as_deref(), Some("https://x/.well-known/oauth-protected-resource/mcp"));
        assert_eq!(challenge.scope.as_deref(), Some("a b"));
        assert_eq!(Challenge::parse("Bearer realm=mcp, scope=read").scope.as_deref(), Some("read"));
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
    }

    #[test]
    fn well_known_paths_go_between_origin_and_path() {
        let url = Url::parse("https://x.test/api/mcp?q=1").unwrap();
        let found: Vec<String> =
            well_known(&url, "oauth-protected-resource", true).into_iter().map(String::from).collect();
        assert_eq!(
            found,
            [
                "https://x.test/.well-known/oauth-protected-resource/api/mcp",
                "https://x.test/.well-known/oauth-protected-resource"
            ]
        );
    }
}
