//! Minimal edits of JSONC text: a value is replaced where it stands and a new key is inserted into
//! its object after the last member, in that object's layout; every other byte (comments, trailing
//! commas, key order, indentation, strings with braces in them) stays as it was.

use serde_json::{Map, Value};

use super::JsoncError;

/// Sets the value at the key `path` (non-empty) of the document's top-level object: replaces an
/// existing value in place, or inserts the missing keys (as nested objects) into the deepest object
/// that exists. A value on the way that is not an object is replaced by one.
pub fn set(text: &str, path: &[&str], value: &Value) -> Result<String, JsoncError> {
    let Some((first, rest)) = path.split_first() else {
        return Err(JsoncError { line: 1, column: 1, message: "an empty key path names no value".into() });
    };
    if text.trim().is_empty() {
        return Ok(format!("{}\n", render(&nest(path, value), "")));
    }
    let root = Parser::new(text).document()?;
    let Node::Object(mut object) = root else {
        return Err(JsoncError { line: 1, column: 1, message: "expected a JSON object".into() });
    };
    let mut key = *first;
    let mut rest = rest;
    loop {
        match object.members.iter().rev().find(|member| member.key == key) {
            Some(member) => match (&member.value, rest.split_first()) {
                (Node::Object(inner), Some((next, more))) => {
                    let inner = inner.clone();
                    object = inner;
                    key = next;
                    rest = more;
                }
                (node, _) => {
                    let (start, end) = node.span();
                    let indent = line_indent(text, member.key_start);
                    let new = render(&nest(rest, value), indent.unwrap_or(""));
                    return Ok(format!("{}{}{}", &text[..start], new, &text[end..]));
                }
            },
            None => {
                let mut full = vec![key];
                full.extend_from_slice(rest);
                return Ok(insert(text, &object, key, &nest(&full[1..], value)));
            }
        }
    }
}

/// Merges `patch` into the document's top-level object as [`crate::merge_values`] does (objects key
/// by key, `plugin`/`instructions` arrays concatenated without duplicates, other values replaced),
/// touching only the values that change.
pub fn merge_patch(text: &str, patch: &Map<String, Value>) -> Result<String, JsoncError> {
    let current = if text.trim().is_empty() { Value::Object(Map::new()) } else { super::from_str::<Value>(text)? };
    let Value::Object(current) = current else {
        return Err(JsoncError { line: 1, column: 1, message: "expected a JSON object".into() });
    };
    let mut edits = Vec::new();
    plan(&current, patch, &mut Vec::new(), &mut edits);
    let mut text = text.to_owned();
    for (path, value) in edits {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        text = set(&text, &path, &value)?;
    }
    Ok(text)
}

/// The `(path, value)` edits that merge `patch` into `current`.
fn plan(
    current: &Map<String, Value>,
    patch: &Map<String, Value>,
    path: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Value)>,
) {
    for (key, value) in patch {
        path.push(key.clone());
        match (current.get(key), value) {
            (Some(Value::Array(existing)), Value::Array(more))
                if path.len() == 1 && (key == "plugin" || key == "instructions") =>
            {
                let mut merged = existing.clone();
                for item in more {
                    if !merged.contains(item) {
                        merged.push(item.clone());
                    }
                }
                if merged != *existing {
                    out.push((path.clone(), Value::Array(merged)));
                }
            }
            (Some(Value::Object(existing)), Value::Object(over)) => plan(existing, over, path, out),
            (Some(existing), value) if existing == value => {}
            (_, value) => out.push((path.clone(), value.clone())),
        }
        path.pop();
    }
}

/// `value` wrapped in objects for the keys of `path` (`["a", "b"], 1` is `{"a": {"b": 1}}`).
fn nest(path: &[&str], value: &Value) -> Value {
    path.iter().rev().fold(value.clone(), |inner, key| {
        let mut map = Map::new();
        map.insert((*key).to_owned(), inner);
        Value::Object(map)
    })
}

/// Inserts `"key": value` as the last member of `object`.
fn insert(text: &str, object: &ObjectNode, key: &str, value: &Value) -> String {
    let key_text = Value::String(key.to_owned()).to_string();
    let Some(last) = object.members.last() else {
        return insert_first(text, object, &key_text, value);
    };
    let Some(indent) = line_indent(text, last.key_start) else {
        // One-line object: `{"a": 1}` becomes `{"a": 1, "key": value}`.
        let end = last.value.span().1;
        let member = format!(", {key_text}: {}", compact(value));
        return format!("{}{}{}", &text[..end], member, &text[end..]);
    };
    let member = format!("{key_text}: {}", render(value, indent));
    let end = last.value.span().1;
    let after = skip_blank(text, end);
    if text.as_bytes().get(after) == Some(&b',') {
        // A trailing comma: the new member comes after it and keeps the style.
        let at = line_end(text, after + 1);
        format!("{}\n{indent}{member},{}", &text[..at], &text[at..])
    } else {
        let at = line_end(text, end);
        if at == end {
            format!("{},\n{indent}{member}{}", &text[..end], &text[end..])
        } else {
            // Keep a comment that ends the last member's line with that member.
            format!("{},{}\n{indent}{member}{}", &text[..end], &text[end..at], &text[at..])
        }
    }
}

/// Inserts the first member of an empty object, one level deeper than the line of its `{`.
fn insert_first(text: &str, object: &ObjectNode, key_text: &str, value: &Value) -> String {
    let outer = line_indent_at(text, object.start);
    let indent = format!("{outer}{}", indent_unit(text));
    let inside = &text[object.start + 1..object.end - 1];
    let member = format!("{key_text}: {}", render(value, &indent));
    if inside.trim().is_empty() {
        format!("{}\n{indent}{member}\n{outer}{}", &text[..=object.start], &text[object.end - 1..])
    } else {
        // Only comments inside: the member goes first, the comments stay after it.
        format!("{}\n{indent}{member}{}", &text[..=object.start], &text[object.start + 1..])
    }
}

/// Pretty JSON whose continuation lines are indented by `indent`.
fn render(value: &Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| compact(value));
    pretty.replace('\n', &format!("\n{indent}"))
}

fn compact(value: &Value) -> String {
    let text = value.to_string();
    if value.is_object() || value.is_array() {
        // `{"a":1}` reads better as `{"a": 1}`; only structural `:`/`,` are spaced.
        let mut out = String::with_capacity(text.len() + 8);
        let mut in_string = false;
        let mut escaped = false;
        for c in text.chars() {
            out.push(c);
            if in_string {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_string = false,
                    _ => {}
                }
            } else if c == '"' {
                in_string = true;
            } else if c == ':' || c == ',' {
                out.push(' ');
            }
        }
        return out;
    }
    text
}

/// The whitespace before `at` on its line when only whitespace precedes it there.
fn line_indent(text: &str, at: usize) -> Option<&str> {
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let before = &text[start..at];
    (before.chars().all(|c| c == ' ' || c == '\t') && start > 0).then_some(before)
}

/// The leading whitespace of the line holding `at`.
fn line_indent_at(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// The file's indentation step: the first indented line's leading whitespace, else two spaces.
fn indent_unit(text: &str) -> &str {
    text.lines()
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .find(|indent| !indent.is_empty())
        .unwrap_or("  ")
}

/// Past spaces, tabs, newlines and comments from `at`.
fn skip_blank(text: &str, at: usize) -> usize {
    let mut parser = Parser { bytes: text.as_bytes(), at };
    parser.blank();
    parser.at
}

/// Past spaces, tabs and comments on the same line from `at` (where a new line may start).
fn line_end(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = at;
    loop {
        while matches!(bytes.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        if bytes[i..].starts_with(b"//") {
            return bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| i + n);
        }
        if bytes[i..].starts_with(b"/*") {
            match bytes[i + 2..].windows(2).position(|w| w == b"*/") {
                Some(n) if !bytes[i..i + 2 + n].contains(&b'\n') => i += n + 4,
                _ => return at,
            }
            continue;
        }
        return if matches!(bytes.get(i), None | Some(b'\n' | b'\r')) { i } else { at };
    }
}

#[derive(Debug, Clone)]
enum Node {
    Object(ObjectNode),
    /// Arrays and scalars: only their span matters.
    Other(usize, usize),
}

impl Node {
    fn span(&self) -> (usize, usize) {
        match self {
            Self::Object(object) => (object.start, object.end),
            Self::Other(start, end) => (*start, *end),
        }
    }
}

#[derive(Debug, Clone)]
struct ObjectNode {
    /// The `{`.
    start: usize,
    /// Just past the `}`.
    end: usize,
    members: Vec<Member>,
}

#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_start: usize,
    value: Node,
}

/// A JSONC parser that keeps byte spans (the text was already checked by `serde_json`'s reading of
/// it, so errors here are rare and reported plainly).
struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        let at = if text.starts_with('\u{feff}') { 3 } else { 0 };
        Self { bytes: text.as_bytes(), at }
    }

    fn document(&mut self) -> Result<Node, JsoncError> {
        self.blank();
        self.value()
    }

    fn value(&mut self) -> Result<Node, JsoncError> {
        let start = self.at;
        match self.bytes.get(self.at) {
            Some(b'{') => self.object().map(Node::Object),
            Some(b'[') => {
                self.at += 1;
                self.blank();
                while self.bytes.get(self.at).is_some_and(|&b| b != b']') {
                    self.value()?;
                    self.blank();
                    if self.bytes.get(self.at) == Some(&b',') {
                        self.at += 1;
                        self.blank();
                    }
                }
                self.expect(b']')?;
                Ok(Node::Other(start, self.at))
            }
            Some(b'"') => {
                self.string()?;
                Ok(Node::Other(start, self.at))
            }
            Some(_) => {
                while self.bytes.get(self.at).is_some_and(|b| !b",}] \t\r\n/".contains(b)) {
                    self.at += 1;
                }
                if self.at == start {
                    return Err(self.error("expected a value"));
                }
                Ok(Node::Other(start, self.at))
            }
            None => Err(self.error("unexpected end of the text")),
        }
    }

    fn object(&mut self) -> Result<ObjectNode, JsoncError> {
        let start = self.at;
        self.at += 1;
        let mut members = Vec::new();
        self.blank();
        while self.bytes.get(self.at).is_some_and(|&b| b != b'}') {
            let key_start = self.at;
            let key = self.string()?;
            self.blank();
            self.expect(b':')?;
            self.blank();
            let value = self.value()?;
            members.push(Member { key, key_start, value });
            self.blank();
            if self.bytes.get(self.at) == Some(&b',') {
                self.at += 1;
                self.blank();
            }
        }
        self.expect(b'}')?;
        Ok(ObjectNode { start, end: self.at, members })
    }

    /// A string at the cursor, decoded.
    fn string(&mut self) -> Result<String, JsoncError> {
        let start = self.at;
        if self.bytes.get(self.at) != Some(&b'"') {
            return Err(self.error("expected a string key"));
        }
        self.at += 1;
        while let Some(&b) = self.bytes.get(self.at) {
            self.at += if b == b'\\' { 2 } else { 1 };
            if b == b'"' {
                let raw = std::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| self.error("invalid UTF-8"))?;
                return serde_json::from_str(raw).map_err(|err| self.error(&err.to_string()));
            }
        }
        Err(self.error("unterminated string"))
    }

    fn expect(&mut self, byte: u8) -> Result<(), JsoncError> {
        if self.bytes.get(self.at) == Some(&byte) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.error(&format!("expected `{}`", char::from(byte))))
        }
    }

    /// Past whitespace and comments.
    fn blank(&mut self) {
        loop {
            match self.bytes.get(self.at..).unwrap_or_default() {
                [b' ' | b'\t' | b'\r' | b'\n', ..] => self.at += 1,
                [b'/', b'/', ..] => {
                    self.at =
                        self.bytes[self.at..].iter().position(|&b| b == b'\n').map_or(self.bytes.len(), |n| self.at + n)
                }
                [b'/', b'*', ..] => {
                    self.at = self.bytes[self.at + 2..]
                        .windows(2)
                        .position(|w| w == b"*/")
                        .map_or(self.bytes.len(), |n| self.at + 2 + n + 2)
                }
                _ => return,
            }
        }
    }

    fn error(&self, message: &str) -> JsoncError {
        let before = &self.bytes[..self.at.min(self.bytes.len())];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
        JsoncError { line, column, message: message.to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn patched(text: &str, patch: Value) -> String {
        let Value::Object(patch) = patch else { panic!("patch must be an object") };
        let out = merge_patch(text, &patch).unwrap();
        // The edit always means what the merge means.
        let mut expected: Map<String, Value> =
            if text.trim().is_empty() { Map::new() } else { super::super::from_str(text).unwrap() };
        crate::merge_values(&mut expected, patch);
        assert_eq!(super::super::from_str::<Value>(&out).unwrap(), Value::Object(expected), "{out}");
        out
    }

    #[test]
    fn a_value_is_replaced_in_place_keeping_comments_around_it() {
        let text =
            "{\n  // the model\n  \"model\": /* before */ \"a/b\" /* after */, // end\n  \"share\": \"manual\",\n}\n";
        assert_eq!(
            patched(text, json!({"model": "c/d"})),
            "{\n  // the model\n  \"model\": /* before */ \"c/d\" /* after */, // end\n  \"share\": \"manual\",\n}\n"
        );
    }

    #[test]
    fn a_new_key_goes_after_the_last_member_in_its_layout() {
        let text = "{\n  \"model\": \"a/b\" // trailing note\n}\n";
        assert_eq!(
            patched(text, json!({"small_model": "x/y"})),
            "{\n  \"model\": \"a/b\", // trailing note\n  \"small_model\": \"x/y\"\n}\n"
        );
        let text = "{\n\t\"model\": \"a/b\",\n\t// more later\n}";
        assert_eq!(
            patched(text, json!({"share": "auto"})),
            "{\n\t\"model\": \"a/b\",\n\t\"share\": \"auto\",\n\t// more later\n}"
        );
        assert_eq!(
            patched(r#"{"model": "a/b"}"#, json!({"tools": {"bash": false}})),
            r#"{"model": "a/b", "tools": {"bash": false}}"#
        );
    }

    #[test]
    fn nested_objects_merge_key_by_key() {
        let text = "{\n  \"provider\": {\n    \"openai\": {\n      // keep me\n      \"options\": { \"apiKey\": \"k\" }\n    }\n  }\n}\n";
        let out =
            patched(text, json!({"provider": {"openai": {"options": {"baseURL": "http://x"}}, "new": {"name": "N"}}}));
        assert_eq!(
            out,
            "{\n  \"provider\": {\n    \"openai\": {\n      // keep me\n      \"options\": { \"apiKey\": \"k\", \"baseURL\": \"http://x\" }\n    },\n    \"new\": {\n      \"name\": \"N\"\n    }\n  }\n}\n"
        );
    }

    #[test]
    fn strings_with_braces_and_comment_markers_do_not_confuse_the_edit() {
        let text = "{\n  \"a\": \"} { // not a comment\",\n  \"b\": {\"c\": \"]\\\"}\"}\n}";
        assert_eq!(
            patched(text, json!({"b": {"d": 1}, "a": "x"})),
            "{\n  \"a\": \"x\",\n  \"b\": {\"c\": \"]\\\"}\", \"d\": 1}\n}"
        );
    }

    #[test]
    fn empty_objects_and_files_get_indented_members() {
        assert_eq!(patched("{}", json!({"model": "a/b"})), "{\n  \"model\": \"a/b\"\n}");
        assert_eq!(patched("", json!({"model": "a/b"})), "{\n  \"model\": \"a/b\"\n}\n");
        assert_eq!(
            patched("{\n    \"agent\": {\n        // none yet\n    }\n}", json!({"agent": {"x": {"model": "m/n"}}})),
            "{\n    \"agent\": {\n        \"x\": {\n          \"model\": \"m/n\"\n        }\n        // none yet\n    }\n}"
        );
    }

    #[test]
    fn arrays_are_replaced_or_concatenated_as_the_merge_says() {
        let text = "{\n  \"plugin\": [\"a\"], // plugins\n  \"disabled_providers\": [\"x\"]\n}";
        assert_eq!(
            patched(text, json!({"plugin": ["a", "b"], "disabled_providers": ["y"]})),
            "{\n  \"plugin\": [\n    \"a\",\n    \"b\"\n  ], // plugins\n  \"disabled_providers\": [\n    \"y\"\n  ]\n}"
        );
    }

    #[test]
    fn a_scalar_on_the_path_becomes_an_object_and_unchanged_values_are_untouched() {
        let text = "{\n  \"share\": \"manual\",  // as is\n  \"tools\": true\n}";
        assert_eq!(
            patched(text, json!({"share": "manual", "tools": {"bash": false}})),
            "{\n  \"share\": \"manual\",  // as is\n  \"tools\": {\n    \"bash\": false\n  }\n}"
        );
        assert_eq!(
            set(text, &["tools", "bash"], &json!(true)).unwrap(),
            "{\n  \"share\": \"manual\",  // as is\n  \"tools\": {\n    \"bash\": true\n  }\n}"
        );
    }

    #[test]
    fn tricky_documents_always_edit_to_the_merge() {
        let documents = [
            "{ /* } { */ \"a\": 1 }",
            "{\"a\": {\"b\": [1, {\"c\": \"}\"}]}}",
            "{\n  \"a\": 1,\n  \"a\": 2\n}",
            "{\r\n  \"a\": \"x\" // c\r\n}\r\n",
            "{\"k\\\"q\": 1,}",
            "  {\n}  ",
        ];
        let patches = [json!({"a": {"z": null}}), json!({"b": [1, 2], "k\"q": "é"}), json!({"a": 3})];
        for document in documents {
            for patch in &patches {
                patched(document, patch.clone());
            }
        }
        assert_eq!(patched("{\n  \"a\": 1,\n  \"a\": 2\n}", json!({"a": 3})), "{\n  \"a\": 1,\n  \"a\": 3\n}");
    }

    #[test]
    fn a_document_that_is_not_an_object_is_an_error() {
        assert!(merge_patch("[1]", &Map::new()).is_err());
        assert!(set("[1]", &["a"], &json!(1)).is_err());
        assert!(set("{}", &[], &json!(1)).is_err());
    }
}
