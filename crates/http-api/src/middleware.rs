//! HTTP Basic auth (with `?auth_token=` for EventSource clients, and a PTY connect ticket for the
//! terminal WebSocket) and CORS.

use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::HeaderValue;
use axum::http::Method;
use axum::http::StatusCode;
use axum::http::header;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::Digest;
use sha2::Sha256;

use crate::error::ApiError;
use crate::extract::form_pairs;
use crate::guard::cors_allowed;
use crate::options::Credentials;
use crate::state::AppState;

/// Rejects requests without the configured credentials (CORS preflights pass: browsers never send
/// credentials on them).
pub(crate) async fn auth(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let Some(expected) = &state.inner.options.credentials else { return next.run(request).await };
    if request.method() == Method::OPTIONS
        || authorized(expected, request.headers(), request.uri().query())
        || pty_ticket(&state, &request)
    {
        return next.run(request).await;
    }
    let mut response = ApiError::Unauthorized("missing or wrong credentials".to_owned()).into_response();
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic realm=\"Secure Area\""));
    response
}

fn authorized(expected: &Credentials, headers: &HeaderMap, query: Option<&str>) -> bool {
    let from_header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic ").or_else(|| v.strip_prefix("basic ")))
        .map(|token| token.trim().to_owned());
    let from_query = query
        .and_then(|q| form_pairs(q).ok())
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == "auth_token").map(|(_, v)| v));
    [from_header, from_query].into_iter().flatten().any(|token| token_matches(expected, &token))
}

/// Whether the request is `GET /pty/{ptyID}/connect?ticket=` with a live ticket for that PTY. The
/// handler uses the ticket up; a ticket opens nothing else.
fn pty_ticket(state: &AppState, request: &Request) -> bool {
    let Some(pty_id) = request.uri().path().strip_prefix("/pty/").and_then(|rest| rest.strip_suffix("/connect")) else {
        return false;
    };
    let ticket = request
        .uri()
        .query()
        .and_then(|q| form_pairs(q).ok())
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == "ticket").map(|(_, v)| v));
    request.method() == Method::GET && ticket.is_some_and(|ticket| state.inner.pty.ticket_valid(pty_id, &ticket))
}

/// Whether base64 `token` is `username:password`. Compared in constant time: both sides are hashed and
/// the digests compared without early exit, so neither content nor length leaks through timing.
pub(crate) fn token_matches(expected: &Credentials, token: &str) -> bool {
    let Ok(decoded) = STANDARD.decode(token.as_bytes()) else { return false };
    let wanted = format!("{}:{}", expected.username, expected.password);
    let (a, b) = (Sha256::digest(&decoded), Sha256::digest(wanted.as_bytes()));
    a.iter().zip(b.iter()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Answers preflights and adds `Access-Control-Allow-Origin` for the configured origins only.
pub(crate) async fn cors(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let origin = request.headers().get(header::ORIGIN).and_then(|o| o.to_str().ok()).map(str::to_owned);
    let allowed = origin.filter(|o| cors_allowed(o, &state.inner.options.cors));
    let preflight =
        request.method() == Method::OPTIONS && request.headers().contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    let mut response = if preflight { StatusCode::NO_CONTENT.into_response() } else { next.run(request).await };
    if let Some(origin) = allowed.and_then(|o| HeaderValue::from_str(&o).ok()) {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(header::ACCESS_CONTROL_ALLOW_CREDENTIALS, HeaderValue::from_static("true"));
        headers.insert(header::VARY, HeaderValue::from_static("Origin"));
        if preflight {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, POST, PUT, PATCH, DELETE, OPTIONS"),
            );
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("authorization, content-type, x-opencode-directory, x-opencode-workspace"),
            );
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds() -> Credentials {
        Credentials { username: "opencode".into(), password: "s3cret".into() }
    }

    #[test]
    fn tokens_match_only_the_exact_pair() {
        assert!(token_matches(&creds(), &STANDARD.encode("opencode:s3cret")));
        assert!(!token_matches(&creds(), &STANDARD.encode("opencode:s3cre")));
        assert!(!token_matches(&creds(), &STANDARD.encode("other:s3cret")));
        assert!(!token_matches(&creds(), "not base64!"));
    }
}
