//! The few HTTP exchanges OAuth needs: metadata documents (GET JSON), registration (POST JSON) and
//! the token endpoint (POST form), with OAuth error bodies turned into one-line causes.

use reqwest::Url;
use serde::de::DeserializeOwned;

use crate::error::McpError;

/// The HTTP client of the OAuth exchanges and the remote transports (rustls with ring).
pub(crate) fn client() -> Result<reqwest::Client, McpError> {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().map_err(|err| McpError::Protocol(format!("cannot build the HTTP client: {err}")))
}

/// A JSON document, or `None` when the server has none there (any non-success status).
pub(crate) async fn get_json<T: DeserializeOwned>(http: &reqwest::Client, url: &str) -> Result<Option<T>, McpError> {
    let response = http
        .get(url)
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|err| McpError::Auth(format!("cannot reach {url}: {}", without_url(&err))))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let body = response.bytes().await.map_err(|err| McpError::Auth(format!("{url}: {}", without_url(&err))))?;
    serde_json::from_slice(&body).map(Some).map_err(|err| McpError::Auth(format!("{url} is not valid metadata: {err}")))
}

/// POSTs a JSON body and decodes the JSON answer.
pub(crate) async fn post_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Result<T, McpError> {
    let request = http
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(body.to_string());
    answer(url, request).await
}

/// POSTs an `application/x-www-form-urlencoded` body and decodes the JSON answer.
pub(crate) async fn post_form<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    pairs: &[(&str, &str)],
) -> Result<T, McpError> {
    let request = http
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(http::header::ACCEPT, "application/json")
        .body(form(pairs));
    answer(url, request).await
}

/// `base` with the pairs appended to its query.
pub(crate) fn url_with(base: &str, pairs: &[(&str, &str)]) -> Result<String, McpError> {
    let mut url = Url::parse(base).map_err(|err| McpError::Auth(format!("bad URL {base}: {err}")))?;
    url.query_pairs_mut().extend_pairs(pairs);
    Ok(url.into())
}

fn form(pairs: &[(&str, &str)]) -> String {
    // The URL only lends its form encoder; the literal always parses.
    Url::parse("http://form.invalid/")
        .map(|mut url| {
            url.query_pairs_mut().extend_pairs(pairs);
            url.query().unwrap_or_default().to_owned()
        })
        .unwrap_or_default()
}

async fn answer<T: DeserializeOwned>(url: &str, request: reqwest::RequestBuilder) -> Result<T, McpError> {
    let response =
        request.send().await.map_err(|err| McpError::Auth(format!("cannot reach {url}: {}", without_url(&err))))?;
    let status = response.status();
    let body = response.bytes().await.map_err(|err| McpError::Auth(format!("{url}: {}", without_url(&err))))?;
    if !status.is_success() {
        return Err(McpError::Auth(format!("{url} answered {status}: {}", oauth_error(&body))));
    }
    serde_json::from_slice(&body).map_err(|err| McpError::Auth(format!("{url} answered unreadable JSON: {err}")))
}

/// `error: error_description` of an OAuth error body, else the start of the body.
fn oauth_error(body: &[u8]) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let field = |name: &str| parsed.as_ref().and_then(|value| value.get(name)).and_then(|value| value.as_str());
    match (field("error"), field("error_description")) {
        (Some(error), Some(description)) => format!("{error}: {description}"),
        (Some(error), None) => error.to_owned(),
        _ => String::from_utf8_lossy(body).chars().take(200).collect(),
    }
}

/// The innermost cause (reqwest's own message repeats the URL the caller already names).
fn without_url(err: &reqwest::Error) -> String {
    let mut current: &dyn std::error::Error = err;
    while let Some(cause) = current.source() {
        current = cause;
    }
    current.to_string()
}
