//! The web UI: static files under `crates/http-api/web/`, embedded in the binary with
//! `include_bytes!` (no build step, no Node), served by the router's fallback.
//!
//! - `GET /` and every GET path that is not the API's (its first segment names no route of the
//!   table, nor one of OpenCode's) answer `index.html`, so the UI's own paths survive a reload;
//!   unknown API paths stay JSON 404s.
//! - Every UI response carries a Content-Security-Policy that allows only this origin's scripts,
//!   styles and connections (no inline script, no eval, no framing).
//! - Answers are gzip-compressed when the client accepts it (compressed once, on first use).
//! - The UI is behind the same layers as the API: Basic auth when the server has a password (the
//!   browser asks once and sends the credentials with every later request and the event stream),
//!   and the guard (only GET/HEAD reach these files; state changes remain the API's, JSON-only and
//!   from the server's own origin).

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::OnceLock;

use axum::body::Body;
use axum::http::HeaderMap;
use axum::http::HeaderValue;
use axum::http::Method;
use axum::http::StatusCode;
use axum::http::Uri;
use axum::http::header;
use axum::response::IntoResponse;
use axum::response::Response;

use crate::error::ApiError;

/// The policy of every UI response. `connect-src 'self'` covers fetch and EventSource to this server.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

struct Asset {
    path: &'static str,
    mime: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $mime:expr, $file:literal) => {
        Asset { path: $path, mime: $mime, body: include_bytes!(concat!("../web/", $file)) }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the UI, by the path it is served at.
const ASSETS: &[Asset] = &[
    asset!("/index.html", "text/html; charset=utf-8", "index.html"),
    asset!("/favicon.svg", "image/svg+xml", "favicon.svg"),
    asset!("/assets/style.css", "text/css; charset=utf-8", "style.css"),
    asset!("/assets/js/app.js", JS, "js/app.js"),
    asset!("/assets/js/api.js", JS, "js/api.js"),
    asset!("/assets/js/composer.js", JS, "js/composer.js"),
    asset!("/assets/js/dock.js", JS, "js/dock.js"),
    asset!("/assets/js/dom.js", JS, "js/dom.js"),
    asset!("/assets/js/files.js", JS, "js/files.js"),
    asset!("/assets/js/markdown.js", JS, "js/markdown.js"),
    asset!("/assets/js/parts.js", JS, "js/parts.js"),
    asset!("/assets/js/review.js", JS, "js/review.js"),
    asset!("/assets/js/sidebar.js", JS, "js/sidebar.js"),
    asset!("/assets/js/state.js", JS, "js/state.js"),
    asset!("/assets/js/terminal.js", JS, "js/terminal.js"),
    asset!("/assets/js/timeline.js", JS, "js/timeline.js"),
];

/// The paths the UI is served at (for tests and the benchmarks).
pub fn asset_paths() -> impl Iterator<Item = &'static str> {
    ASSETS.iter().map(|a| a.path)
}

/// The router's fallback: UI files and `index.html` for GET/HEAD outside the API, JSON 404 otherwise.
pub(crate) async fn fallback(method: Method, uri: Uri, headers: HeaderMap) -> Response {
    if method != Method::GET && method != Method::HEAD {
        return ApiError::not_found("no such route").into_response();
    }
    let path = uri.path();
    let index = ASSETS.iter().position(|a| a.path == path).or_else(|| {
        let ui_path = path == "/" || !api_prefixes().contains(first_segment(path));
        ui_path.then_some(0)
    });
    let Some(index) = index else { return ApiError::not_found("no such route").into_response() };
    respond(index, &headers, method == Method::HEAD)
}

fn first_segment(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

/// First path segments of OpenCode 1.18's API that this server does not serve (TUI control, sync):
/// a client calling them gets the JSON 404 it can handle, never the page.
const OPENCODE_ONLY_PREFIXES: [&str; 2] = ["tui", "sync"];

/// First path segments of the API's routes (`session`, `event`, `find`, ...), OpenCode's others, and
/// `assets` (a missing file under it is a 404 rather than the page).
fn api_prefixes() -> &'static BTreeSet<&'static str> {
    static PREFIXES: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    PREFIXES.get_or_init(|| {
        let mut prefixes: BTreeSet<&'static str> =
            crate::routes::operations().iter().map(|op| first_segment(op.path)).collect();
        prefixes.extend(OPENCODE_ONLY_PREFIXES);
        prefixes.insert("assets");
        prefixes.remove("");
        prefixes
    })
}

fn respond(index: usize, headers: &HeaderMap, head: bool) -> Response {
    let asset = &ASSETS[index];
    let gzip = accepts_gzip(headers);
    let body: &'static [u8] = if gzip { compressed(index) } else { asset.body };
    let mut response = if head { Body::empty().into_response() } else { Body::from(body).into_response() };
    *response.status_mut() = StatusCode::OK;
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.mime));
    out.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    if gzip {
        out.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    out.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    // Revalidated on every load: the files change with the binary, and loopback makes it cheap.
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    out.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    out.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    out.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    out.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',').any(|coding| {
            let mut fields = coding.split(';');
            let name = fields.next().unwrap_or("").trim();
            let refused = fields.any(|f| matches!(f.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            name.eq_ignore_ascii_case("gzip") && !refused
        })
    })
}

/// The gzip form of asset `index`, made on first use and kept (a few tens of KB for the whole UI).
fn compressed(index: usize) -> &'static [u8] {
    static GZIPPED: OnceLock<Vec<OnceLock<Vec<u8>>>> = OnceLock::new();
    let slots = GZIPPED.get_or_init(|| ASSETS.iter().map(|_| OnceLock::new()).collect());
    slots[index].get_or_init(|| gzip(ASSETS[index].body))
}

/// Gzip at the best level; writing into a `Vec` cannot fail, and if it somehow did the client
/// would get the empty body of a broken asset rather than a crash.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    if encoder.write_all(data).is_err() {
        return Vec::new();
    }
    encoder.finish().unwrap_or_default()
}

/// Bytes of the whole UI as sent: `(raw, gzip)`.
pub fn transfer_size() -> (usize, usize) {
    ASSETS.iter().enumerate().fold((0, 0), |(raw, gz), (i, a)| (raw + a.body.len(), gz + compressed(i).len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_the_web_folder_is_served() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("web");
        let mut on_disk = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    on_disk.push(path.strip_prefix(&dir).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        for file in on_disk {
            let served = ASSETS.iter().any(|a| a.path.ends_with(&format!("/{file}")));
            assert!(served, "web/{file} is not in ASSETS");
        }
    }

    #[test]
    fn ui_paths_and_api_paths_are_told_apart() {
        assert!(api_prefixes().contains("session"));
        assert!(api_prefixes().contains("event"));
        assert!(api_prefixes().contains("tui"), "OpenCode's TUI control routes stay JSON 404s");
        assert!(!api_prefixes().contains("settings"));
        assert_eq!(first_segment("/session/ses_1/message"), "session");
        assert_eq!(first_segment("/"), "");
    }

    #[test]
    fn gzip_is_used_only_when_accepted() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
            h
        };
        assert!(accepts_gzip(&with("gzip, deflate, br")));
        assert!(accepts_gzip(&with("br;q=1.0, GZIP;q=0.5")));
        assert!(!accepts_gzip(&with("gzip;q=0")));
        assert!(!accepts_gzip(&with("br")));
        assert!(!accepts_gzip(&HeaderMap::new()));
        let (raw, gz) = transfer_size();
        assert!(gz < raw && gz > 0);
    }
}
