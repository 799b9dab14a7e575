//! A route: protocol + endpoint + auth + framing, plus per-route defaults and request shaping.

use std::sync::Arc;

use crate::Auth;
use crate::GenerationControls;
use crate::ProviderOptions;
use crate::framing::Framing;
use crate::protocol::Protocol;
use crate::shape::RequestShape;

/// Everything needed to send a canonical request to one provider endpoint.
#[derive(Debug, Clone)]
pub struct Route {
    /// The provider this route talks to (`openai`, `openrouter`, ...), used in errors and logs.
    pub provider: String,
    pub protocol: Arc<dyn Protocol>,
    pub endpoint: Endpoint,
    pub auth: Auth,
    pub framing: Framing,
    /// Static headers the provider requires (for example `anthropic-version`).
    pub headers: Vec<(String, String)>,
    /// Defaults under the request's own values.
    pub defaults: RouteDefaults,
    /// What the endpoint requires of requests beyond the protocol (signed-in endpoints).
    pub shape: RequestShape,
}

/// Where requests go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Base URL without a trailing slash, for example `https://api.openai.com/v1`.
    pub base_url: String,
    /// Replaces the protocol's path when set.
    pub path: Option<String>,
    /// Extra query parameters (for example Azure's `api-version`).
    pub query: Vec<(String, String)>,
}

/// Per-route defaults; the request's own values win field by field.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteDefaults {
    pub generation: GenerationControls,
    pub options: ProviderOptions,
}

impl Route {
    pub fn new(
        provider: impl Into<String>,
        protocol: Arc<dyn Protocol>,
        base_url: impl Into<String>,
        auth: Auth,
    ) -> Self {
        let framing = protocol.framing();
        Self {
            provider: provider.into(),
            protocol,
            endpoint: Endpoint { base_url: trim_base_url(base_url.into()), path: None, query: Vec::new() },
            auth,
            framing,
            headers: Vec::new(),
            defaults: RouteDefaults::default(),
            shape: RequestShape::default(),
        }
    }

    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.endpoint.base_url = trim_base_url(base_url.into());
        self
    }

    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(key, _)| !key.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn with_query(mut self, name: &str, value: &str) -> Self {
        self.endpoint.query.push((name.to_owned(), value.to_owned()));
        self
    }

    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.endpoint.path = Some(path.into());
        self
    }

    pub fn with_defaults(mut self, defaults: RouteDefaults) -> Self {
        self.defaults = defaults;
        self
    }

    pub fn with_shape(mut self, shape: RequestShape) -> Self {
        self.shape = shape;
        self
    }
}

fn trim_base_url(mut url: String) -> String {
    while url.ends_with('/') {
        url.pop();
    }
    url
}
