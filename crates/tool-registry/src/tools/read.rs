//! `read`: a file with line numbers (offset/limit), an image as media, or a directory's entries.

use std::io::BufRead;
use std::io::BufReader;
use std::io::Read as _;

use base64::Engine;
use futures_util::future::BoxFuture;
use opencode_llm::MediaData;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tool::Media;
use crate::tool::ToolContext;
use crate::tool::ToolOutput;
use crate::tool::TypedTool;

/// Lines returned when no limit is given.
pub const DEFAULT_READ_LIMIT: usize = 2000;
/// Longer lines are cut.
pub const MAX_LINE_LENGTH: usize = 2000;
/// The read tool stops after this many bytes of file content.
pub const MAX_BYTES: usize = 50 * 1024;
/// Images larger than this are refused.
const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

/// The `read` tool.
#[derive(Debug, Default)]
pub struct Read;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadInput {
    /// The path of the file to read.
    pub file_path: String,
    /// The line number to start from (1-indexed).
    #[serde(default)]
    pub offset: Option<usize>,
    /// The number of lines to read (default 2000).
    #[serde(default)]
    pub limit: Option<usize>,
}

impl TypedTool for Read {
    type Input = ReadInput;
    const NAME: &'static str = "read";

    fn description(&self) -> String {
        "Reads a file from the project. Returns numbered lines (`N: text`); use offset and limit for \
         long files. Images (png, jpeg, gif, webp) are returned as attachments; directories list their \
         entries. Managed tool output files may be read by their absolute path."
            .into()
    }

    fn run<'a>(&'a self, input: ReadInput, ctx: &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let resolved = ctx.location.authorize(ctx, &input.file_path, false).await?;
            let shown = ctx.location.display(&resolved.path);
            ctx.ask(crate::pending::PermissionAsk {
                permission: "read".into(),
                patterns: vec![shown.clone()],
                always: vec!["*".into()],
                metadata: serde_json::Map::new(),
            })
            .await?;
            if resolved.path.is_dir() {
                return list_directory(&resolved.path, &shown);
            }
            if !resolved.path.exists() {
                return Err(not_found(&resolved.path, &shown));
            }
            if let Some(media_type) = image_type(&resolved.path) {
                let mut file = ctx.location.open_read(&resolved)?;
                if file.metadata().map(|meta| meta.len()).unwrap_or(0) > MAX_IMAGE_BYTES {
                    return Err(ToolError::model(format!("{shown} is larger than 10 MiB; it cannot be attached")));
                }
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)
                    .map_err(|err| crate::error::io_model_error("read", &resolved.path, &err))?;
                let data = MediaData::Base64(base64::engine::general_purpose::STANDARD.encode(&bytes));
                let mut output = ToolOutput::text("Image read successfully").with_title(shown.clone());
                output.media.push(Media { media_type: media_type.into(), data, filename: Some(shown) });
                return Ok(output);
            }
            let (offset, limit) = (input.offset.unwrap_or(1), input.limit.unwrap_or(DEFAULT_READ_LIMIT));
            // An editor's buffer, unsaved changes included, when the front end keeps the file open.
            if let Some(text) = super::editor_text(ctx, &resolved).await? {
                return read_lines(std::io::Cursor::new(text.into_bytes()), &shown, offset, limit);
            }
            read_lines(ctx.location.open_read(&resolved)?, &shown, offset, limit)
        })
    }
}

fn read_lines(file: impl std::io::Read, shown: &str, offset: usize, limit: usize) -> Result<ToolOutput, ToolError> {
    let offset = offset.max(1);
    let mut reader = BufReader::new(file);
    let head = reader.fill_buf().map_err(|err| ToolError::model(format!("Cannot read {shown}: {err}")))?;
    if is_binary(head) {
        return Err(ToolError::model(format!("Cannot read binary file: {shown}")));
    }
    let mut out = format!("<path>{shown}</path>\n<type>file</type>\n<content>\n");
    let (mut total, mut shown_lines, mut bytes, mut cut) = (0usize, 0usize, 0usize, false);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(|err| ToolError::model(format!("Cannot read {shown}: {err}")))?;
        if read == 0 {
            break;
        }
        total += 1;
        if total < offset || cut {
            continue;
        }
        if shown_lines >= limit {
            cut = true;
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let text = match text.char_indices().nth(MAX_LINE_LENGTH) {
            Some((index, _)) => format!("{}... (line truncated to {MAX_LINE_LENGTH} chars)", &text[..index]),
            None => text.to_owned(),
        };
        let entry = format!("{total}: {text}\n");
        if bytes + entry.len() > MAX_BYTES {
            cut = true;
            continue;
        }
        bytes += entry.len();
        out.push_str(&entry);
        shown_lines += 1;
    }
    if total > 0 && offset > total {
        return Err(ToolError::model(format!("Offset {offset} is out of range for this file ({total} lines)")));
    }
    let last = offset + shown_lines.saturating_sub(1);
    if cut {
        out.push_str(&format!("\n(Showing lines {offset}-{last} of {total}. Use offset={} to continue.)\n", last + 1));
    } else {
        out.push_str(&format!("\n(End of file - total {total} lines)\n"));
    }
    out.push_str("</content>");
    Ok(ToolOutput::text(out).with_title(shown.to_owned()).with_metadata("truncated", cut))
}

fn list_directory(path: &std::path::Path, shown: &str) -> Result<ToolOutput, ToolError> {
    let entries = std::fs::read_dir(path).map_err(|err| crate::error::io_model_error("list", path, &err))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) { format!("{name}/") } else { name }
        })
        .collect();
    names.sort();
    let body = names.join("\n");
    Ok(ToolOutput::text(format!(
        "<path>{shown}</path>\n<type>directory</type>\n<entries>\n{body}\n\n({} entries)\n</entries>",
        names.len()
    ))
    .with_title(shown.to_owned()))
}

fn not_found(path: &std::path::Path, shown: &str) -> ToolError {
    let mut message = format!("File not found: {shown}");
    let wanted = path.file_name().map(|name| name.to_string_lossy().to_lowercase()).unwrap_or_default();
    if let Some(dir) = path.parent()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        let similar: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| {
                let lower = name.to_lowercase();
                !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower))
            })
            .take(3)
            .collect();
        if !similar.is_empty() {
            message.push_str("\n\nDid you mean one of these?\n");
            message.push_str(&similar.join("\n"));
        }
    }
    ToolError::model(message)
}

fn image_type(path: &std::path::Path) -> Option<&'static str> {
    match path.extension()?.to_string_lossy().to_lowercase().as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// A NUL byte, or more than 30% control bytes, in the first block means binary.
pub(crate) fn is_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    let sample = &head[..head.len().min(4096)];
    let control = sample.iter().filter(|&&b| b < 9 || (b > 13 && b < 32)).count();
    !sample.is_empty() && control * 10 > sample.len() * 3
}
