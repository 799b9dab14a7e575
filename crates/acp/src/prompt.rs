//! An ACP prompt as the runtime's: text stays text, embedded resources (an editor's `@file`, with
//! its unsaved contents) are inlined under their URI, resource links and images become file parts.
//! A leading `/name` runs a command: `/compact`, a configured command's template, or a plugin's
//! command.

use std::path::Path;

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use opencode_config::commands::{self, Expander, SystemShell};
use opencode_session_runtime::{ModelChoice, PromptFile};

use crate::error::AgentError;
use crate::session::COMPACT;

/// What a prompt asks for.
#[derive(Debug)]
pub(crate) enum Ask {
    /// A message to the model, with the agent and model a command chose.
    Message { text: String, files: Vec<PromptFile>, agent: Option<String>, model: Option<ModelChoice> },
    /// `/compact`.
    Compact,
    /// A plugin's command (`/ctx-status`), with what follows its name.
    Plugin { name: String, arguments: String },
}

/// Converts the blocks; fails on content the agent did not advertise (audio).
pub(crate) fn convert(blocks: &[ContentBlock]) -> Result<(String, Vec<PromptFile>), AgentError> {
    let mut text = String::new();
    let mut files = Vec::new();
    let mut push = |piece: &str| {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(piece);
    };
    for block in blocks {
        match block {
            ContentBlock::Text(content) => push(&content.text),
            ContentBlock::Image(image) => files.push(PromptFile {
                url: image
                    .uri
                    .clone()
                    .filter(|uri| uri.starts_with("http"))
                    .unwrap_or_else(|| format!("data:{};base64,{}", image.mime_type, image.data)),
                mime: image.mime_type.clone(),
                name: None,
            }),
            ContentBlock::ResourceLink(link) => files.push(PromptFile {
                url: link.uri.clone(),
                mime: link.mime_type.clone().unwrap_or_else(|| "text/plain".to_owned()),
                name: Some(link.name.clone()),
            }),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    push(&format!(
                        "<file path=\"{}\">\n{}\n</file>",
                        file_name(&contents.uri),
                        contents.text.trim_end()
                    ));
                }
                EmbeddedResourceResource::BlobResourceContents(blob) => {
                    let mime = blob.mime_type.clone().unwrap_or_else(|| "application/octet-stream".to_owned());
                    files.push(PromptFile {
                        url: format!("data:{mime};base64,{}", blob.blob),
                        mime,
                        name: Some(file_name(&blob.uri)),
                    });
                }
                _ => return Err(AgentError::invalid("the prompt holds an embedded resource of an unknown kind")),
            },
            ContentBlock::Audio(_) => {
                return Err(AgentError::invalid("audio prompts are not supported (the agent does not advertise them)"));
            }
            _ => return Err(AgentError::invalid("the prompt holds a content block of an unknown kind")),
        }
    }
    if text.trim().is_empty() && files.is_empty() {
        return Err(AgentError::invalid("the prompt is empty; send text, a resource or an image"));
    }
    Ok((text, files))
}

/// A `file://` URI's path, anything else as it is.
fn file_name(uri: &str) -> String {
    uri.strip_prefix("file://").unwrap_or(uri).to_owned()
}

/// What the prompt asks for, with commands expanded in `directory` (the session's); `plugin` names
/// the plugins' commands (a configured command of the same name wins).
pub(crate) fn ask(
    text: String,
    files: Vec<PromptFile>,
    config: &opencode_config::Config,
    directory: &Path,
    plugin: &[String],
) -> Result<Ask, AgentError> {
    let Some(rest) = text.strip_prefix('/') else { return Ok(Ask::Message { text, files, agent: None, model: None }) };
    let (name, arguments) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if name == COMPACT {
        return Ok(Ask::Compact);
    }
    let Some(command) = commands::commands(config).shift_remove(name) else {
        if plugin.iter().any(|command| command == name) {
            return Ok(Ask::Plugin { name: name.to_owned(), arguments: arguments.trim().to_owned() });
        }
        // Not a command: a message that happens to start with a slash (a path, say).
        return Ok(Ask::Message { text, files, agent: None, model: None });
    };
    let shell = SystemShell::new(config.shell.as_deref());
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let expander = Expander { directory, home: home.as_deref(), shell: &shell };
    let text = expander.expand(&command, arguments.trim()).prompt_text(commands::MAX_FILE_BYTES);
    let model = command.model.as_deref().map(ModelChoice::parse).transpose()?;
    let model = model.map(|model| ModelChoice { variant: command.variant.clone(), ..model });
    Ok(Ask::Message { text, files, agent: command.agent, model })
}
