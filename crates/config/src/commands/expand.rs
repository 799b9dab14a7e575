//! Template expansion: argument placeholders, shell substitutions and `@path` file references.

use std::path::{Path, PathBuf};

use super::{Command, ShellRunner};

/// What a command expands to: the prompt text and the files it references.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The template with placeholders and shell substitutions replaced, trimmed; `@path`
    /// references stay in the text.
    pub text: String,
    /// The existing files and directories the text references, in order, without duplicates.
    pub files: Vec<FileReference>,
}

impl Expansion {
    /// The text the model is shown: the expanded text, then each referenced file's content block
    /// ([`FileReference::inline`], at most `max_file_bytes` each) after a blank line, as OpenCode
    /// shows a referenced file's read result beside the prompt. Binary files add nothing.
    pub fn prompt_text(&self, max_file_bytes: usize) -> String {
        let mut text = self.text.clone();
        for block in self.files.iter().filter_map(|file| file.inline(max_file_bytes)) {
            text.push_str("\n\n");
            text.push_str(&block);
        }
        text
    }
}

/// How much of one referenced file [`Expansion::prompt_text`] callers include by default.
pub const MAX_FILE_BYTES: usize = 50 * 1024;

/// A `@path` reference that names an existing file or directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileReference {
    /// As written after `@`.
    pub name: String,
    /// Resolved against the expansion's directory (`~/` against the home directory).
    pub path: PathBuf,
    pub directory: bool,
}

impl FileReference {
    /// The `file://` URL of a file part.
    pub fn url(&self) -> String {
        format!("file://{}", self.path.display())
    }

    /// The MIME type OpenCode gives a referenced file part.
    pub fn mime(&self) -> &'static str {
        if self.directory { "application/x-directory" } else { "text/plain" }
    }

    /// The file's content for a prompt, as the model is shown it: a `<file path="...">` block with
    /// the text (at most `max_bytes`, cut at a line end with a note) or, for a directory, its entry
    /// names. `None` for binary files and files that cannot be read.
    pub fn inline(&self, max_bytes: usize) -> Option<String> {
        let body = if self.directory { listing(&self.path)? } else { text_head(&self.path, max_bytes)? };
        Some(format!("<file path=\"{}\">\n{}\n</file>", self.name, body.trim_end()))
    }
}

/// Expands commands for one directory with one shell runner.
pub struct Expander<'a> {
    /// Where shell substitutions run and `@path` references resolve.
    pub directory: &'a Path,
    /// Resolves `@~/...` references; `None` leaves them unresolved.
    pub home: Option<&'a Path>,
    pub shell: &'a dyn ShellRunner,
}

impl Expander<'_> {
    /// Expands `command` with the user's `arguments`.
    pub fn expand(&self, command: &Command, arguments: &str) -> Expansion {
        self.expand_template(&command.template, arguments)
    }

    /// Expands a template: arguments, then shell substitutions, then file references.
    pub fn expand_template(&self, template: &str, arguments: &str) -> Expansion {
        let text = substitute_arguments(template, arguments);
        let text = substitute_shell(&text, |command| self.shell.run(command, self.directory));
        let text = text.trim().to_owned();
        let files = file_references(&text).into_iter().filter_map(|name| self.resolve(name)).collect();
        Expansion { text, files }
    }

    fn resolve(&self, name: String) -> Option<FileReference> {
        let path = match name.strip_prefix("~/") {
            Some(rest) => self.home?.join(rest),
            None => self.directory.join(&name),
        };
        let meta = std::fs::metadata(&path).ok()?;
        Some(FileReference { name, path, directory: meta.is_dir() })
    }
}

/// Replaces `$1`..`$n` with the argument words (the highest placeholder takes the remaining words,
/// missing ones become empty) and `$ARGUMENTS` with the whole argument string. Arguments given to a
/// template without any placeholder are appended after a blank line.
pub fn substitute_arguments(template: &str, arguments: &str) -> String {
    let words = split_arguments(arguments);
    let highest = placeholders(template).map(|(_, _, n)| n).max();
    let mut out = String::with_capacity(template.len() + arguments.len());
    let mut copied = 0;
    for (start, end, n) in placeholders(template) {
        out.push_str(&template[copied..start]);
        let index = n.saturating_sub(1);
        if n > 0 && index < words.len() {
            if Some(n) == highest {
                out.push_str(&words[index..].join(" "));
            } else {
                out.push_str(&words[index]);
            }
        }
        copied = end;
    }
    out.push_str(&template[copied..]);
    let uses_arguments = template.contains("$ARGUMENTS");
    let mut out = out.replace("$ARGUMENTS", arguments);
    if highest.is_none() && !uses_arguments && !arguments.trim().is_empty() {
        out.push_str("\n\n");
        out.push_str(arguments);
    }
    out
}

/// The argument words: `[Image N]` tokens, `"quoted"` or `'quoted'` strings (quotes removed) and
/// runs of other non-space characters.
pub fn split_arguments(arguments: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut rest = arguments;
    while let Some(c) = rest.chars().next() {
        let taken = if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        } else if let Some(len) = image_token(rest) {
            words.push(rest[..len].to_owned());
            len
        } else if c == '"' || c == '\'' {
            match rest[1..].find(c) {
                Some(close) => {
                    words.push(rest[1..=close].to_owned());
                    close + 2
                }
                // An unmatched quote is no word on its own.
                None => 1,
            }
        } else {
            let len = rest.find(|c: char| c.is_whitespace() || c == '"' || c == '\'').unwrap_or(rest.len());
            words.push(rest[..len].to_owned());
            len
        };
        rest = &rest[taken..];
    }
    words
}

/// Replaces every ``!`command` `` with what `run` returns for it, in order.
pub fn substitute_shell(text: &str, mut run: impl FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("!`") {
        let after = &rest[start + 2..];
        match after.find('`') {
            Some(end) if end > 0 => {
                out.push_str(&rest[..start]);
                out.push_str(&run(&after[..end]));
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str(&rest[..start + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The `@path` references of `text`, unique, in order: an `@` not preceded by a word character or a
/// backtick, then the path up to whitespace, a backtick or a comma; a trailing `.` (end of sentence)
/// is not part of it.
pub fn file_references(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut previous: Option<char> = None;
    for (index, c) in text.char_indices() {
        let starts = c == '@' && !previous.is_some_and(|p| p.is_alphanumeric() || p == '_' || p == '`');
        previous = Some(c);
        if !starts {
            continue;
        }
        let rest = &text[index + 1..];
        let name = &rest[..reference_len(rest)];
        if !name.is_empty() && !found.iter().any(|known| known == name) {
            found.push(name.to_owned());
        }
    }
    found
}

/// The placeholders a template uses: `$1`, `$2`, ... (unique, sorted as text, as OpenCode lists
/// them), then `$ARGUMENTS`.
pub fn hints(template: &str) -> Vec<String> {
    let mut numbered: Vec<String> =
        placeholders(template).map(|(start, end, _)| template[start..end].to_owned()).collect();
    numbered.sort();
    numbered.dedup();
    if template.contains("$ARGUMENTS") {
        numbered.push("$ARGUMENTS".to_owned());
    }
    numbered
}

/// `(start, end, number)` of every `$<digits>` in `text`.
fn placeholders(text: &str) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
    text.match_indices('$').filter_map(move |(start, _)| {
        let digits = text[start + 1..].bytes().take_while(u8::is_ascii_digit).count();
        let end = start + 1 + digits;
        let n = text[start + 1..end].parse::<usize>().ok()?;
        Some((start, end, n))
    })
}

/// The length of the path at the start of `text`: an optional `.`, then dot-separated runs of
/// characters other than whitespace, backticks, commas and dots (so `a.rs.` ends before the last dot).
fn reference_len(text: &str) -> usize {
    let stop = |c: char| c.is_whitespace() || c == '`' || c == ',' || c == '.';
    let run = |from: usize| text[from..].find(stop).map_or(text.len(), |n| from + n);
    let mut end = run(usize::from(text.starts_with('.')));
    while text[end..].starts_with('.') {
        let next = run(end + 1);
        if next == end + 1 {
            break;
        }
        end = next;
    }
    end
}

/// The length of a leading `[Image <digits>]` token.
fn image_token(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("[Image")?;
    let spaces = rest.len() - rest.trim_start().len();
    if spaces == 0 {
        return None;
    }
    let rest = &rest[spaces..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0 && rest[digits..].starts_with(']')).then_some("[Image".len() + spaces + digits + 1)
}

/// At most `max_bytes` of a UTF-8 file, cut at a line end, with a note when cut.
fn text_head(path: &Path, max_bytes: usize) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.contains(&0) {
        return None;
    }
    if bytes.len() <= max_bytes {
        return String::from_utf8(bytes).ok();
    }
    let cut = bytes[..max_bytes].iter().rposition(|&b| b == b'\n').map_or(max_bytes, |n| n + 1);
    let head = match std::str::from_utf8(&bytes[..cut]) {
        Ok(head) => head,
        // Cut inside a character (a file without line ends): keep what is complete.
        Err(err) if err.error_len().is_none() => std::str::from_utf8(&bytes[..err.valid_up_to()]).ok()?,
        Err(_) => return None,
    };
    Some(format!("{head}\n(showing the first {cut} of {} bytes)", bytes.len()))
}

/// The entry names of a directory, sorted, directories with a trailing `/` (at most 1000).
fn listing(path: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(path)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() { format!("{name}/") } else { name }
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(1000);
    let mut text = names.join("\n");
    if total > names.len() {
        text.push_str(&format!("\n(and {} more)", total - names.len()));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn positional_placeholders_take_words_and_the_highest_takes_the_rest() {
        assert_eq!(substitute_arguments("fix $1 in $2", "bug \"the parser\" now"), "fix bug in the parser now");
        assert_eq!(substitute_arguments("$2 then $1", "a b c"), "b c then a");
        assert_eq!(substitute_arguments("run $1 and $3", "x"), "run x and ");
        assert_eq!(substitute_arguments("cost $5", ""), "cost ");
        assert_eq!(substitute_arguments("$10 $1", "a b c d e f g h i j k"), "j k a");
    }

    #[test]
    fn arguments_placeholder_and_appending() {
        assert_eq!(substitute_arguments("review $ARGUMENTS please", "src/a.rs  b.rs"), "review src/a.rs  b.rs please");
        assert_eq!(substitute_arguments("summarise", "briefly"), "summarise\n\nbriefly");
        assert_eq!(substitute_arguments("summarise", "  "), "summarise");
        // `$1` and `$ARGUMENTS` together: both are filled, nothing is appended.
        assert_eq!(substitute_arguments("$1: $ARGUMENTS", "a b"), "a b: a b");
    }

    #[test]
    fn argument_words_follow_opencodes_tokens() {
        assert_eq!(split_arguments(r#"a "b c" 'd e' [Image 1] f"#), ["a", "b c", "d e", "[Image 1]", "f"]);
        assert_eq!(split_arguments(r#"x"y z"#), ["x", "y", "z"]);
        assert_eq!(split_arguments("  "), Vec::<String>::new());
        assert_eq!(split_arguments("é ü"), ["é", "ü"]);
        assert_eq!(split_arguments("[Image x] [Image 2]"), ["[Image", "x]", "[Image 2]"]);
    }

    #[test]
    fn shell_substitutions_run_in_order() {
        let seen = RefCell::new(Vec::new());
        let text = substitute_shell("branch: !`git branch`, log: !`git log -1` and !`` stays, `a` too !`open", |cmd| {
            seen.borrow_mut().push(cmd.to_owned());
            format!("<{cmd}>")
        });
        assert_eq!(text, "branch: <git branch>, log: <git log -1> and !`` stays, `a` too !`open");
        assert_eq!(*seen.borrow(), ["git branch", "git log -1"]);
    }

    #[test]
    fn file_references_follow_opencodes_pattern() {
        let text = "Read @src/main.rs. Then @README.md, @./x.md and @~/notes.txt; not a@b.c nor `@code` nor @ alone; \
                    again @src/main.rs";
        assert_eq!(file_references(text), ["src/main.rs", "README.md", "./x.md", "~/notes.txt;"]);
        assert_eq!(file_references("@../up/a.b.c.. @.hidden @a..b"), ["../up/a.b.c", ".hidden", "a"]);
    }

    #[test]
    fn hints_list_unique_placeholders() {
        assert_eq!(hints("a $2 $1 $2 $ARGUMENTS"), ["$1", "$2", "$ARGUMENTS"]);
        assert_eq!(hints("plain"), Vec::<String>::new());
    }

    struct Echo;

    impl ShellRunner for Echo {
        fn run(&self, command: &str, directory: &Path) -> String {
            format!("[{command} in {}]", directory.file_name().map(|n| n.to_string_lossy()).unwrap_or_default())
        }
    }

    #[test]
    fn expansion_substitutes_then_resolves_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "fn a() {}\n").unwrap();
        let expander = Expander { directory: dir.path(), home: None, shell: &Echo };
        let expansion = expander.expand_template("  Look at @$1 and @missing.rs and @src here: !`ls`\n", "src/a.rs");
        let name = dir.path().file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(expansion.text, format!("Look at @src/a.rs and @missing.rs and @src here: [ls in {name}]"));
        assert_eq!(
            expansion.files,
            [
                FileReference { name: "src/a.rs".into(), path: dir.path().join("src/a.rs"), directory: false },
                FileReference { name: "src".into(), path: dir.path().join("src"), directory: true },
            ]
        );
        assert_eq!(expansion.files[1].mime(), "application/x-directory");
        assert_eq!(expansion.files[0].url(), format!("file://{}", dir.path().join("src/a.rs").display()));
        assert_eq!(expansion.files[0].inline(100).unwrap(), "<file path=\"src/a.rs\">\nfn a() {}\n</file>");
        assert_eq!(expansion.files[1].inline(100).unwrap(), "<file path=\"src\">\na.rs\n</file>");
        assert_eq!(
            expansion.prompt_text(100),
            format!(
                "{}\n\n<file path=\"src/a.rs\">\nfn a() {{}}\n</file>\n\n<file path=\"src\">\na.rs\n</file>",
                expansion.text
            )
        );
    }

    #[test]
    fn long_and_binary_files_are_bounded_or_skipped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("long.txt"), "line one\nline two\nline three\n").unwrap();
        std::fs::write(dir.path().join("bin"), [1u8, 0, 2]).unwrap();
        let long = FileReference { name: "long.txt".into(), path: dir.path().join("long.txt"), directory: false };
        assert_eq!(
            long.inline(12).unwrap(),
            "<file path=\"long.txt\">\nline one\n\n(showing the first 9 of 29 bytes)\n</file>"
        );
        let binary = FileReference { name: "bin".into(), path: dir.path().join("bin"), directory: false };
        assert_eq!(binary.inline(100), None);
    }
}
