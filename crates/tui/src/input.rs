//! The prompt being typed: text and a cursor, edited by keys.

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use crossterm::event::KeyModifiers;
use unicode_width::UnicodeWidthStr;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Input {
    text: String,
    /// Byte offset of the cursor, always on a character boundary.
    cursor: usize,
}

impl Input {
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the cursor is after the last character.
    pub fn at_end(&self) -> bool {
        self.cursor == self.text.len()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    pub fn set(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    pub fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    pub fn insert_str(&mut self, text: &str) {
        // Pasted line endings become newlines of the prompt; nothing is submitted by a paste.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
    }

    /// Edits for a key that is not a command of the app.
    pub fn key(&mut self, key: KeyEvent) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('u') if ctrl => {
                self.text.drain(..self.cursor);
                self.cursor = 0;
            }
            KeyCode::Char('w') if ctrl => {
                let start = self.text[..self.cursor].trim_end().rfind(' ').map_or(0, |i| i + 1);
                self.text.drain(start..self.cursor);
                self.cursor = start;
            }
            KeyCode::Char('a') if ctrl => self.cursor = 0,
            KeyCode::Char('e') if ctrl => self.cursor = self.text.len(),
            KeyCode::Char('j') if ctrl => self.insert('\n'),
            KeyCode::Char(c) if !ctrl => self.insert(c),
            KeyCode::Backspace => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                    self.text.remove(self.cursor);
                }
            }
            KeyCode::Delete if self.cursor < self.text.len() => {
                self.text.remove(self.cursor);
            }
            KeyCode::Left => {
                if let Some(c) = self.text[..self.cursor].chars().next_back() {
                    self.cursor -= c.len_utf8();
                }
            }
            KeyCode::Right => {
                if let Some(c) = self.text[self.cursor..].chars().next() {
                    self.cursor += c.len_utf8();
                }
            }
            KeyCode::Home => self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1),
            KeyCode::End => self.cursor += self.text[self.cursor..].find('\n').unwrap_or(self.text.len() - self.cursor),
            _ => {}
        }
    }

    /// The cursor's (row, column) in the text's own lines, column in display cells.
    pub fn cursor_position(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let row = before.matches('\n').count();
        let line = before.rsplit('\n').next().unwrap_or("");
        (row, line.width())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(input: &mut Input, code: KeyCode) {
        input.key(KeyEvent::new(code, KeyModifiers::NONE));
    }

    #[test]
    fn typing_editing_and_moving() {
        let mut input = Input::default();
        for c in "héllo".chars() {
            press(&mut input, KeyCode::Char(c));
        }
        press(&mut input, KeyCode::Left);
        press(&mut input, KeyCode::Backspace);
        assert_eq!(input.text(), "hélo");
        assert_eq!(input.cursor_position(), (0, 3));
        input.key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert_eq!(input.text(), "hél\no");
        assert_eq!(input.cursor_position(), (1, 0));
        input.key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(input.text(), "o");
        assert_eq!(input.take(), "o");
        assert!(input.is_empty());
    }
}
