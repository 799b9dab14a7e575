//! `opencode debug config`: the merged configuration as JSONC, each top-level key preceded by a
//! comment naming the source(s) that set it (the last one wins). Skipped files and warnings go to
//! stderr.

use opencode_config::KNOWN_KEYS;
use serde_json::Value;

use super::emit;
use crate::context::Context;
use crate::error::CliError;

pub fn config(context: &Context) -> Result<(), CliError> {
    let loaded = &context.loaded;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let mut value = serde_json::to_value(&loaded.config).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.extend(loaded.config.extra.clone());
    }
    let Value::Object(map) = value else { return Ok(()) };
    let mut out = std::io::stdout().lock();
    emit(&mut out, format_args!("{{\n"))?;
    let count = map.len();
    for (index, (key, value)) in map.into_iter().enumerate() {
        let sources: Vec<String> = loaded
            .sources
            .get(&key)
            .or_else(|| (key == "agent").then(|| loaded.sources.get("mode")).flatten())
            .map(|sources| sources.iter().map(|source| format!("{} {source}", source.kind())).collect())
            .unwrap_or_default();
        let note = if KNOWN_KEYS.contains(&key.as_str()) { "" } else { " (unknown key)" };
        emit(&mut out, format_args!("  // from: {}{note}\n", sources.join(", then ")))?;
        let rendered = serde_json::to_string_pretty(&value).unwrap_or_default().replace('\n', "\n  ");
        let comma = if index + 1 < count { "," } else { "" };
        emit(&mut out, format_args!("  {}: {rendered}{comma}\n", Value::String(key)))?;
    }
    emit(&mut out, format_args!("}}\n"))
}
