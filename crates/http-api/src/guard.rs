//! What a web page may not do to the server, checked before routing (docs/SECURITY.md):
//! - the `Host` must name this server (a loopback name, an IP address, the listening hostname or an
//!   allowed host), so a page whose domain re-resolves to 127.0.0.1 (DNS rebinding) is refused;
//! - a state-changing request (any method but `GET`/`HEAD`/`OPTIONS`, and every WebSocket handshake)
//!   from a browser must come from the server's own origin or a configured one;
//! - a request body must be `application/json`: browsers send `text/plain`, form and untyped bodies
//!   cross-site without a preflight, JSON never.

use axum::body::HttpBody;
use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::Method;
use axum::http::header;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;

use crate::error::ApiError;
use crate::options::ServerOptions;
use crate::state::AppState;

pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match check(&state.inner.options, &request) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            tracing::warn!(method = %request.method(), path = request.uri().path(), "refused: {refusal}");
            refusal.into_response()
        }
    }
}

fn check(options: &ServerOptions, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let host = request_host(request);
    if let Some(host) = host.as_deref() {
        host_allowed(host, options)?;
    }
    if changes_state(request.method(), headers) {
        origin_allowed(headers, host.as_deref(), &options.cors)?;
    }
    if !request.body().is_end_stream() {
        json_body(headers)?;
    }
    Ok(())
}

/// `Host` (HTTP/1.1) or the URI's authority (HTTP/2).
fn request_host(request: &Request) -> Option<String> {
    let header = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    header.or_else(|| request.uri().authority().map(|a| a.as_str())).map(str::to_ascii_lowercase)
}

fn host_allowed(host: &str, options: &ServerOptions) -> Result<(), ApiError> {
    let name = host_name(host);
    let allowed = is_ip_literal(name)
        || name == "localhost"
        || name.ends_with(".localhost")
        || name.eq_ignore_ascii_case(&options.hostname)
        || options.allowed_hosts.iter().any(|allowed| matches_allowed(name, allowed));
    if allowed {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "host `{name}` is not allowed: name this server by a loopback address, or allow the name with \
         --allow-host {name} (config: server.allowed_hosts)"
    )))
}

/// The host without its port: `[::1]:4096` -> `::1`, `localhost:4096` -> `localhost`.
fn host_name(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split_once(']').map_or(host, |(address, _port)| address);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

/// A page can only reach an IP literal by that address, never by a name an attacker controls.
fn is_ip_literal(name: &str) -> bool {
    name.parse::<std::net::IpAddr>().is_ok()
}

/// `example.com` allows exactly that name; `.example.com` also every subdomain.
fn matches_allowed(name: &str, allowed: &str) -> bool {
    let allowed = allowed.trim().to_ascii_lowercase();
    match allowed.strip_prefix('.') {
        Some(domain) => name == domain || name.strip_suffix(&allowed).is_some_and(|sub| !sub.is_empty()),
        None => name == allowed,
    }
}

fn changes_state(method: &Method, headers: &HeaderMap) -> bool {
    let websocket =
        headers.get(header::UPGRADE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    websocket || !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// No `Origin` (not a browser), the server's own origin, or a configured one.
fn origin_allowed(headers: &HeaderMap, host: Option<&str>, configured: &[String]) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let origin = origin.to_str().unwrap_or("").trim_end_matches('/');
    if same_origin(origin, host) || cors_allowed(origin, configured) {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "origin `{origin}` may not change anything on this server: only its own pages may, or origins \
         allowed with --cors (config: server.cors)"
    )))
}

/// Whether `origin` names the authority the request was sent to (the web UI's own pages; http or https
/// behind a TLS proxy).
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let authority = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    matches!((authority, host), (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host))
}

/// Origins that get CORS headers and may change state: those configured (`*` allows every origin).
pub(crate) fn cors_allowed(origin: &str, configured: &[String]) -> bool {
    configured.iter().any(|allowed| allowed == "*" || allowed.trim_end_matches('/') == origin)
}

fn json_body(headers: &HeaderMap) -> Result<(), ApiError> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        return Ok(());
    }
    let shown = if content_type.is_empty() { "none".to_owned() } else { format!("`{content_type}`") };
    Err(ApiError::UnsupportedMediaType(format!(
        "request bodies must be JSON (content-type: application/json); this one's content type is {shown}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> ServerOptions {
        ServerOptions { allowed_hosts: vec!["box.lan".into(), ".corp.example".into()], ..ServerOptions::default() }
    }

    #[test]
    fn loopback_ip_and_allowed_hosts_pass() {
        for host in ["localhost:4096", "127.0.0.1:4096", "[::1]:4096", "10.0.0.7", "app.localhost:1", "box.lan:80"] {
            assert!(host_allowed(host, &options()).is_ok(), "{host}");
        }
        for host in ["dev.corp.example", "corp.example:4096"] {
            assert!(host_allowed(host, &options()).is_ok(), "{host}");
        }
    }

    #[test]
    fn foreign_names_are_refused() {
        for host in ["attacker.example:4096", "localhost.attacker.example", "xcorp.example", "box.lan.evil", "[::1"] {
            assert!(host_allowed(host, &options()).is_err(), "{host}");
        }
    }

    #[test]
    fn own_and_configured_origins_pass() {
        assert!(same_origin("http://localhost:4096", Some("localhost:4096")));
        assert!(same_origin("https://box.lan", Some("box.lan")));
        assert!(!same_origin("http://localhost:3000", Some("localhost:4096")));
        assert!(!same_origin("null", Some("localhost:4096")));
        assert!(cors_allowed("https://app.example", &["https://app.example/".into()]));
        assert!(!cors_allowed("https://evil.example", &["https://app.example".into()]));
    }

    #[test]
    fn only_json_bodies_pass() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::CONTENT_TYPE, value.parse().unwrap());
            headers
        };
        assert!(json_body(&with("application/json")).is_ok());
        assert!(json_body(&with("Application/JSON; charset=utf-8")).is_ok());
        assert!(json_body(&with("text/plain")).is_err());
        assert!(json_body(&with("application/x-www-form-urlencoded")).is_err());
        assert!(json_body(&HeaderMap::new()).is_err());
    }
}
