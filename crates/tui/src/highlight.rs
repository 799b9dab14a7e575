//! Syntax colours for fenced code: a small line lexer (comments, strings, numbers, keywords) for the
//! languages answers show most. Each line is coloured on its own, so a half-streamed block colours
//! as it grows; a block comment or string spanning lines colours only its first line's part, which
//! keeps the lexer stateless and cheap (answers are rendered once per revision, then cached).

use ratatui::style::Modifier;
use ratatui::style::Style;
use ratatui::text::Span;

use crate::theme::Theme;

/// What a language looks like to the lexer.
struct Language {
    keywords: &'static [&'static str],
    /// Line comment markers.
    comments: &'static [&'static str],
    /// Whether `'` quotes strings (not in Rust, where it marks lifetimes and chars alike).
    single_quotes: bool,
}

const RUST: Language = Language {
    keywords: &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
        "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
        "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while",
    ],
    comments: &["//"],
    single_quotes: false,
};

const SCRIPT: Language = Language {
    keywords: &[
        "async",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "from",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "interface",
        "let",
        "new",
        "null",
        "of",
        "return",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "type",
        "typeof",
        "undefined",
        "var",
        "void",
        "while",
        "yield",
    ],
    comments: &["//"],
    single_quotes: true,
};

const PYTHON: Language = Language {
    keywords: &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del",
        "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is", "lambda", "nonlocal",
        "not", "or", "pass", "raise", "return", "self", "try", "while", "with", "yield",
    ],
    comments: &["#"],
    single_quotes: true,
};

const GO: Language = Language {
    keywords: &[
        "break",
        "case",
        "chan",
        "const",
        "continue",
        "default",
        "defer",
        "else",
        "false",
        "for",
        "func",
        "go",
        "if",
        "import",
        "interface",
        "map",
        "nil",
        "package",
        "range",
        "return",
        "select",
        "struct",
        "switch",
        "true",
        "type",
        "var",
    ],
    comments: &["//"],
    single_quotes: true,
};

const C_LIKE: Language = Language {
    keywords: &[
        "auto",
        "bool",
        "break",
        "case",
        "char",
        "class",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extends",
        "false",
        "final",
        "float",
        "for",
        "if",
        "implements",
        "import",
        "include",
        "int",
        "long",
        "namespace",
        "new",
        "null",
        "nullptr",
        "package",
        "private",
        "protected",
        "public",
        "return",
        "short",
        "static",
        "struct",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "catch",
        "typedef",
        "unsigned",
        "void",
        "while",
    ],
    comments: &["//"],
    single_quotes: true,
};

const SHELL: Language = Language {
    keywords: &[
        "case", "do", "done", "echo", "elif", "else", "esac", "exit", "export", "fi", "for", "function", "if", "in",
        "local", "return", "then", "while",
    ],
    comments: &["#"],
    single_quotes: true,
};

const DATA: Language = Language { keywords: &["true", "false", "null"], comments: &["#", "//"], single_quotes: true };

fn language(name: &str) -> Option<&'static Language> {
    Some(match name.to_ascii_lowercase().as_str() {
        "rust" | "rs" => &RUST,
        "js" | "javascript" | "jsx" | "ts" | "typescript" | "tsx" | "mjs" | "cjs" => &SCRIPT,
        "py" | "python" => &PYTHON,
        "go" | "golang" => &GO,
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "java" | "kotlin" | "kt" | "cs" | "csharp" | "swift" => &C_LIKE,
        "sh" | "bash" | "zsh" | "shell" | "console" => &SHELL,
        "json" | "jsonc" | "toml" | "yaml" | "yml" => &DATA,
        _ => return None,
    })
}

/// `line` of a block fenced as `name`, coloured; `None` for a language the lexer does not know.
pub(crate) fn line(name: &str, line: &str, theme: &Theme) -> Option<Vec<Span<'static>>> {
    let language = language(name)?;
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = line;
    while let Some(c) = rest.chars().next() {
        let token = if language.comments.iter().any(|marker| rest.starts_with(marker)) {
            Some((rest.len(), theme.muted().add_modifier(Modifier::ITALIC)))
        } else if c == '"' || c == '`' || (c == '\'' && language.single_quotes) {
            Some((quoted(rest, c), theme.success()))
        } else if c.is_ascii_digit() && !plain.ends_with(|p: char| p.is_alphanumeric() || p == '_') {
            Some((
                rest.find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_')).unwrap_or(rest.len()),
                theme.accent(),
            ))
        } else if c.is_alphabetic() || c == '_' {
            let len = rest.find(|ch: char| !(ch.is_alphanumeric() || ch == '_')).unwrap_or(rest.len());
            let word = &rest[..len];
            if language.keywords.contains(&word) && !plain.ends_with('.') {
                Some((len, Style::default().fg(theme.keyword).add_modifier(Modifier::BOLD)))
            } else {
                plain.push_str(word);
                rest = &rest[len..];
                continue;
            }
        } else {
            None
        };
        match token {
            Some((len, style)) => {
                if !plain.is_empty() {
                    spans.push(Span::raw(std::mem::take(&mut plain)));
                }
                spans.push(Span::styled(rest[..len].to_owned(), style));
                rest = &rest[len..];
            }
            None => {
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !plain.is_empty() {
        spans.push(Span::raw(plain));
    }
    Some(spans)
}

/// The length of the string starting at `text` (quoted by `quote`, backslash escapes), to the end
/// of the line when it does not close there.
fn quoted(text: &str, quote: char) -> usize {
    let mut escaped = false;
    for (at, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            _ if c == quote => return at + c.len_utf8(),
            _ => {}
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(language: &str, text: &str) -> Vec<(String, bool)> {
        let theme = Theme::default();
        line(language, text, &theme)
            .unwrap()
            .into_iter()
            .map(|span| (span.content.into_owned(), span.style != Style::default()))
            .collect()
    }

    #[test]
    fn keywords_strings_numbers_and_comments_are_coloured() {
        assert_eq!(
            tokens("rust", "let x = \"a\\\"b\"; // note"),
            [
                ("let".to_owned(), true),
                (" x = ".to_owned(), false),
                ("\"a\\\"b\"".to_owned(), true),
                ("; ".to_owned(), false),
                ("// note".to_owned(), true)
            ]
        );
        assert_eq!(
            tokens("py", "x2 = 42  # answer"),
            [
                ("x2 = ".to_owned(), false),
                ("42".to_owned(), true),
                ("  ".to_owned(), false),
                ("# answer".to_owned(), true)
            ]
        );
        // A keyword inside a word or after a dot is not one; Rust's lifetimes are not strings.
        assert_eq!(tokens("ts", "format.type letter"), [("format.type letter".to_owned(), false)]);
        assert_eq!(tokens("rust", "&'a str"), [("&'a str".to_owned(), false)]);
        assert!(line("brainfuck", "+++", &Theme::default()).is_none());
    }
}
