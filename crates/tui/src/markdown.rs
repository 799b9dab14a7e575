//! Markdown as the transcript shows it: headings, lists, quotes, fenced code, inline code, bold,
//! italic and links. Line-oriented and forgiving, so text that is still streaming (an unclosed fence,
//! a half-written `**`) renders sensibly at every delta.

use ratatui::style::Modifier;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::text::Span;

use crate::theme::Theme;

/// The lines of `text`, unwrapped.
pub(crate) fn render(text: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut fence: Option<String> = None;
    for raw in text.lines() {
        let trimmed = raw.trim_start();
        if let Some(rest) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => {
                    let language = rest.trim().to_owned();
                    if !language.is_empty() {
                        lines.push(Line::from(Span::styled(format!("  {language}"), theme.muted())));
                    }
                    Some(language)
                }
            };
            continue;
        }
        if let Some(language) = &fence {
            let mut spans = vec![Span::styled("  │ ", theme.muted())];
            match crate::highlight::line(language, raw, theme) {
                Some(coloured) => spans.extend(coloured),
                None => spans.push(Span::styled(raw.to_owned(), theme.code())),
            }
            lines.push(Line::from(spans));
            continue;
        }
        lines.push(block(raw, theme));
    }
    lines
}

/// One line outside a code fence.
fn block(raw: &str, theme: &Theme) -> Line<'static> {
    let indent = raw.len() - raw.trim_start().len();
    let trimmed = raw.trim_start();
    let hashes = trimmed.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let style = theme.accent().add_modifier(Modifier::BOLD);
        return Line::from(inline(trimmed[hashes..].trim(), style, theme));
    }
    if let Some(rest) = trimmed.strip_prefix("> ") {
        let mut spans = vec![Span::styled("┃ ", theme.muted())];
        spans.extend(inline(rest, theme.muted().add_modifier(Modifier::ITALIC), theme));
        return Line::from(spans);
    }
    let pad = " ".repeat(indent);
    if let Some(rest) = trimmed.strip_prefix("- ").or_else(|| trimmed.strip_prefix("* ")) {
        let mut spans = vec![Span::raw(format!("{pad}• "))];
        spans.extend(inline(rest, Style::default(), theme));
        return Line::from(spans);
    }
    if let Some((number, rest)) = trimmed.split_once(". ")
        && !number.is_empty()
        && number.chars().all(|c| c.is_ascii_digit())
    {
        let mut spans = vec![Span::raw(format!("{pad}{number}. "))];
        spans.extend(inline(rest, Style::default(), theme));
        return Line::from(spans);
    }
    Line::from(inline(raw, Style::default(), theme))
}

/// Inline code, `**bold**`, `*italic*` / `_italic_` and `[text](url)` over `base`.
fn inline(text: &str, base: Style, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let styled = match c {
            '`' => delimited(rest, "`").map(|(inner, len)| (vec![Span::styled(inner.to_owned(), theme.code())], len)),
            '*' if rest.starts_with("**") => delimited(rest, "**")
                .map(|(inner, len)| (vec![Span::styled(inner.to_owned(), base.add_modifier(Modifier::BOLD))], len)),
            '*' | '_' => delimited(rest, &c.to_string())
                .filter(|(inner, _)| !inner.starts_with(' '))
                .map(|(inner, len)| (vec![Span::styled(inner.to_owned(), base.add_modifier(Modifier::ITALIC))], len)),
            '[' => link(rest).map(|(label, url, len)| {
                let shown = vec![
                    Span::styled(label.to_owned(), theme.accent().add_modifier(Modifier::UNDERLINED)),
                    Span::styled(format!(" ({url})"), theme.muted()),
                ];
                (shown, len)
            }),
            _ => None,
        };
        match styled {
            Some((styled, len)) => {
                if !plain.is_empty() {
                    spans.push(Span::styled(std::mem::take(&mut plain), base));
                }
                spans.extend(styled);
                rest = &rest[len..];
            }
            None => {
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !plain.is_empty() || spans.is_empty() {
        spans.push(Span::styled(plain, base));
    }
    spans
}

/// `marker inner marker` at the start of `text`: the inner text and the whole length.
fn delimited<'a>(text: &'a str, marker: &str) -> Option<(&'a str, usize)> {
    let body = &text[marker.len()..];
    let end = body.find(marker)?;
    (end > 0).then(|| (&body[..end], marker.len() * 2 + end))
}

/// `[label](url)` at the start of `text`.
fn link(text: &str) -> Option<(&str, &str, usize)> {
    let close = text.find("](")?;
    let label = &text[1..close];
    let after = &text[close + 2..];
    let end = after.find(')')?;
    (!label.is_empty()).then(|| (label, &after[..end], close + 2 + end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn blocks_and_inline_styles() {
        let theme = Theme::default();
        let text =
            "# Title\n- one `x`\n2. two **b**\n> quoted\n```rust\nfn main() {}\n```\nsee [docs](https://d.example)";
        assert_eq!(
            plain(&render(text, &theme)),
            ["Title", "• one x", "2. two b", "┃ quoted", "  rust", "  │ fn main() {}", "see docs (https://d.example)"]
        );
        let bold = &render("a **b** c", &theme)[0].spans[1];
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn half_written_markup_stays_text() {
        let theme = Theme::default();
        assert_eq!(plain(&render("a **b and `c", &theme)), ["a **b and `c"]);
        assert_eq!(plain(&render("```\nopen fence", &theme)), ["  │ open fence"]);
        assert_eq!(plain(&render("2 * 3 * 4", &theme)), ["2 * 3 * 4"]);
    }
}
