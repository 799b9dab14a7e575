//! Side completions: one-shot requests a plugin makes on the host's small model, out of band (a
//! historian summarising old history, a classifier). The host implements [`SideModel`] once it
//! can talk to models and hands it to every ready plugin ([`crate::Plugin::attach_side_model`]);
//! a host without one never calls that, and plugins fall back to what they do without a model.

use futures_util::future::BoxFuture;

use crate::hooks::ModelRef;

/// One side request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideRequest {
    /// The session it serves (its directory's configuration picks the providers).
    pub session_id: String,
    /// The session's main model: the small model is chosen next to it.
    pub model: ModelRef,
    /// What it is for, for logs (`historian`).
    pub purpose: String,
    pub system: String,
    pub prompt: String,
    pub max_output_tokens: u32,
}

/// The answer to a side request.
#[derive(Debug, Clone, PartialEq)]
pub struct SideAnswer {
    pub text: String,
    /// `provider/model` that answered.
    pub model: String,
    /// What the request used, as the provider reported it.
    pub usage: opencode_llm::Usage,
    /// What it cost at the model's list prices (0 when a subscription pays, or prices are unknown).
    /// The host has already added it to the session's totals.
    pub cost: f64,
}

/// Completes side requests on the small model.
pub trait SideModel: Send + Sync {
    /// The answer's text, or why there is none (one line).
    fn complete(&self, request: SideRequest) -> BoxFuture<'_, Result<SideAnswer, String>>;
}
