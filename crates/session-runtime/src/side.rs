//! The runtime as the plugins' side model: one-shot requests on the small model chosen next to
//! the session's main model, with the session directory's providers and credentials (as titles
//! are made), off the session's own turns.

use std::sync::Arc;
use std::sync::Weak;

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_llm::Usage;
use opencode_plugin_host::SideAnswer;
use opencode_plugin_host::SideModel;
use opencode_plugin_host::SideRequest;
use opencode_session_store::StoreError;

use crate::error::RuntimeError;
use crate::records::tokens;
use crate::runtime::Inner;
use crate::runtime::ModelChoice;
use crate::store::blocking;

/// The side model over a runtime (weak: the runtime owns its plugins, not the other way round).
pub(crate) struct RuntimeSideModel(pub(crate) Weak<Inner>);

impl SideModel for RuntimeSideModel {
    fn complete(&self, request: SideRequest) -> BoxFuture<'_, Result<SideAnswer, String>> {
        Box::pin(async move {
            let inner = self.0.upgrade().ok_or("the session runtime has shut down")?;
            let purpose = request.purpose.clone();
            complete(&inner, request).await.map_err(|err| format!("{purpose} request on the small model: {err}"))
        })
    }
}

async fn complete(inner: &Arc<Inner>, request: SideRequest) -> Result<SideAnswer, RuntimeError> {
    let store = Arc::clone(&inner.store);
    let id = request.session_id.clone();
    let session = blocking(move || {
        store.read(|r| r.session(&id)?.ok_or_else(|| StoreError::NotFound { kind: "session", id: id.clone() }))
    })
    .await?;
    let settings = inner.settings(&session.directory)?;
    let main = ModelChoice { provider: request.model.provider_id, model: request.model.model_id, variant: None };
    let small = crate::defaults::small_model(&settings.catalog, &settings.config, &main);
    let auth = inner.credentials(&small.provider).await?;
    let resolved = settings.catalog.resolve(&small.provider, &small.model, None, auth.as_ref(), &inner.env)?;
    let mut llm =
        LlmRequest::new(resolved.api_id.clone()).system(request.system).message(Message::user(request.prompt));
    llm.options = resolved.options.request.clone();
    llm.http.headers = resolved.options.headers.clone();
    llm.generation.max_tokens = Some(request.max_output_tokens);
    let mut stream = inner.llm.stream(&resolved.route, &llm).await.map_err(RuntimeError::Provider)?;
    let (mut text, mut usage) = (String::new(), Usage::default());
    while let Some(event) = stream.next().await {
        match event {
            LlmEvent::TextDelta { text: delta, .. } => text.push_str(&delta),
            LlmEvent::Finish { usage: Some(reported), .. } => usage = reported,
            LlmEvent::Error { error } => return Err(RuntimeError::Provider(error)),
            _ => {}
        }
    }
    let prices = settings.catalog.model(&small.provider, &small.model)?.info.cost.clone();
    // A subscription pays for its tokens, as on the session's own turns.
    let cost = match (prices, resolved.signed_in()) {
        (Some(prices), false) => opencode_catalog::cost::cost(&prices, &usage),
        _ => 0.0,
    };
    let (store, id, counted) = (Arc::clone(&inner.store), session.id, tokens(&usage));
    blocking(move || store.write(|tx| tx.add_side_usage(&id, cost, &counted))).await?;
    Ok(SideAnswer { text, model: format!("{}/{}", small.provider, small.model), usage, cost })
}
