//! Titles for new sessions, off the critical path.
//!
//! As OpenCode: after the first user message of a root session whose title is still the default, one
//! request to the small model (see [`crate::defaults::small_model`]) with the title prompt and that
//! message. It runs in its own task and never delays the main turn; a failure is logged at debug
//! level and otherwise ignored; the title is written only if it is still the default then, so a
//! title the user set meanwhile is never overwritten.

use std::sync::Arc;

use futures_util::StreamExt;
use opencode_llm::LlmEvent;
use opencode_llm::LlmRequest;
use opencode_llm::Message;
use opencode_session_store::Session;
use opencode_session_store::StoreError;
use tracing::Instrument;

use crate::error::Result;
use crate::error::RuntimeError;
use crate::runtime::Inner;
use crate::runtime::ModelChoice;
use crate::store::blocking;

/// The system prompt of the title request (OpenCode's title agent, in substance).
pub const TITLE_PROMPT: &str = "You are a title generator. You output ONLY a thread title. Nothing else.

<task>
Generate a brief title that would help the user find this conversation later. Follow all rules in <rules>.
Your output must be a single line of at most 50 characters, in the same language as the user message.
</task>

<rules>
- The title must be grammatically correct and read naturally, not a list of keywords.
- Never mention tools (such as \"read tool\" or \"bash tool\") in the title.
- Focus on the main topic or question the user will want to find again.
- Vary the phrasing; do not always start with words like \"Analyzing\".
- When a file is mentioned, say what the user wants to do with it, not only that it was shared.
- Keep technical terms, numbers, file names and HTTP codes exactly.
- Leave out filler words such as: the, this, my, a, an.
- Never assume a tech stack.
- Never use tools.
- Never answer the user's question: only write a title for the conversation.
- Never use the words \"summarizing\" or \"generating\" in the title.
- Never say you cannot write a title or complain about the input: always output something meaningful.
- For a short or conversational message (\"hello\", \"what's up\"), name its tone or intent, such as
  Greeting, Quick check-in or Light chat.
</rules>";

/// The longest title kept (characters).
const MAX_TITLE_CHARS: usize = 100;

/// The default titles the store gives new sessions (`New session - <time>`, `Child session - <time>`).
pub(crate) fn is_default_title(title: &str) -> bool {
    title.starts_with("New session - ") || title.starts_with("Child session - ")
}

/// Starts titling `session` from its first user message `text`, in the background.
pub(crate) fn spawn(inner: Arc<Inner>, session: Session, model: ModelChoice, text: String) {
    let span = tracing::debug_span!("session.title", session.id = %session.id);
    tokio::spawn(
        async move {
            if let Err(err) = title(&inner, &session, &model, &text).await {
                tracing::debug!(session.id = %session.id, error = %err, "no title for the session (ignored)");
            }
        }
        .instrument(span),
    );
}

async fn title(inner: &Arc<Inner>, session: &Session, main: &ModelChoice, text: &str) -> Result<()> {
    // The session directory's own configuration names its providers and small model.
    let settings = inner.settings(&session.directory)?;
    let small = crate::defaults::small_model(&settings.catalog, &settings.config, main);
    let auth = inner.credentials(&small.provider).await?;
    let resolved = settings.catalog.resolve(&small.provider, &small.model, None, auth.as_ref(), &inner.env)?;
    let mut request = LlmRequest::new(resolved.api_id.clone())
        .system(TITLE_PROMPT)
        .message(Message::user("Generate a title for this conversation:\n"))
        .message(Message::user(text.to_owned()));
    request.options = resolved.options.request.clone();
    request.http.headers = resolved.options.headers.clone();
    request.generation.temperature = Some(0.5);
    let mut stream = inner.llm.stream(&resolved.route, &request).await.map_err(RuntimeError::Provider)?;
    let mut answer = String::new();
    while let Some(event) = stream.next().await {
        match event {
            LlmEvent::TextDelta { text, .. } => answer.push_str(&text),
            LlmEvent::Error { error } => return Err(RuntimeError::Provider(error)),
            _ => {}
        }
    }
    let Some(title) = clean(&answer) else {
        return Err(RuntimeError::internal("the small model returned an empty title"));
    };
    let store = Arc::clone(&inner.store);
    let id = session.id.clone();
    let written = blocking(move || {
        store.write(|tx| {
            let current =
                tx.reader().session(&id)?.ok_or_else(|| StoreError::NotFound { kind: "session", id: id.clone() })?;
            if !is_default_title(&current.title) {
                return Ok(false);
            }
            tx.update_session(&id, |s| s.title = title)?;
            Ok(true)
        })
    })
    .await?;
    if written {
        tracing::debug!(session.id = %session.id, "session titled");
    }
    Ok(())
}

/// The first meaningful line of the answer, without reasoning blocks or quotes, at most
/// [`MAX_TITLE_CHARS`] characters.
fn clean(answer: &str) -> Option<String> {
    let mut text = answer.to_owned();
    while let (Some(start), Some(end)) = (text.find("<think>"), text.find("</think>")) {
        if end < start {
            break;
        }
        text.replace_range(start..end + "</think>".len(), "");
    }
    let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
    let line = line.trim_matches(|c| c == '"' || c == '\'' || c == '`' || c == '*' || c == '#').trim();
    if line.is_empty() {
        return None;
    }
    Some(line.chars().take(MAX_TITLE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_the_first_line_without_reasoning_or_quotes() {
        assert_eq!(clean("<think>hmm</think>\n\n\"Fix login bug\"\nmore").as_deref(), Some("Fix login bug"));
        assert_eq!(clean("  \n "), None);
        assert_eq!(clean(&"x".repeat(300)).map(|t| t.len()), Some(MAX_TITLE_CHARS));
        assert!(is_default_title("New session - 2026-01-01T00:00:00.000Z"));
        assert!(!is_default_title("My title"));
    }
}
