//! JSONC (JSON with comments and trailing commas) read through `serde_json`.
//!
//! Comments and trailing commas are blanked out with spaces rather than removed, so every byte keeps
//! its line and column and `serde_json`'s error positions point into the file the user wrote.
//! [`merge_patch`] and [`set`] edit a document in place, keeping its comments and layout.

use serde::de::DeserializeOwned;

mod edit;

pub use edit::{merge_patch, set};

/// Where and why a JSONC document failed to parse (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct JsoncError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// Parses JSONC text into `T`.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, JsoncError> {
    let plain = strip(text);
    serde_json::from_str(&plain).map_err(|err| JsoncError {
        line: err.line(),
        column: err.column(),
        message: describe(&err),
    })
}

/// The text with comments and trailing commas replaced by spaces (newlines kept).
pub fn strip(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    // Index of the last comma seen outside strings with only whitespace/comments after it.
    let mut pending_comma: Option<usize> = None;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                pending_comma = None;
                i = skip_string(bytes, i);
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = bytes[i..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |n| i + n);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = find(bytes, i + 2, b"*/").map_or(bytes.len(), |n| n + 2);
                blank(&mut out, i, end);
                i = end;
            }
            b',' => {
                pending_comma = Some(i);
                i += 1;
            }
            b'}' | b']' => {
                if let Some(comma) = pending_comma.take() {
                    out[comma] = b' ';
                }
                i += 1;
            }
            b if b.is_ascii_whitespace() => i += 1,
            _ => {
                pending_comma = None;
                i += 1;
            }
        }
    }
    // Only ASCII bytes outside strings were replaced by ASCII spaces, so the text stays UTF-8.
    String::from_utf8(out).unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
}

/// Index just past the string starting at `start` (a `"`).
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

fn find(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    bytes.get(from..)?.windows(needle.len()).position(|window| window == needle).map(|n| from + n)
}

/// Blanks a comment but keeps its newlines (and multi-byte characters become spaces byte by byte).
fn blank(out: &mut [u8], start: usize, end: usize) {
    for byte in &mut out[start..end] {
        if *byte != b'\n' && *byte != b'\r' {
            *byte = b' ';
        }
    }
}

/// `serde_json`'s message without its " at line X column Y" suffix (we print the position ourselves).
fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(index) => text[..index].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let text = "{\n  // a comment\n  \"a\": [1, 2,], /* block\n */ \"b\": \"x // not a comment\",\n}\n";
        let value: Value = from_str(text).unwrap();
        assert_eq!(value, json!({"a": [1, 2], "b": "x // not a comment"}));
    }

    #[test]
    fn strings_with_escaped_quotes_and_commas_survive() {
        let value: Value = from_str(r#"{"a": "he said \"hi,\"", "b": ",}"}"#).unwrap();
        assert_eq!(value, json!({"a": "he said \"hi,\"", "b": ",}"}));
    }

    #[test]
    fn errors_point_into_the_original_text() {
        let text = "{\n  // comment\n  \"model\": \"x\"\n  \"small_model\": \"y\"\n}";
        let err = from_str::<Value>(text).unwrap_err();
        assert_eq!((err.line, err.column), (4, 3));
        assert_eq!(err.message, "expected `,` or `}`");
    }

    #[test]
    fn multibyte_text_in_comments_is_blanked_safely() {
        let value: Value = from_str("{/* é ü */ \"a\": \"ü\"}").unwrap();
        assert_eq!(value, json!({"a": "ü"}));
    }
}
