//! Errors: [`ApiError`] is what a request gets back (a JSON body in OpenCode's `{name, data: {message}}`
//! shape, plus a stable `data.code`); [`ServeError`] is why the server could not start.

use std::net::SocketAddr;

use axum::Json;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use opencode_session_store::StoreError;
use serde_json::json;

use crate::driver::DriverError;

/// A failed request. Every variant maps to one status and one stable code; none is ever a panic.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    /// Malformed JSON, wrong types, bad paths or query values (400 `INVALID_INPUT`).
    #[error("{0}")]
    BadRequest(String),
    /// The project, session, message or file does not exist (404 `NOT_FOUND`).
    #[error("{0}")]
    NotFound(String),
    /// The request contradicts the current state, e.g. the session is busy (409 `CONFLICT`).
    #[error("{0}")]
    Conflict(String),
    /// Missing or wrong credentials (401 `UNAUTHORIZED`).
    #[error("{0}")]
    Unauthorized(String),
    /// Refused whoever asks: a foreign `Host` or `Origin`, or a change the configuration forbids
    /// (403 `FORBIDDEN`).
    #[error("{0}")]
    Forbidden(String),
    /// A request body that is not JSON (415 `UNSUPPORTED_MEDIA_TYPE`).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The body is larger than the server accepts (413 `PAYLOAD_TOO_LARGE`).
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The session runtime is not available (503 `UNAVAILABLE`).
    #[error("{0}")]
    Unavailable(String),
    /// Anything else (500 `INTERNAL`): a storage failure, a runtime failure.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable machine-readable code (`data.code`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "INVALID_INPUT",
            Self::NotFound(_) => "NOT_FOUND",
            Self::Conflict(_) => "CONFLICT",
            Self::Unauthorized(_) => "UNAUTHORIZED",
            Self::Forbidden(_) => "FORBIDDEN",
            Self::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            Self::PayloadTooLarge(_) => "PAYLOAD_TOO_LARGE",
            Self::Unavailable(_) => "UNAVAILABLE",
            Self::Internal(_) => "INTERNAL",
        }
    }

    /// OpenCode's error `name` for this kind of failure.
    pub fn name(&self) -> &'static str {
        match self {
            Self::BadRequest(_) | Self::PayloadTooLarge(_) | Self::UnsupportedMediaType(_) => "BadRequest",
            Self::Forbidden(_) => "ForbiddenError",
            Self::NotFound(_) => "NotFoundError",
            Self::Conflict(_) => "SessionBusyError",
            Self::Unauthorized(_) => "UnauthorizedError",
            Self::Unavailable(_) | Self::Internal(_) => "UnknownError",
        }
    }

    /// The JSON body: `{name, data: {message, code}}`.
    pub fn body(&self) -> serde_json::Value {
        json!({ "name": self.name(), "data": { "message": self.to_string(), "code": self.code() } })
    }

    pub(crate) fn bad(message: impl Into<String>) -> Self {
        Self::BadRequest(message.into())
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound(message.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if matches!(self, Self::Internal(_)) {
            tracing::error!(error = %self, "request failed");
        }
        (self.status(), Json(self.body())).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { .. } => Self::NotFound(err.to_string()),
            StoreError::Invalid(_) => Self::BadRequest(err.to_string()),
            StoreError::Conflict(_) => Self::Conflict(err.to_string()),
            other => Self::Internal(format!("{other} ({})", other.hint())),
        }
    }
}

impl From<DriverError> for ApiError {
    fn from(err: DriverError) -> Self {
        match err {
            DriverError::NotFound(m) => Self::NotFound(m),
            DriverError::Invalid(m) => Self::BadRequest(m),
            DriverError::Busy(m) => Self::Conflict(m),
            DriverError::Unavailable(m) => Self::Unavailable(m),
            DriverError::Failed(m) => Self::Internal(m),
        }
    }
}

/// Why [`crate::serve`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Another process listens on the address.
    #[error("cannot listen on {addr}: the port is already in use{}", holder.as_ref().map(|h| format!(" by {h}")).unwrap_or_default())]
    PortInUse { addr: String, holder: Option<String> },
    /// The hostname does not resolve to a local address.
    #[error("cannot resolve hostname {hostname:?}: {detail}")]
    Resolve { hostname: String, detail: String },
    /// Any other bind failure (permissions, address not available).
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    /// The session store, catalog or provider client could not be set up.
    #[error("cannot start the session runtime: {message}")]
    Setup { message: String, hint: &'static str },
}

impl ServeError {
    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::PortInUse { .. } => "stop the other process, or pick another port with --port (0 picks a free one)",
            Self::Resolve { .. } => "use an IP address such as 127.0.0.1 or 0.0.0.0, or a resolvable hostname",
            Self::Bind { .. } => "ports below 1024 need privileges; pick another port or address",
            Self::Setup { hint, .. } => hint,
        }
    }
}
