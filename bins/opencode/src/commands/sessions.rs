//! `opencode session list|show|delete`, `opencode export [id]` and `opencode import <file>`.
//!
//! The export format is OpenCode's: `{"info": Session, "messages": [{"info": Message, "parts": [Part]}]}`
//! with its JSON field names. Import writes the session, its messages and parts in one transaction
//! (all or nothing) and refuses to overwrite a session that exists.

use std::io::{BufWriter, Read, Write};
use std::path::Path;

use opencode_session_store::GLOBAL_PROJECT;
use opencode_session_store::{
    MessageInfo, MessageWithParts, NewSession, Part, PartKind, Session, SessionQuery, Store, StoreError, ToolState, Tx,
};
use serde::{Deserialize, Serialize};

use super::emit;
use super::run::latest_session;
use crate::cli::{ListFormat, SessionCommand};
use crate::context::Context;
use crate::error::CliError;

/// A whole session as `opencode export` writes it.
#[derive(Debug, Serialize)]
struct Exported {
    info: Session,
    messages: Vec<MessageWithParts>,
}

/// The same, as `opencode import` reads it.
#[derive(Debug, Deserialize)]
struct Imported {
    info: Session,
    messages: Vec<ImportedMessage>,
}

#[derive(Debug, Deserialize)]
struct ImportedMessage {
    info: MessageInfo,
    parts: Vec<Part>,
}

pub fn run(context: &Context, command: SessionCommand) -> Result<(), CliError> {
    let store = context.store()?;
    match command {
        SessionCommand::List { all, max_count, format } => list(context, &store, all, max_count, format),
        SessionCommand::Show { session } => show(&store, &session),
        SessionCommand::Delete { session } => {
            let removed = store.write(|tx| tx.remove_session(&session)).map_err(|err| not_found(err, &session))?;
            eprintln!("deleted session {session}{}", plural_children(removed.len().saturating_sub(1)));
            Ok(())
        }
    }
}

pub fn export(context: &Context, session: Option<&str>) -> Result<(), CliError> {
    let store = context.store()?;
    let session = match session {
        Some(id) => find(&store, id)?,
        None => latest_session(&store, &context.cwd)?.ok_or_else(|| {
            CliError::usage(
                format!("no session in {}", context.cwd.display()),
                "pass a session id; `opencode session list --all` lists them",
            )
        })?,
    };
    let text = exported(&store, session)?;
    emit(&mut std::io::stdout().lock(), format_args!("{text}\n"))
}

/// `session` and its whole history in the export format.
pub fn exported(store: &Store, session: Session) -> Result<String, CliError> {
    let messages = store.read(|r| r.full_history(&session.id))?;
    let exported = Exported { info: session, messages };
    serde_json::to_string_pretty(&exported).map_err(|err| CliError::Io(format!("cannot encode the session: {err}")))
}

pub fn import(context: &Context, file: &Path) -> Result<(), CliError> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|err| CliError::Io(format!("cannot read standard input: {err}")))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|err| CliError::Io(format!("cannot read {}: {err}", file.display())))?
    };
    let exported: Imported = serde_json::from_str(&text).map_err(|err| {
        CliError::usage(
            format!("{} is not an exported session: {err}", file.display()),
            "import a file written by `opencode export`",
        )
    })?;
    let store = context.store()?;
    let id = exported.info.id.clone();
    if store.read(|r| r.session(&id))?.is_some() {
        return Err(CliError::usage(
            format!("session {id} already exists"),
            "delete it first with `opencode session delete <id>` to replace it",
        ));
    }
    let count = exported.messages.len();
    store.write(|tx| write_session(tx, exported))?;
    eprintln!("imported session {id} ({count} messages)");
    Ok(())
}

fn write_session(tx: &mut Tx<'_>, exported: Imported) -> Result<(), StoreError> {
    let Imported { info, messages } = exported;
    let project = if tx.reader().project(&info.project_id)?.is_some() {
        info.project_id.clone()
    } else {
        tx.ensure_global_project()?;
        GLOBAL_PROJECT.to_owned()
    };
    let parent = match &info.parent_id {
        Some(parent) if tx.reader().session(parent)?.is_some() => Some(parent.clone()),
        _ => None,
    };
    let session = tx.create_session(NewSession {
        id: Some(info.id.clone()),
        project_id: project,
        directory: info.directory.clone(),
        parent_id: parent,
        title: Some(info.title.clone()),
        slug: Some(info.slug.clone()),
        version: Some(info.version.clone()),
        agent: info.agent.clone(),
        model: info.model.clone(),
        permission: info.permission,
    })?;
    for message in messages {
        if message.info.session_id() != session.id {
            return Err(StoreError::Invalid(format!(
                "message {} belongs to session {}, not {}",
                message.info.id(),
                message.info.session_id(),
                session.id
            )));
        }
        tx.append_message(&message.info)?;
        for part in &message.parts {
            tx.upsert_part(part)?;
        }
    }
    Ok(())
}

fn list(context: &Context, store: &Store, all: bool, max: usize, format: ListFormat) -> Result<(), CliError> {
    let query = SessionQuery {
        directory: (!all).then(|| context.cwd.display().to_string()),
        roots_only: true,
        limit: max.max(1),
        ..SessionQuery::default()
    };
    let sessions = store.read(|r| r.list_sessions(&query))?.sessions;
    let mut out = BufWriter::new(std::io::stdout().lock());
    if format == ListFormat::Json {
        let text = serde_json::to_string_pretty(&sessions)
            .map_err(|err| CliError::Io(format!("cannot encode sessions: {err}")))?;
        emit(&mut out, format_args!("{text}\n"))?;
    } else if sessions.is_empty() {
        eprintln!("no sessions{}", if all { "" } else { " in this directory (--all lists every directory)" });
    } else {
        emit(&mut out, format_args!("{:<32} {:<17} {}\n", "ID", "UPDATED", "TITLE"))?;
        for session in &sessions {
            emit(&mut out, format_args!("{:<32} {:<17} {}\n", session.id, time(session.time.updated), session.title))?;
        }
    }
    out.flush().or_else(ignore_broken_pipe)
}

fn show(store: &Store, id: &str) -> Result<(), CliError> {
    let session = find(store, id)?;
    let messages = store.read(|r| r.full_history(&session.id))?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    emit(&mut out, format_args!("{}  {}\n", session.id, session.title))?;
    let model = session.model.as_ref().map_or_else(|| "-".to_owned(), |m| format!("{}/{}", m.provider_id, m.id));
    emit(
        &mut out,
        format_args!("directory {}  model {model}  updated {}\n", session.directory, time(session.time.updated)),
    )?;
    let tokens = &session.tokens;
    emit(&mut out, format_args!("tokens {} in, {} out  cost ${:.4}\n", tokens.input, tokens.output, session.cost))?;
    for message in &messages {
        emit(&mut out, format_args!("\n{}\n", heading(&message.info)))?;
        for part in &message.parts {
            if let Some(line) = part_line(&part.kind) {
                emit(&mut out, format_args!("{line}\n"))?;
            }
        }
    }
    out.flush().or_else(ignore_broken_pipe)
}

fn heading(info: &MessageInfo) -> String {
    match info {
        MessageInfo::User(_) => "── user".to_owned(),
        MessageInfo::Assistant(a) => {
            let error = a.error.as_ref().map_or_else(String::new, |e| {
                format!(" (failed: {})", e.data["message"].as_str().unwrap_or(e.name.as_str()))
            });
            format!("── assistant {}/{}{error}", a.provider_id, a.model_id)
        }
        MessageInfo::System(s) => format!("── system update\n{}", s.text),
    }
}

fn part_line(kind: &PartKind) -> Option<String> {
    match kind {
        PartKind::Text { synthetic: Some(true), .. } => None,
        PartKind::Text { text, .. } => Some(text.clone()),
        PartKind::File(file) => Some(format!("[file {}]", file.filename.as_deref().unwrap_or(&file.mime))),
        PartKind::Tool { tool, state, .. } => Some(match state {
            ToolState::Completed { title, .. } => format!("| {tool:<8} {title}"),
            ToolState::Error { error, .. } => format!("! {tool:<8} {}", error.lines().next().unwrap_or_default()),
            other => format!("| {tool:<8} ({})", other.status()),
        }),
        PartKind::Compaction { .. } => Some("[compacted]".to_owned()),
        _ => None,
    }
}

fn find(store: &Store, id: &str) -> Result<Session, CliError> {
    store.read(|r| r.session(id))?.ok_or_else(|| {
        CliError::usage(format!("no session `{id}`"), "run `opencode session list --all` to see sessions")
    })
}

fn not_found(err: StoreError, id: &str) -> CliError {
    match err {
        StoreError::NotFound { .. } => {
            CliError::usage(format!("no session `{id}`"), "run `opencode session list --all` to see sessions")
        }
        other => other.into(),
    }
}

fn plural_children(count: usize) -> String {
    match count {
        0 => String::new(),
        1 => " and its child session".to_owned(),
        n => format!(" and {n} child sessions"),
    }
}

/// Unix milliseconds as local `YYYY-MM-DD HH:MM`.
fn time(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|ts| ts.to_zoned(jiff::tz::TimeZone::system()).strftime("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

fn ignore_broken_pipe(err: std::io::Error) -> Result<(), CliError> {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(CliError::Io(format!("cannot write output: {err}")))
    }
}
