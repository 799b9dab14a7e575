//! A small parser of bash command lines into their simple commands, for permission patterns.
//!
//! OpenCode parses with tree-sitter and asks permission for every `command` node; this parser finds
//! the same commands without a C grammar: it splits at `;`, `&`, `&&`, `||`, `|`, `|&` and newlines,
//! descends into subshells `( … )`, groups `{ …; }`, command substitutions `$( … )` and backticks
//! (also inside double quotes) and process substitutions `<( … )`, honours single, double and
//! `$'…'` quotes and backslash escapes, drops comments, redirections (with heredoc bodies) and
//! leading variable assignments, and treats reserved words (`if`, `then`, `do`, `done`, …) as
//! separators. `case` patterns and arithmetic `$(( … ))` are skipped, not interpreted.

/// One simple command: its source text (without redirections) and its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The command as written, from its first word to its last (assignments included).
    pub text: String,
    /// The words after any assignments, as written (quotes kept), like tree-sitter's node texts.
    pub raw: Vec<String>,
    /// The same words with quotes and escapes removed (substitutions kept as written).
    pub words: Vec<String>,
}

/// The simple commands of a command line, outer commands before the ones substituted into them.
pub fn parse(line: &str) -> Vec<SimpleCommand> {
    let chars: Vec<char> = line.chars().collect();
    let mut parser = Parser { chars: &chars, pos: 0, out: Vec::new(), heredocs: Vec::new() };
    parser.sequence(None);
    parser.out
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "in", "select", "function", "!", "{",
    "}",
];

struct Parser<'a> {
    chars: &'a [char],
    pos: usize,
    out: Vec<SimpleCommand>,
    /// Heredoc delimiters whose bodies start at the next newline.
    heredocs: Vec<String>,
}

/// A command being read.
#[derive(Default)]
struct Pending {
    slot: usize,
    start: Option<usize>,
    end: usize,
    raw: Vec<String>,
    words: Vec<String>,
    /// Skip words until the next separator (`for x in …`, `case …`).
    skipping: bool,
}

impl Parser<'_> {
    /// Reads commands until the end, or until `close` at a word boundary (consumed).
    fn sequence(&mut self, close: Option<char>) {
        let mut command = Pending { slot: self.out.len(), ..Pending::default() };
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '\n' | ';' | '&' | '|' => {
                    if c == '&' && self.peek_at(1) == Some('>') {
                        self.redirection();
                        continue;
                    }
                    self.finish(&mut command);
                    self.pos += 1;
                    if c == '\n' {
                        self.heredocs_pending_skip();
                    }
                }
                '#' => self.skip_comment(),
                '(' if command.start.is_none() && self.peek_at(1) == Some('(') => {
                    // `(( … ))` arithmetic: no command inside.
                    self.skip_balanced(self.pos + 2, 2);
                }
                '(' if command.start.is_none() => {
                    self.pos += 1;
                    self.sequence(Some(')'));
                    command.slot = self.out.len();
                }
                c if Some(c) == close => {
                    self.pos += 1;
                    self.finish(&mut command);
                    return;
                }
                ')' | '(' => {
                    self.finish(&mut command);
                    self.pos += 1;
                }
                '<' | '>' => self.redirection(),
                _ => self.word(&mut command),
            }
        }
        self.finish(&mut command);
    }

    fn finish(&mut self, command: &mut Pending) {
        let done = std::mem::take(command);
        command.slot = self.out.len();
        let Some(start) = done.start else { return };
        if done.raw.is_empty() {
            return;
        }
        let text: String = self.chars[start..done.end].iter().collect();
        let slot = done.slot.min(self.out.len());
        self.out.insert(slot, SimpleCommand { text, raw: done.raw, words: done.words });
        command.slot = self.out.len();
    }

    /// Reads one word into `command` (or handles it as a reserved word or assignment).
    fn word(&mut self, command: &mut Pending) {
        let start = self.pos;
        let Some((value, quoted)) = self.read_word() else { return };
        if value.chars().all(|c| c.is_ascii_digit()) && !quoted && matches!(self.peek(), Some('<' | '>')) {
            return; // a file descriptor number: `2>&1`
        }
        let raw: String = self.chars[start..self.pos].iter().collect();
        if command.skipping {
            return;
        }
        if command.raw.is_empty() && !quoted {
            if RESERVED.contains(&raw.as_str()) {
                if command.start.is_some() {
                    // Assignments alone are no command; a reserved word ends them.
                    *command = Pending { slot: self.out.len(), ..Pending::default() };
                }
                command.skipping = matches!(raw.as_str(), "for" | "select" | "function");
                return;
            }
            if raw == "[[" {
                // A test expression, not a command (substitutions inside are still parsed).
                self.skip_test();
                return;
            }
            if raw == "case" {
                self.skip_case();
                return;
            }
            if is_assignment(&raw) {
                command.start.get_or_insert(start);
                command.end = self.pos;
                return;
            }
        }
        command.start.get_or_insert(start);
        command.end = self.pos;
        command.raw.push(raw);
        command.words.push(value);
    }

    /// Reads a word's characters up to a metacharacter; returns its unquoted value and whether any
    /// part was quoted. `None` when no character was consumed.
    fn read_word(&mut self) -> Option<(String, bool)> {
        let start = self.pos;
        let mut value = String::new();
        let mut quoted = false;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')' => {
                    // `<(` and `>(` inside a word do not occur; `=(`, `@(` globs are rare: stop.
                    break;
                }
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(next) => {
                            value.push(next);
                            self.pos += 1;
                            quoted = true;
                        }
                        None => value.push('\\'),
                    }
                }
                '\'' => {
                    quoted = true;
                    self.pos += 1;
                    while let Some(inner) = self.bump() {
                        if inner == '\'' {
                            break;
                        }
                        value.push(inner);
                    }
                }
                '"' => {
                    quoted = true;
                    self.pos += 1;
                    self.double_quoted(&mut value);
                }
                '$' if self.peek_at(1) == Some('\'') => {
                    quoted = true;
                    self.pos += 2;
                    self.ansi_c(&mut value);
                }
                '$' if self.peek_at(1) == Some('(') => self.substitution(&mut value),
                '`' => self.backticks(&mut value),
                _ => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
        (self.pos > start).then_some((value, quoted))
    }

    /// After an opening `"`: up to the closing one, with `\` escapes and substitutions.
    fn double_quoted(&mut self, value: &mut String) {
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    return;
                }
                '\\' => {
                    self.pos += 1;
                    if let Some(next) = self.bump() {
                        if !matches!(next, '"' | '\\' | '$' | '`' | '\n') {
                            value.push('\\');
                        }
                        if next != '\n' {
                            value.push(next);
                        }
                    }
                }
                '$' if self.peek_at(1) == Some('(') => self.substitution(value),
                '`' => self.backticks(value),
                _ => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
    }

    /// After `$'`: an ANSI-C string (only `\'` and `\\` matter for finding its end).
    fn ansi_c(&mut self, value: &mut String) {
        while let Some(c) = self.bump() {
            match c {
                '\'' => return,
                '\\' => {
                    if let Some(next) = self.bump() {
                        value.push(match next {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                    }
                }
                _ => value.push(c),
            }
        }
    }

    /// At `$(`: parses the commands inside (or skips `$(( … ))` arithmetic); the value keeps the
    /// substitution as written.
    fn substitution(&mut self, value: &mut String) {
        let start = self.pos;
        if self.peek_at(2) == Some('(') {
            self.skip_balanced(start + 3, 2);
        } else {
            self.pos += 2;
            self.sequence(Some(')'));
        }
        value.extend(&self.chars[start..self.pos]);
    }

    /// At a backtick: parses the commands up to the closing one.
    fn backticks(&mut self, value: &mut String) {
        let start = self.pos;
        self.pos += 1;
        let mut inner = String::new();
        while let Some(c) = self.bump() {
            match c {
                '`' => break,
                '\\' => {
                    if let Some(next) = self.bump() {
                        if !matches!(next, '`' | '\\' | '$') {
                            inner.push('\\');
                        }
                        inner.push(next);
                    }
                }
                _ => inner.push(c),
            }
        }
        self.out.extend(parse(&inner));
        value.extend(&self.chars[start..self.pos]);
    }

    /// Skips parentheses from `from` until `depth` of them are closed (quotes respected).
    fn skip_balanced(&mut self, from: usize, mut depth: usize) {
        self.pos = from;
        while let Some(c) = self.bump() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                '\\' => self.pos += 1,
                '\'' | '"' => {
                    while let Some(inner) = self.bump() {
                        if inner == c {
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A redirection operator and its target word; process substitutions `<( … )` are parsed.
    fn redirection(&mut self) {
        let heredoc = self.peek() == Some('<') && self.peek_at(1) == Some('<') && self.peek_at(2) != Some('<');
        while matches!(self.peek(), Some('<' | '>' | '&' | '|' | '-')) {
            if matches!(self.peek(), Some('<' | '>')) && self.peek_at(1) == Some('(') {
                self.pos += 2;
                self.sequence(Some(')'));
                return;
            }
            self.pos += 1;
        }
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        if let Some((target, _)) = self.read_word()
            && heredoc
        {
            self.heredocs.push(target);
        }
    }

    /// At the start of a line after heredoc redirections: skips their bodies.
    fn heredocs_pending_skip(&mut self) {
        for delimiter in std::mem::take(&mut self.heredocs) {
            while self.pos < self.chars.len() {
                let end =
                    self.chars[self.pos..].iter().position(|&c| c == '\n').map_or(self.chars.len(), |at| self.pos + at);
                let line: String = self.chars[self.pos..end].iter().collect();
                self.pos = (end + 1).min(self.chars.len());
                if line.trim() == delimiter {
                    break;
                }
            }
        }
    }

    /// After `[[`: words up to `]]`.
    fn skip_test(&mut self) {
        while let Some(c) = self.peek() {
            if matches!(c, ' ' | '\t' | '\n' | '&' | '|' | '<' | '>' | '(' | ')' | ';') {
                self.pos += 1;
                continue;
            }
            let start = self.pos;
            let _ = self.read_word();
            if self.chars[start..self.pos].iter().collect::<String>() == "]]" {
                return;
            }
        }
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                return;
            }
            self.pos += 1;
        }
    }

    /// `case WORD in PATTERN) …;; esac`: the commands between `)` and `;;` are parsed.
    fn skip_case(&mut self) {
        // Skip the word and `in`, then each pattern up to its `)`.
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.pos += 1;
            }
            let Some((word, _)) = self.read_word() else { break };
            if word == "esac" {
                return;
            }
            if word != "in" && self.peek() == Some(')') {
                self.pos += 1;
                let mut command = Pending { slot: self.out.len(), ..Pending::default() };
                // Commands of this branch run until `;;`.
                while let Some(c) = self.peek() {
                    if c == ';' && self.peek_at(1) == Some(';') {
                        self.pos += 2;
                        break;
                    }
                    match c {
                        ' ' | '\t' => self.pos += 1,
                        '\n' | ';' | '&' | '|' => {
                            self.finish(&mut command);
                            self.pos += 1;
                        }
                        '<' | '>' => self.redirection(),
                        _ => self.word(&mut command),
                    }
                    if self.peek_word_is("esac") {
                        break;
                    }
                }
                self.finish(&mut command);
            } else if self.peek().is_none() {
                return;
            } else if matches!(self.peek(), Some('(' | ')' | '|')) {
                self.pos += 1;
            }
        }
    }

    fn peek_word_is(&self, word: &str) -> bool {
        let rest: String = self.chars[self.pos..].iter().take(word.len() + 1).collect();
        rest.strip_prefix(word).is_some_and(|after| after.chars().next().is_none_or(|c| !c.is_alphanumeric()))
            && self.pos > 0
            && matches!(self.chars[self.pos - 1], ' ' | '\t' | '\n' | ';')
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        Some(c)
    }
}

/// `NAME=…`, `NAME+=…` or `NAME[i]=…` before the command name.
fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else { return false };
    let name = name.strip_suffix('+').unwrap_or(name);
    let name = name.split_once('[').map_or(name, |(base, _)| base);
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<String> {
        parse(line).into_iter().map(|command| command.text).collect()
    }

    #[test]
    fn separators_split_commands() {
        assert_eq!(
            texts("cd a && ls -la | grep 'x;y' ; echo \"a&&b\" || true & wait\nnext |& tee log"),
            ["cd a", "ls -la", "grep 'x;y'", "echo \"a&&b\"", "true", "wait", "next", "tee log"]
        );
    }

    #[test]
    fn quotes_and_escapes_are_removed_from_words() {
        let commands = parse(r#"git commit -m "fix: a \"b\"" 'c d' e\ f $'g\'h'"#);
        assert_eq!(commands.len(), 1);
        assert_eq!(commands[0].words, ["git", "commit", "-m", "fix: a \"b\"", "c d", "e f", "g'h"]);
        assert_eq!(commands[0].raw[3], r#""fix: a \"b\"""#);
    }

    #[test]
    fn substitutions_and_subshells_are_descended() {
        assert_eq!(texts("echo $(rm -rf x; ls)"), ["echo $(rm -rf x; ls)", "rm -rf x", "ls"]);
        assert_eq!(texts("echo \"now: `date -u`\""), ["echo \"now: `date -u`\"", "date -u"]);
        assert_eq!(texts("(cd sub && make) ; { npm test; }"), ["cd sub", "make", "npm test"]);
        assert_eq!(texts("diff <(sort a) b"), ["diff <(sort a) b", "sort a"]);
        assert_eq!(texts("echo $((1 + 2))"), ["echo $((1 + 2))"]);
    }

    #[test]
    fn redirections_assignments_comments_and_heredocs_are_dropped() {
        assert_eq!(texts("FOO=1 BAR=2 make build > out.log 2>&1"), ["FOO=1 BAR=2 make build"]);
        assert_eq!(parse("FOO=1 make")[0].words, ["make"]);
        assert_eq!(texts("X=1"), Vec::<String>::new());
        assert_eq!(texts("ls # rm -rf /"), ["ls"]);
        assert_eq!(texts("cat <<EOF > f\nrm -rf /\nEOF\necho done"), ["cat", "echo done"]);
        assert_eq!(texts("cmd &> log"), ["cmd"]);
    }

    #[test]
    fn compound_statements_yield_their_commands() {
        assert_eq!(texts("if test -f x; then rm x; else touch x; fi"), ["test -f x", "rm x", "touch x"]);
        assert_eq!(texts("for f in a b; do echo $f; done"), ["echo $f"]);
        assert_eq!(texts("while true; do sleep 1; done"), ["true", "sleep 1"]);
        assert_eq!(texts("case $x in a) rm a;; b|c) ls;; esac"), ["rm a", "ls"]);
        assert_eq!(texts("[[ -f x && $(id -u) == 0 ]] && rm x"), ["id -u", "rm x"]);
        assert_eq!(texts("(( i++ )); echo $i"), ["echo $i"]);
    }

    #[test]
    fn line_continuations_join_words() {
        assert_eq!(parse("ls \\\n  -la")[0].words, ["ls", "-la"]);
    }
}
