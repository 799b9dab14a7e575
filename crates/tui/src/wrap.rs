//! Word wrapping of styled lines to a width, so the transcript knows every message's height before
//! it draws (scrolling and bottom anchoring need it) and draws only the visible rows.

use ratatui::text::Line;
use ratatui::text::Span;
use unicode_width::UnicodeWidthChar;

/// `text` in at most `width` characters, cut with `…`.
pub(crate) fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `line` broken into lines at most `width` columns wide: at spaces where possible, inside a word
/// only when the word alone is wider than `width`. Styles and the line's own style are kept. The
/// rows after the first are indented under the text of a list item (`• `, `2. `) or an indented line.
pub(crate) fn wrap(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let hang = hanging_indent(line).filter(|hang| hang * 2 <= width).unwrap_or(0);
    let mut rows: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0;
    for span in &line.spans {
        for word in words(&span.content) {
            let word_width: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
            if used + word_width > width && used > hang {
                rows.push(vec![Span::raw(" ".repeat(hang))]);
                used = hang;
                if word.trim().is_empty() {
                    continue; // a space at a break is dropped
                }
            }
            if word_width <= width {
                push(&mut rows, Span::styled(word.to_owned(), span.style));
                used += word_width;
                continue;
            }
            // A word wider than the whole row: cut it by columns.
            for c in word.chars() {
                let w = c.width().unwrap_or(0);
                if used + w > width && used > hang {
                    rows.push(vec![Span::raw(" ".repeat(hang))]);
                    used = hang;
                }
                push(&mut rows, Span::styled(c.to_string(), span.style));
                used += w;
            }
        }
    }
    let last = rows.len() - 1;
    for row in &mut rows[..last] {
        // The space a row was broken at is not part of either row.
        if let Some(span) = row.last_mut() {
            let kept = span.content.trim_end_matches(' ').len();
            span.content.to_mut().truncate(kept);
        }
    }
    rows.into_iter().map(|spans| Line::from(spans).style(line.style)).collect()
}

/// Columns before the text of a list item (`  • `, `2. `) or an indented line, if it is one.
fn hanging_indent(line: &Line<'static>) -> Option<usize> {
    let text: String = line.spans.iter().take(3).map(|span| span.content.as_ref()).collect();
    let rest = text.trim_start_matches(' ');
    let marker = if rest.starts_with("• ") {
        2
    } else {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(". ") { digits + 2 } else { 0 }
    };
    let hang = text.len() - rest.len() + marker;
    (hang > 0).then_some(hang)
}

/// Words and the spaces between them, in order (`"a  b"` -> `"a"`, `"  "`, `"b"`).
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let space = first == ' ';
        let end = rest.find(|c: char| (c == ' ') != space).unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        rest = tail;
        Some(word)
    })
}

/// Appends to the last row, merging with its last span when the style is the same.
fn push(rows: &mut [Vec<Span<'static>>], span: Span<'static>) {
    let Some(row) = rows.last_mut() else { return };
    match row.last_mut() {
        Some(last) if last.style == span.style => last.content.to_mut().push_str(&span.content),
        _ => row.push(span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn breaks_at_spaces_and_cuts_long_words() {
        let line = Line::from("the quick brown fox jumps");
        assert_eq!(texts(&wrap(&line, 10)), ["the quick", "brown fox", "jumps"]);
        assert_eq!(texts(&wrap(&Line::from("abcdefghij12"), 5)), ["abcde", "fghij", "12"]);
        assert_eq!(texts(&wrap(&Line::from(""), 5)), [""]);
        assert_eq!(texts(&wrap(&Line::from("wide 漢字漢字"), 4)), ["wide", "漢字", "漢字"]);
    }

    #[test]
    fn list_items_and_indented_lines_wrap_under_their_text() {
        let item = Line::from(vec![Span::raw("• "), Span::raw("history: three compartments")]);
        assert_eq!(texts(&wrap(&item, 16)), ["• history: three", "  compartments"]);
        assert_eq!(texts(&wrap(&Line::from("12. one two three"), 11)), ["12. one two", "    three"]);
        assert_eq!(texts(&wrap(&Line::from("  code that wraps"), 10)), ["  code", "  that", "  wraps"]);
        assert_eq!(texts(&wrap(&Line::from("plain text wraps"), 10)), ["plain text", "wraps"]);
    }
}
