//! `POST /session/{id}/shell`: runs a command the user typed (OpenCode's `!command`) in the session's
//! directory and records it as OpenCode does: a user message with a synthetic note, then an assistant
//! message holding one completed `bash` tool part with the command's output. No provider turn runs;
//! the next prompt sees the call in history. A busy session is a 409.

use std::path::Path;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use opencode_session_store::AssistantMessage;
use opencode_session_store::CreatedTime;
use opencode_session_store::MessageInfo;
use opencode_session_store::MessageWithParts;
use opencode_session_store::ModelRef;
use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Session;
use opencode_session_store::ToolEndTime;
use opencode_session_store::ToolState;
use opencode_session_store::UserMessage;
use opencode_session_store::id;
use opencode_session_store::id::IdKind;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::Op;
use super::session::check_id;
use super::session::hold;
use super::session::session;
use crate::driver::PromptModel;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::JsonBody;
use crate::extract::P;
use crate::state::AppState;
use crate::state::blocking;

/// A shell command is stopped after this long (OpenCode's bash default).
const TIMEOUT: Duration = Duration::from_secs(120);
/// Recorded output is cut to this many bytes (head kept, a note says how much was left out).
const MAX_OUTPUT: usize = 50 * 1024;
/// The user message's synthetic text, as OpenCode writes it.
const NOTE: &str = "The following tool was executed by the user";

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::post(
            "/session/{sessionID}/shell",
            "session.shell",
            "Run a shell command in the session's directory and record it as a bash call",
            shell_route,
        )
        .body::<ShellBody>()
        .returns_named("MessageWithParts"),
    ]
}

/// `POST /session/{id}/shell` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ShellBody {
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    agent: String,
    #[serde(default)]
    model: Option<PromptModel>,
    command: String,
}

async fn shell_route(
    State(s): State<AppState>,
    Dir(i): Dir,
    P(id): P<String>,
    JsonBody(body): JsonBody<ShellBody>,
) -> Result<Json<MessageWithParts>, ApiError> {
    if let Some(message) = &body.message_id {
        check_id(message, "msg", "message")?;
    }
    if body.command.trim().is_empty() {
        return Err(ApiError::bad("command must not be empty"));
    }
    let session = session(&s, &id).await?;
    let _held = hold(&s, &id)?;
    let config = {
        let i = std::sync::Arc::clone(&i);
        blocking(move || Ok(i.config())).await?
    };
    let model = model_of(body.model.as_ref(), &session, config.config.model.as_deref())?;
    let shell = config.config.shell.clone().or_else(|| s.inner.env.get("SHELL").map(str::to_owned));
    let started = id::now_ms();
    let output = run(shell.as_deref(), &body.command, Path::new(&session.directory)).await;
    let ended = id::now_ms();
    let records = records(&session, &body, model, &i.worktree.to_string_lossy(), output, (started, ended));
    let reply = records.assistant.clone();
    s.write(move |tx| {
        tx.append_message(&records.user.info)?;
        tx.append_message(&records.assistant.info)?;
        for part in records.user.parts.iter().chain(&records.assistant.parts) {
            tx.upsert_part(part)?;
        }
        Ok(())
    })
    .await?;
    Ok(Json(reply))
}

/// The request's model, else the session's, else the configured default.
fn model_of(asked: Option<&PromptModel>, session: &Session, configured: Option<&str>) -> Result<ModelRef, ApiError> {
    if let Some(model) = asked {
        return Ok(ModelRef {
            provider_id: model.provider_id.clone(),
            model_id: model.model_id.clone(),
            variant: None,
        });
    }
    if let Some(model) = &session.model {
        return Ok(ModelRef {
            provider_id: model.provider_id.clone(),
            model_id: model.id.clone(),
            variant: model.variant.clone(),
        });
    }
    configured
        .and_then(|model| model.split_once('/'))
        .map(|(provider, model)| ModelRef {
            provider_id: provider.to_owned(),
            model_id: model.to_owned(),
            variant: None,
        })
        .ok_or_else(|| ApiError::bad("no model: pass model, or configure one (`model` in opencode.json)"))
}

/// Runs `command` with `shell -c` (`sh` by default) in `directory`; stdout and stderr together, or the
/// reason it could not run.
async fn run(shell: Option<&str>, command: &str, directory: &Path) -> String {
    let mut child = tokio::process::Command::new(shell.unwrap_or("sh"));
    child
        .arg("-c")
        .arg(command)
        .current_dir(directory)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .process_group(0);
    let output = match tokio::time::timeout(TIMEOUT, child.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(err)) => return format!("cannot run the command: {err}"),
        Err(_) => return format!("the command was stopped after {} s", TIMEOUT.as_secs()),
    };
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if text.len() > MAX_OUTPUT {
        let mut cut = MAX_OUTPUT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let left_out = text.len() - cut;
        text.truncate(cut);
        text.push_str(&format!("\n\n... {left_out} more bytes of output were left out"));
    }
    text
}

struct Records {
    user: MessageWithParts,
    assistant: MessageWithParts,
}

/// The user message (with its synthetic note) and the assistant message with the completed call.
fn records(
    session: &Session,
    body: &ShellBody,
    model: ModelRef,
    root: &str,
    output: String,
    (started, ended): (i64, i64),
) -> Records {
    let user_id = body.message_id.clone().unwrap_or_else(|| id::ascending(IdKind::Message));
    let part = |message: &str, kind: PartKind| Part {
        id: id::ascending(IdKind::Part),
        session_id: session.id.clone(),
        message_id: message.to_owned(),
        kind,
    };
    let user = UserMessage {
        id: user_id.clone(),
        session_id: session.id.clone(),
        time: CreatedTime { created: started },
        format: None,
        summary: None,
        agent: body.agent.clone(),
        model: model.clone(),
        system: None,
        tools: None,
    };
    let note =
        PartKind::Text { text: NOTE.to_owned(), synthetic: Some(true), ignored: None, time: None, metadata: None };
    let mut assistant = AssistantMessage::new(&session.id, &user_id, &body.agent, &model, &session.directory, started);
    assistant.time.completed = Some(ended);
    assistant.path.root = root.to_owned();
    let assistant_id = assistant.id.clone();
    let call = PartKind::Tool {
        call_id: id::ascending(IdKind::Part).replacen("prt", "call", 1),
        tool: "bash".to_owned(),
        state: ToolState::Completed {
            input: json!({ "command": body.command }),
            title: body.command.clone(),
            metadata: json!({ "output": output, "description": "" }),
            output,
            time: ToolEndTime { start: started, end: ended, compacted: None },
            attachments: None,
        },
        metadata: None,
    };
    Records {
        user: MessageWithParts { parts: vec![part(&user_id, note)], info: MessageInfo::User(user), seq: 0 },
        assistant: MessageWithParts {
            parts: vec![part(&assistant_id, call)],
            info: MessageInfo::Assistant(assistant),
            seq: 0,
        },
    }
}
