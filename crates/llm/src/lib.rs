//! `opencode-llm`: provider-neutral streaming for large language models.
//!
//! - **One canonical model.** [`LlmRequest`] (system parts, chronological messages, tools,
//!   generation controls, provider-semantic options, cache policy) in; [`LlmEvent`]s out, ending in
//!   exactly one terminal event; [`LlmResponse`] folds them. [`Usage`] is normalised across providers.
//! - **Route = protocol + endpoint + auth + framing.** A [`Route`] says where and how to send; the
//!   [`Protocol`](protocol::Protocol) it names is the only code that knows wire fields. Ready-made
//!   routes for OpenAI, Anthropic, Google, Bedrock, Azure and OpenAI-compatible providers are in
//!   [`provider`].
//! - **Bounded and classified failures.** Every failure is an [`LlmError`] with a kind and a
//!   retryable flag; requests are retried with jittered backoff honouring `retry-after`; a stalled
//!   stream times out; secrets are redacted from every error.
//!
//! ```no_run
//! use futures_util::StreamExt;
//! use opencode_llm::{LlmClient, LlmRequest, Message, provider};
//!
//! # async fn run() -> Result<(), opencode_llm::LlmError> {
//! let client = LlmClient::new();
//! let route = provider::route("anthropic", &provider::ProviderConfig::default())?;
//! let request = LlmRequest::new("claude-haiku-4-5").system("Be brief.").message(Message::user("Hi"));
//! let mut events = client.stream(&route, &request).await?;
//! while let Some(event) = events.next().await {
//!     println!("{event:?}");
//! }
//! # Ok(())
//! # }
//! ```

mod auth;
mod client;
mod error;
mod event;
pub mod framing;
mod percent;
pub mod protocol;
pub mod provider;
mod request;
mod response;
mod retry;
mod route;
mod shape;

pub use auth::Auth;
pub use auth::Secret;
pub use auth::SigV4Credentials;
pub use client::ClientOptions;
pub use client::LlmClient;
pub use client::LlmStream;
pub use client::PreparedRequest;
pub use error::ErrorKind;
pub use error::LlmError;
pub use error::classify_http;
pub use error::classify_stream_error;
pub use error::is_context_overflow;
pub use event::FinishReason;
pub use event::LlmEvent;
pub use event::Usage;
pub use request::*;
pub use response::Fold;
pub use response::LlmResponse;
pub use response::ToolCall;
pub use retry::RetryPolicy;
pub use route::Endpoint;
pub use route::Route;
pub use route::RouteDefaults;
pub use shape::DynamicHeader;
pub use shape::RequestShape;
