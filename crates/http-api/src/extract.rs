//! Request extractors whose rejections are JSON [`ApiError`]s (400/413), never axum's plain-text ones,
//! and [`Dir`], the instance a request is routed to.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use axum::extract::Request;
use axum::extract::rejection::JsonRejection;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::instance::Instance;
use crate::state::AppState;
use crate::state::blocking;

/// The instance named by `?directory=`, else the `x-opencode-directory` header (percent-encoded by
/// OpenCode's clients), else the server's default directory.
pub struct Dir(pub Arc<Instance>);

impl FromRequestParts<AppState> for Dir {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let directory = requested_directory(parts)?.unwrap_or_else(|| state.inner.default_directory.clone());
        let app = state.clone();
        let instance = blocking(move || app.inner.instances.get(&directory)).await?;
        Ok(Self(instance))
    }
}

fn requested_directory(parts: &Parts) -> Result<Option<PathBuf>, ApiError> {
    let query = parts.uri.query().unwrap_or("");
    let from_query = form_pairs(query)?.into_iter().find(|(k, _)| k == "directory").map(|(_, v)| v);
    let from_header = parts
        .headers
        .get("x-opencode-directory")
        .map(|value| {
            let text = value.to_str().map_err(|_| ApiError::bad("x-opencode-directory is not valid text"))?;
            percent_decode(text).ok_or_else(|| ApiError::bad("x-opencode-directory is not valid percent-encoding"))
        })
        .transpose()?;
    Ok(from_query.or(from_header).filter(|d| !d.is_empty()).map(PathBuf::from))
}

/// `application/x-www-form-urlencoded` pairs of a query string.
pub(crate) fn form_pairs(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |s: &str| percent_decode(&s.replace('+', " "));
            match (decode(key), decode(value)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(ApiError::bad(format!("query parameter {key:?} is not valid percent-encoding"))),
            }
        })
        .collect()
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
pub(crate) fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A JSON body; malformed JSON and wrong types are 400, oversized bodies 413.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(JsonRejection::BytesRejection(rejection))
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Err(ApiError::PayloadTooLarge(format!(
                    "the request body is larger than {} bytes",
                    state.inner.options.body_limit
                )))
            }
            Err(rejection) => Err(ApiError::bad(rejection.body_text())),
        }
    }
}

/// A JSON body that may be absent (an empty body reads as `T::default()`).
pub struct OptionalJson<T>(pub T);

impl<T: DeserializeOwned + Default> FromRequest<AppState> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = state.inner.options.body_limit;
        let bytes = axum::body::to_bytes(req.into_body(), limit)
            .await
            .map_err(|_| ApiError::PayloadTooLarge(format!("the request body is larger than {limit} bytes")))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Self(T::default()));
        }
        serde_json::from_slice(&bytes).map(Self).map_err(|err| ApiError::bad(format!("invalid JSON body: {err}")))
    }
}

/// Query parameters; unknown or ill-typed values are 400.
pub struct Q<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Q<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Self(value))
            .map_err(|rejection| ApiError::bad(rejection.body_text()))
    }
}

/// Path parameters; a malformed segment is 400.
pub struct P<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for P<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Self(value))
            .map_err(|rejection| ApiError::bad(rejection.body_text()))
    }
}
