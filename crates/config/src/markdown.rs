//! Agent markdown files (`.opencode/agent/<name>.md`): YAML front matter holds the agent's
//! settings, the body is its prompt.
//!
//! The front matter is read with a small YAML subset that covers what agent files use: nested
//! mappings by indentation, `- item` lists, `[a, b]` inline lists, quoted and plain scalars, `|` and
//! `>` block strings and `#` comments. Anything else is reported with its line.

use serde_json::{Map, Number, Value};

use crate::AgentConfig;
use crate::jsonc::JsoncError;

/// The agent configuration (as JSON, ready to merge) of one markdown file.
pub fn agent_from_markdown(text: &str) -> Result<Value, JsoncError> {
    let (front, body) = split_front_matter(text);
    let mut map = match front {
        Some(front) => parse_yaml(front)?,
        None => Map::new(),
    };
    let prompt = body.trim();
    if !prompt.is_empty() {
        map.insert("prompt".into(), Value::String(prompt.to_owned()));
    }
    let value = Value::Object(map);
    serde_json::from_value::<AgentConfig>(value.clone()).map_err(|err| JsoncError {
        line: 1,
        column: 1,
        message: format!("invalid agent front matter: {err}"),
    })?;
    Ok(value)
}

/// `(front matter, body)`; no front matter when the file does not start with `---`.
fn split_front_matter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some(&rest[..offset]), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, text)
}

struct Line<'a> {
    number: usize,
    indent: usize,
    text: &'a str,
}

/// Parses the YAML subset into a mapping. Line numbers are of the file (front matter starts at 2).
fn parse_yaml(text: &str) -> Result<Map<String, Value>, JsoncError> {
    let lines: Vec<Line<'_>> = text
        .lines()
        .enumerate()
        .map(|(index, raw)| Line { number: index + 2, indent: raw.len() - raw.trim_start().len(), text: raw.trim() })
        .collect();
    let mut parser = Parser { lines, next: 0 };
    match parser.block(0)? {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(parser.error(2, "the front matter must be a mapping")),
    }
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    next: usize,
}

impl Parser<'_> {
    fn skip_blank(&mut self) {
        while self.lines.get(self.next).is_some_and(|line| line.text.is_empty() || line.text.starts_with('#')) {
            self.next += 1;
        }
    }

    /// A mapping or list whose lines are indented at least `min_indent`.
    fn block(&mut self, min_indent: usize) -> Result<Value, JsoncError> {
        self.skip_blank();
        let Some(first) = self.lines.get(self.next) else { return Ok(Value::Null) };
        if first.indent < min_indent {
            return Ok(Value::Null);
        }
        let indent = first.indent;
        if first.text.starts_with("- ") || first.text == "-" {
            return self.list(indent);
        }
        let mut map = Map::new();
        loop {
            self.skip_blank();
            let Some(line) = self.lines.get(self.next) else { break };
            if line.indent < indent {
                break;
            }
            if line.indent > indent {
                return Err(self.error(line.number, "unexpected indentation"));
            }
            let number = line.number;
            let Some((key, rest)) = split_key(line.text) else {
                return Err(self.error(number, "expected `key: value`"));
            };
            self.next += 1;
            let value = match rest {
                "" => self.block(indent + 1)?,
                "|" | "|-" | ">" | ">-" => self.block_string(indent, rest.starts_with('>')),
                scalar => parse_scalar(scalar).map_err(|message| self.error(number, &message))?,
            };
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    fn list(&mut self, indent: usize) -> Result<Value, JsoncError> {
        let mut items = Vec::new();
        loop {
            self.skip_blank();
            let Some(line) = self.lines.get(self.next) else { break };
            if line.indent != indent || !(line.text.starts_with("- ") || line.text == "-") {
                break;
            }
            let number = line.number;
            let item = line.text[1..].trim();
            self.next += 1;
            items.push(parse_scalar(item).map_err(|message| self.error(number, &message))?);
        }
        Ok(Value::Array(items))
    }

    fn block_string(&mut self, indent: usize, folded: bool) -> Value {
        let mut parts = Vec::new();
        while let Some(line) = self.lines.get(self.next) {
            if !line.text.is_empty() && line.indent <= indent {
                break;
            }
            parts.push(line.text);
            self.next += 1;
        }
        while parts.last().is_some_and(|part| part.is_empty()) {
            parts.pop();
        }
        Value::String(parts.join(if folded { " " } else { "\n" }))
    }

    fn error(&self, line: usize, message: &str) -> JsoncError {
        JsoncError { line, column: 1, message: message.to_owned() }
    }
}

/// Splits `key: rest` (the key may be quoted); `None` when there is no `:` separator.
fn split_key(text: &str) -> Option<(String, &str)> {
    if let Some(quote) = text.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = text[1..].find(quote)? + 1;
        let rest = text[end + 1..].trim_start().strip_prefix(':')?;
        return Some((text[1..end].to_owned(), rest.trim()));
    }
    let colon = text.find(": ").or_else(|| text.ends_with(':').then(|| text.len() - 1))?;
    Some((text[..colon].trim().to_owned(), text[colon + 1..].trim()))
}

fn parse_scalar(text: &str) -> Result<Value, String> {
    let text = strip_comment(text);
    if let Some(inner) = text.strip_prefix('"') {
        return serde_json::from_str(text).map_err(|_| format!("unterminated string {inner}"));
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'').ok_or_else(|| format!("unterminated string {text}"))?;
        return Ok(Value::String(inner.replace("''", "'")));
    }
    if let Some(inner) = text.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or_else(|| format!("unterminated list {text}"))?;
        let items: Result<Vec<Value>, String> =
            inner.split(',').map(str::trim).filter(|item| !item.is_empty()).map(parse_scalar).collect();
        return items.map(Value::Array);
    }
    Ok(match text {
        "true" | "True" => Value::Bool(true),
        "false" | "False" => Value::Bool(false),
        "null" | "~" | "" => Value::Null,
        _ => number(text).unwrap_or_else(|| Value::String(text.to_owned())),
    })
}

fn number(text: &str) -> Option<Value> {
    if let Ok(int) = text.parse::<i64>() {
        return Some(Value::Number(int.into()));
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite()).and_then(Number::from_f64).map(Value::Number)
}

/// Drops a trailing ` # comment` from a plain (unquoted) scalar.
fn strip_comment(text: &str) -> &str {
    if text.starts_with('"') || text.starts_with('\'') {
        return text;
    }
    text.find(" #").map_or(text, |index| text[..index].trim_end())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn front_matter_and_body_make_an_agent() {
        let text = "---\ndescription: Reviews code # short\nmode: subagent\ntemperature: 0.1\ntools:\n  write: false\n  \
                    edit: false\npermission:\n  bash:\n    \"git *\": allow\n    '*': ask\n---\nYou review code.\n";
        let agent = agent_from_markdown(text).unwrap();
        assert_eq!(
            agent,
            json!({
                "description": "Reviews code",
                "mode": "subagent",
                "temperature": 0.1,
                "tools": {"write": false, "edit": false},
                "permission": {"bash": {"git *": "allow", "*": "ask"}},
                "prompt": "You review code."
            })
        );
    }

    #[test]
    fn block_strings_and_lists() {
        let map =
            parse_yaml("description: |\n  line one\n  line two\nitems:\n  - a\n  - 2\ninline: [x, \"y\"]\n").unwrap();
        assert_eq!(
            Value::Object(map),
            json!({"description": "line one\nline two", "items": ["a", 2], "inline": ["x", "y"]})
        );
    }

    #[test]
    fn a_wrong_type_is_reported() {
        let err = agent_from_markdown("---\nmode: sometimes\n---\nhi").unwrap_err();
        assert!(err.message.starts_with("invalid agent front matter"), "{}", err.message);
    }

    #[test]
    fn a_line_without_a_key_is_reported_with_its_line() {
        let err = agent_from_markdown("---\ndescription: x\njust text\n---\n").unwrap_err();
        assert_eq!((err.line, err.message.as_str()), (3, "expected `key: value`"));
    }
}
