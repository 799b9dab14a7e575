//! A mock LLM provider HTTP server for tests.
//!
//! [`MockProvider`] is a real HTTP/1.1 server listening on `127.0.0.1` at a
//! random port. Tests point a client (or a provider configuration) at
//! [`MockProvider::base_url`], script the responses it should serve, and then
//! inspect the requests it received.
//!
//! # Scripting responses
//!
//! Responses are queued with [`MockProvider::push`] / [`MockProvider::push_all`]
//! and served strictly first-in first-out, whatever the method or path of the
//! incoming request. When the queue is empty the server answers `500` with a
//! JSON error body (`{"error":{"message":"mock provider: no scripted response
//! left for POST /v1/chat/completions"}}`), so a missing script shows up as a
//! readable provider error instead of a hang.
//!
//! A [`MockResponse`] is a status, headers and a *body script*: a sequence of
//! chunks, pauses and an optional abnormal ending.
//!
//! * [`MockResponse::sse`] frames each payload as `data: <payload>\n\n` with
//!   `content-type: text/event-stream`.
//! * [`MockResponse::json`] and [`MockResponse::body`] serve a complete body.
//! * [`MockResponse::chunk`] appends a chunk, [`MockResponse::delay`] pauses
//!   before the next one, and [`MockResponse::split_into_chunks`] re-splits the
//!   body written so far into small pieces (to exercise parsers against
//!   events split across reads — combine with `delay` if the pieces must
//!   arrive in separate reads, since TCP may coalesce back-to-back writes).
//! * [`MockResponse::then_disconnect`] aborts the connection mid-body, so the
//!   client sees a transport error instead of a clean end of stream, and
//!   [`MockResponse::then_stall`] keeps the connection open without sending
//!   anything more (to exercise idle timeouts).
//!
//! # Replaying recordings
//!
//! Recorded provider traffic ("cassettes") lives in the shared fixtures folder
//! (see [`fixtures_dir`] and [`require_fixtures`]). [`Cassette::load`] reads
//! one, and [`Cassette::responses`] turns its interactions into responses that
//! reproduce the recorded status, headers and exact body bytes. Compare the
//! request the client sent with the recorded one via [`canonical_json`].
//!
//! # Prompt caching
//!
//! [`prefix_cache::PrefixCache`] computes the usage an Anthropic Messages request would be billed
//! (input, cache creation, cache read) from its body and a simulated clock, following the
//! provider's published prefix-caching rules; benchmarks replay whole sessions through it.
//!
//! # Example
//!
//! ```
//! use opencode_mock_provider::{MockProvider, MockResponse, canonical_json};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let _ = rustls::crypto::ring::default_provider().install_default();
//! let provider = MockProvider::start().await?;
//! provider.push(MockResponse::sse([r#"{"delta":"Hel"}"#, r#"{"delta":"lo"}"#, "[DONE]"]));
//!
//! let response = reqwest::Client::new()
//!     .post(format!("{}/v1/chat/completions", provider.base_url()))
//!     .header("content-type", "application/json")
//!     .body(r#"{"stream":true,"model":"m"}"#)
//!     .send()
//!     .await?;
//! assert_eq!(response.status(), 200);
//! assert_eq!(
//!     response.text().await?,
//!     "data: {\"delta\":\"Hel\"}\n\ndata: {\"delta\":\"lo\"}\n\ndata: [DONE]\n\n"
//! );
//!
//! let requests = provider.requests();
//! assert_eq!(requests.len(), 1);
//! assert_eq!(requests[0].method, "POST");
//! assert_eq!(requests[0].path_and_query, "/v1/chat/completions");
//! assert_eq!(requests[0].header("Content-Type"), Some("application/json"));
//! assert_eq!(
//!     canonical_json(&requests[0].body_json()?),
//!     r#"{"model":"m","stream":true}"#
//! );
//! assert_eq!(provider.remaining(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! The server works from both current-thread (`#[tokio::test]`) and
//! multi-thread runtimes; it is spawned onto the runtime that calls
//! [`MockProvider::start`] and shuts down when the [`MockProvider`] is dropped
//! (stalled or delayed responses are then aborted).

pub mod browser;
mod cassette;
mod config;
mod fixtures;
pub mod git;
pub mod peer;
pub mod prefix_cache;
mod response;
mod server;

pub use cassette::{Cassette, CassetteError, Interaction, RecordedHttpRequest, RecordedResponse};
pub use fixtures::{canonical_json, fixtures_dir, require_fixtures};
pub use response::MockResponse;
pub use server::{MockProvider, RecordedRequest};
