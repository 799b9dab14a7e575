//! Authentication: how a route proves who it is.
//!
//! Credentials are resolved when a request is sent, never when a route is built, so a missing
//! environment variable is a typed [`Authentication`](crate::ErrorKind::Authentication) error that
//! names the variable. Every secret that was sent is reported back so errors can be redacted.

mod sigv4;

use std::time::SystemTime;

pub use sigv4::SigV4Credentials;

use crate::ErrorKind;
use crate::LlmError;
use crate::PreparedRequest;

/// Where a secret comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    /// The value itself.
    Value(String),
    /// The first of these environment variables that is set and not empty.
    Env(Vec<String>),
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Secret::Value(<redacted>)"),
            Self::Env(vars) => f.debug_tuple("Secret::Env").field(vars).finish(),
        }
    }
}

impl Secret {
    pub fn env(var: impl Into<String>) -> Self {
        Self::Env(vec![var.into()])
    }

    /// The secret's value, or `None` when no variable is set.
    pub fn lookup(&self) -> Option<String> {
        match self {
            Self::Value(value) => Some(value.clone()),
            Self::Env(vars) => vars.iter().find_map(|var| std::env::var(var).ok().filter(|value| !value.is_empty())),
        }
    }

    /// The secret's value, or an authentication error naming what to set.
    pub fn resolve(&self) -> Result<String, LlmError> {
        self.lookup().ok_or_else(|| match self {
            Self::Value(_) => LlmError::new(ErrorKind::Authentication, "the API key is empty"),
            Self::Env(vars) => LlmError::new(
                ErrorKind::Authentication,
                format!("missing API key: set the environment variable {}", vars.join(" or ")),
            ),
        })
    }
}

/// How requests are authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    None,
    /// `Authorization: Bearer <secret>`.
    Bearer(Secret),
    /// A named header carrying the secret, for example `x-api-key` or `api-key`.
    Header {
        name: String,
        secret: Secret,
    },
    /// AWS Signature Version 4 over the exact request bytes.
    AwsSigV4(SigV4Credentials),
}

impl Auth {
    pub fn bearer_env(var: &str) -> Self {
        Self::Bearer(Secret::env(var))
    }

    pub fn header_env(name: &str, var: &str) -> Self {
        Self::Header { name: name.to_owned(), secret: Secret::env(var) }
    }

    /// Adds the credentials to the request; returns the secrets used, for redaction.
    pub fn apply(&self, request: &mut PreparedRequest, now: SystemTime) -> Result<Vec<String>, LlmError> {
        match self {
            Self::None => Ok(Vec::new()),
            Self::Bearer(secret) => {
                let value = secret.resolve()?;
                request.set_header("authorization", &format!("Bearer {value}"));
                Ok(vec![value])
            }
            Self::Header { name, secret } => {
                let value = secret.resolve()?;
                request.set_header(name, &value);
                Ok(vec![value])
            }
            Self::AwsSigV4(credentials) => sigv4::sign(credentials, request, now),
        }
    }
}
