//! Word wrapping of styled lines to a width, so the transcript knows every message's height before
//! it draws (scrolling and bottom anchoring need it) and draws only the visible rows.

use ratatui::text::Line;
use ratatui::text::Span;
use unicode_width::UnicodeWidthChar;

/// `line` broken into lines at most `width` columns wide: at spaces where possible, inside a word
/// only when the word alone is wider than `width`. Styles and the line's own style are kept.
pub(crate) fn wrap(line: &Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut rows: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0;
    for span in &line.spans {
        for word in words(&span.content) {
            let word_width: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
            if used + word_width > width && used > 0 {
                rows.push(Vec::new());
                used = 0;
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
                if used + w > width && used > 0 {
                    rows.push(Vec::new());
                    used = 0;
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
}
