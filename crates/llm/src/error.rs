//! Typed, classified errors.
//!
//! Every failure is an [`LlmError`] with a [`ErrorKind`] and a `retryable` flag. HTTP failures are
//! classified from status, headers and body ([`classify_http`]); protocols classify in-band stream
//! errors with [`classify_stream_error`]. Secrets never appear in messages: the client redacts every
//! error with the credentials it sent ([`LlmError::redact`]).

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use regex::RegexSet;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::percent::UNRESERVED;
use crate::percent::percent_encode;

/// What went wrong, in terms a caller can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The provider rejected the request as malformed or unsupported.
    InvalidRequest,
    /// An invalid request because the prompt does not fit the model's context window:
    /// compact the conversation and retry, never retry as is.
    ContextOverflow,
    /// Missing, invalid or expired credentials, or insufficient permissions.
    Authentication,
    /// Too many requests; retry after a while.
    RateLimit,
    /// Out of credits or over a spending limit; retrying will not help.
    QuotaExceeded,
    /// The provider refused the content.
    ContentPolicy,
    /// The provider failed or is overloaded.
    ProviderInternal,
    /// The connection failed or broke.
    Transport,
    /// The provider stopped sending data.
    Timeout,
    /// The provider sent something that does not follow its own wire format.
    InvalidProviderOutput,
    /// The route or request cannot be used as configured (unknown provider, bad options).
    Configuration,
}

impl ErrorKind {
    /// Whether an error of this kind is worth retrying by default.
    pub fn default_retryable(self) -> bool {
        matches!(self, Self::RateLimit | Self::ProviderInternal | Self::Transport | Self::Timeout)
    }
}

/// A classified LLM failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize, JsonSchema)]
#[error("{}", self.render())]
pub struct LlmError {
    pub kind: ErrorKind,
    /// The provider's own message, or ours when the provider gave none.
    pub message: String,
    pub retryable: bool,
    /// The route that failed (`openai`, `anthropic`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The provider's error code or type (`insufficient_quota`, `overloaded_error`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// How long the provider asked us to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl LlmError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retryable: kind.default_retryable(),
            provider: None,
            status: None,
            code: None,
            retry_after_ms: None,
            request_id: None,
        }
    }

    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidRequest, message)
    }

    pub fn invalid_output(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidProviderOutput, message)
    }

    pub fn configuration(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Configuration, message)
    }

    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(Duration::from_millis)
    }

    pub fn is_context_overflow(&self) -> bool {
        self.kind == ErrorKind::ContextOverflow
    }

    /// What the user can do about it.
    pub fn hint(&self) -> &'static str {
        match self.kind {
            ErrorKind::InvalidRequest => "check the model id and the options this model supports",
            ErrorKind::ContextOverflow => "compact the conversation or pick a model with a larger context window",
            ErrorKind::Authentication => "check the API key or sign in again",
            ErrorKind::RateLimit => "wait and retry, or lower the request rate",
            ErrorKind::QuotaExceeded => "add credits or raise the spending limit with the provider",
            ErrorKind::ContentPolicy => "rephrase the request",
            ErrorKind::ProviderInternal => "the provider is failing or overloaded; retry later",
            ErrorKind::Transport => "check the network connection and the base URL",
            ErrorKind::Timeout => "the provider stalled; retry, or raise the stream idle timeout",
            ErrorKind::InvalidProviderOutput => {
                "the endpoint did not answer in the expected wire format; check the base URL and protocol"
            }
            ErrorKind::Configuration => "fix the provider configuration",
        }
    }

    /// Replaces every occurrence of each secret (and its URL-encoded form) with `<redacted>`.
    pub fn redact(mut self, secrets: &[String]) -> Self {
        self.message = redact(&self.message, secrets);
        self
    }

    fn render(&self) -> String {
        let mut out = String::new();
        if let Some(provider) = &self.provider {
            out.push_str(provider);
            out.push_str(": ");
        }
        out.push_str(&self.message);
        match (self.status, &self.code) {
            (Some(status), Some(code)) => out.push_str(&format!(" (HTTP {status}, {code})")),
            (Some(status), None) => out.push_str(&format!(" (HTTP {status})")),
            (None, Some(code)) => out.push_str(&format!(" ({code})")),
            (None, None) => {}
        }
        out
    }
}

/// Replaces each secret of four or more characters, raw or URL-encoded, with `<redacted>`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets.iter().filter(|secret| secret.len() >= 4) {
        out = out.replace(secret.as_str(), "<redacted>");
        let encoded = percent_encode(secret, UNRESERVED);
        if encoded != *secret {
            out = out.replace(encoded.as_str(), "<redacted>");
        }
    }
    out
}

/// The most bytes of an error body kept in a message.
const MAX_ERROR_BODY: usize = 2000;

/// Classifies a non-success HTTP response (or a success response whose body is an error).
pub fn classify_http(status: u16, headers: &[(String, String)], body: &[u8]) -> LlmError {
    let parsed = serde_json::from_slice::<Value>(body).ok();
    let details = parsed.as_ref().map(ErrorDetails::from_json).unwrap_or_default();
    let message = details.message.clone().unwrap_or_else(|| body_snippet(status, headers, body));
    let haystack = format!("{} {}", details.code.as_deref().unwrap_or(""), message);

    let kind = if is_content_policy(&haystack) && status != 429 {
        ErrorKind::ContentPolicy
    } else {
        match status {
            401 | 403 => ErrorKind::Authentication,
            402 => ErrorKind::QuotaExceeded,
            429 if is_quota(&haystack) => ErrorKind::QuotaExceeded,
            429 => ErrorKind::RateLimit,
            413 => ErrorKind::ContextOverflow,
            400 | 404 | 409 | 422 if is_context_overflow(&haystack) => ErrorKind::ContextOverflow,
            408 => ErrorKind::Timeout,
            409 => ErrorKind::ProviderInternal,
            400..=499 => ErrorKind::InvalidRequest,
            _ => ErrorKind::ProviderInternal,
        }
    };
    let mut error = LlmError::new(kind, message).with_status(status);
    error.code = details.code;
    error.retry_after_ms = retry_after_ms(headers).or(details.retry_after_ms);
    error.request_id = request_id(headers);
    if let Some(should_retry) = header(headers, "x-should-retry") {
        error.retryable = should_retry.eq_ignore_ascii_case("true");
    }
    error
}

/// Classifies an error reported inside a successful stream, from its code/type and message.
pub fn classify_stream_error(code: Option<&str>, message: &str) -> LlmError {
    let haystack = format!("{} {}", code.unwrap_or(""), message);
    let kind = if is_context_overflow(&haystack) {
        ErrorKind::ContextOverflow
    } else if is_quota(&haystack) {
        ErrorKind::QuotaExceeded
    } else if is_content_policy(&haystack) {
        ErrorKind::ContentPolicy
    } else if RATE_LIMIT.is_match(&haystack) {
        ErrorKind::RateLimit
    } else if AUTH.is_match(&haystack) {
        ErrorKind::Authentication
    } else if INVALID.is_match(&haystack) {
        ErrorKind::InvalidRequest
    } else {
        ErrorKind::ProviderInternal
    };
    let mut error = LlmError::new(kind, message);
    if kind == ErrorKind::ProviderInternal {
        // Only failures the provider marks as transient are worth a retry.
        error.retryable = TRANSIENT.is_match(&haystack);
    }
    error.code = code.map(str::to_owned);
    error
}

/// Whether a provider message says the prompt does not fit the context window.
pub fn is_context_overflow(message: &str) -> bool {
    if OVERFLOW_EXCLUSIONS.is_match(message) {
        return false;
    }
    OVERFLOW.is_match(message)
}

fn is_quota(text: &str) -> bool {
    QUOTA.is_match(text)
}

fn is_content_policy(text: &str) -> bool {
    CONTENT_POLICY.is_match(text)
}

#[allow(clippy::expect_used, reason = "the patterns are constants covered by tests")]
fn regex_set(patterns: &[&str]) -> RegexSet {
    RegexSet::new(patterns).expect("constant regex set compiles")
}

#[allow(clippy::expect_used, reason = "the pattern is a constant covered by tests")]
fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant regex compiles")
}

static OVERFLOW: LazyLock<RegexSet> = LazyLock::new(|| {
    regex_set(&[
        r"(?i)prompt is too long",
        r"(?i)input is too long for requested model",
        r"(?i)exceeds the context window",
        r"(?i)context_length_exceeded",
        r"(?i)input token count.*exceeds the maximum",
        r"(?i)maximum prompt length is \d+",
        r"(?i)reduce the length of the messages",
        r"(?i)maximum context length is \d+ tokens",
        r"(?i)exceeds the limit of \d+",
        r"(?i)exceeds the available context size",
        r"(?i)greater than the context length",
        r"(?i)context window exceeds limit",
        r"(?i)exceeded model token limit",
        r"(?i)too large for model with \d+ maximum context length",
        r"(?i)prompt too long; exceeded (max )?context length",
        r"(?i)model_context_window_exceeded",
        r"(?i)context[_ ]length[_ ]exceeded",
        r"(?i)request entity too large",
        r"(?i)request_too_large",
        r"(?i)prompt has \d+ tokens, but the configured context size is \d+",
        r"(?i)^4(00|13)\s*(status code)?\s*\(no body\)",
    ])
});

static OVERFLOW_EXCLUSIONS: LazyLock<RegexSet> = LazyLock::new(|| {
    regex_set(&[r"(?i)^(throttling error|service unavailable):", r"(?i)rate limit", r"(?i)too many requests"])
});

static QUOTA: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?i)insufficient[-_\s]?quota|quota[-_\s]?exceeded|enforced_spend_limit|billing|credit balance|usage_not_included",
    )
});

static CONTENT_POLICY: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)content[-_\s]?policy|content_filter|safety system|flagged"));

static RATE_LIMIT: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)rate[-_\s]?limit|too many requests|throttl"));

static AUTH: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)authentication|unauthori[sz]ed|invalid[-_\s]api[-_\s]key|permission_error"));

static INVALID: LazyLock<Regex> = LazyLock::new(|| regex(r"(?i)invalid_request|invalid_prompt|validation"));

static TRANSIENT: LazyLock<Regex> =
    LazyLock::new(|| regex(r"(?i)overloaded|server_error|server_is_overloaded|internal|unavailable|timeout|try again"));

/// Error fields found in a provider's JSON error body, whatever its shape.
#[derive(Debug, Default)]
struct ErrorDetails {
    message: Option<String>,
    code: Option<String>,
    retry_after_ms: Option<u64>,
}

impl ErrorDetails {
    /// Understands `{"error": {"message", "type"|"code"|"status", "details"}}` (OpenAI, Anthropic,
    /// Gemini, OpenRouter), `{"error": "text"}`, `{"message": ...}` (Bedrock) and `{"detail": ...}`.
    fn from_json(value: &Value) -> Self {
        let root = match value {
            Value::Array(items) => items.first().unwrap_or(value),
            _ => value,
        };
        let error = root.get("error");
        let object = error.filter(|error| error.is_object()).unwrap_or(root);
        let message = object
            .get("message")
            .and_then(Value::as_str)
            .or_else(|| error.and_then(Value::as_str))
            .or_else(|| root.get("detail").and_then(Value::as_str))
            .or_else(|| root.get("Message").and_then(Value::as_str))
            .map(str::to_owned);
        let code = ["code", "type", "status"]
            .iter()
            .find_map(|key| match object.get(*key) {
                Some(Value::String(code)) if !code.is_empty() => Some(code.clone()),
                Some(Value::Number(code)) if *key == "code" && object.get("type").is_none() => Some(code.to_string()),
                _ => None,
            })
            .or_else(|| root.get("__type").and_then(Value::as_str).map(str::to_owned));
        let retry_after_ms = object.get("details").and_then(Value::as_array).and_then(|details| {
            details.iter().find_map(|detail| detail.get("retryDelay").and_then(Value::as_str).and_then(parse_duration))
        });
        Self { message, code, retry_after_ms }
    }
}

/// Parses a protobuf JSON duration such as `"34.4s"` into milliseconds.
fn parse_duration(text: &str) -> Option<u64> {
    let seconds: f64 = text.strip_suffix('s')?.parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64)
}

fn body_snippet(status: u16, headers: &[(String, String)], body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let is_html = header(headers, "content-type").is_some_and(|value| value.contains("html"))
        || text.trim_start().starts_with('<');
    let text = if is_html { strip_tags(&text) } else { text.trim().to_owned() };
    if text.is_empty() {
        return format!("provider request failed with HTTP {status} and an empty body");
    }
    let mut snippet: String = text.chars().take(MAX_ERROR_BODY).collect();
    if snippet.len() < text.len() {
        snippet.push('…');
    }
    if is_html { format!("provider answered with an HTML page: {snippet}") } else { snippet }
}

fn strip_tags(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(ch),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
}

/// `retry-after-ms`, then `retry-after` in seconds or as an HTTP date.
pub fn retry_after_ms(headers: &[(String, String)]) -> Option<u64> {
    if let Some(ms) = header(headers, "retry-after-ms").and_then(|value| value.trim().parse::<f64>().ok()) {
        return (ms.is_finite() && ms >= 0.0).then_some(ms as u64);
    }
    let value = header(headers, "retry-after")?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then_some((seconds * 1000.0) as u64);
    }
    let date = httpdate::parse_http_date(value).ok()?;
    let wait = date.duration_since(std::time::SystemTime::now()).unwrap_or_default();
    Some(wait.as_millis() as u64)
}

fn request_id(headers: &[(String, String)]) -> Option<String> {
    ["x-request-id", "request-id", "x-amzn-requestid", "x-amz-request-id", "x-goog-request-id", "cf-ray"]
        .iter()
        .find_map(|name| header(headers, name))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_headers() -> Vec<(String, String)> {
        vec![("content-type".to_owned(), "application/json".to_owned())]
    }

    #[test]
    fn openai_unsupported_parameter_is_a_terminal_invalid_request() {
        let body = br#"{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}"#;
        let error = classify_http(400, &json_headers(), body);
        assert_eq!(error.kind, ErrorKind::InvalidRequest);
        assert!(!error.retryable);
        assert_eq!(error.code.as_deref(), Some("unsupported_parameter"));
        assert!(error.message.starts_with("Unsupported parameter: 'max_tokens'"));
    }

    #[test]
    fn anthropic_overflow_is_classified() {
        let body = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 213462 tokens > 200000 maximum"}}"#;
        let error = classify_http(400, &json_headers(), body);
        assert_eq!(error.kind, ErrorKind::ContextOverflow);
        assert!(!error.retryable);
    }

    #[test]
    fn quota_429_is_terminal_and_rate_limit_429_is_retryable() {
        let quota = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let error = classify_http(429, &json_headers(), quota);
        assert_eq!((error.kind, error.retryable), (ErrorKind::QuotaExceeded, false));

        let mut headers = json_headers();
        headers.push(("retry-after".to_owned(), "3".to_owned()));
        let error = classify_http(429, &headers, br#"{"error":{"message":"Rate limit reached"}}"#);
        assert_eq!((error.kind, error.retryable, error.retry_after_ms), (ErrorKind::RateLimit, true, Some(3000)));
    }

    #[test]
    fn retry_after_ms_header_wins() {
        let headers = vec![("retry-after-ms".to_owned(), "250".to_owned()), ("retry-after".to_owned(), "9".to_owned())];
        assert_eq!(retry_after_ms(&headers), Some(250));
    }

    #[test]
    fn html_error_page_becomes_a_readable_message() {
        let headers = vec![("content-type".to_owned(), "text/html".to_owned())];
        let error = classify_http(502, &headers, b"<html><body><h1>502 Bad Gateway</h1></body></html>");
        assert_eq!(error.kind, ErrorKind::ProviderInternal);
        assert_eq!(error.message, "provider answered with an HTML page: 502 Bad Gateway");
    }

    #[test]
    fn overloaded_stream_error_is_retryable() {
        let error = classify_stream_error(Some("overloaded_error"), "Overloaded");
        assert_eq!((error.kind, error.retryable), (ErrorKind::ProviderInternal, true));
        let error = classify_stream_error(Some("insufficient_quota"), "You exceeded your current quota");
        assert_eq!((error.kind, error.retryable), (ErrorKind::QuotaExceeded, false));
    }

    #[test]
    fn overflow_exclusions_win() {
        assert!(is_context_overflow("This model's maximum context length is 8192 tokens"));
        assert!(!is_context_overflow("Rate limit: maximum context length is 8192 tokens"));
    }

    #[test]
    fn secrets_are_redacted_raw_and_url_encoded() {
        let secrets = vec!["sk-abc/123".to_owned()];
        assert_eq!(redact("key sk-abc/123 and sk-abc%2F123", &secrets), "key <redacted> and <redacted>");
    }
}
