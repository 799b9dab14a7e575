//! Colours. The default uses the terminal's own ANSI palette, so it follows the user's terminal theme
//! (light or dark) without asking it anything.

use ratatui::style::Color;
use ratatui::style::Modifier;
use ratatui::style::Style;

#[derive(Debug, Clone)]
pub struct Theme {
    pub accent: Color,
    pub muted: Color,
    pub code: Color,
    pub error: Color,
    pub success: Color,
    pub warning: Color,
    /// Keywords in highlighted code.
    pub keyword: Color,
    /// Agent colours, by position in the agent list (an agent's own `color` wins).
    pub agents: Vec<Color>,
}

impl Default for Theme {
    fn default() -> Self {
        Self {
            accent: Color::Cyan,
            muted: Color::DarkGray,
            code: Color::Yellow,
            error: Color::Red,
            success: Color::Green,
            warning: Color::Yellow,
            keyword: Color::Magenta,
            agents: vec![Color::Blue, Color::Magenta, Color::Green, Color::Yellow, Color::Cyan, Color::Red],
        }
    }
}

impl Theme {
    pub fn accent(&self) -> Style {
        Style::default().fg(self.accent)
    }

    pub fn muted(&self) -> Style {
        Style::default().fg(self.muted)
    }

    pub fn code(&self) -> Style {
        Style::default().fg(self.code)
    }

    pub fn error(&self) -> Style {
        Style::default().fg(self.error)
    }

    pub fn success(&self) -> Style {
        Style::default().fg(self.success)
    }

    pub fn warning(&self) -> Style {
        Style::default().fg(self.warning)
    }

    pub fn bold(&self) -> Style {
        Style::default().add_modifier(Modifier::BOLD)
    }

    /// The colour of agent `name`: its configured `#rrggbb` colour, else one by its position.
    pub fn agent(&self, index: usize, configured: Option<&str>) -> Color {
        configured.and_then(hex).unwrap_or_else(|| self.agents[index % self.agents.len()])
    }
}

fn hex(text: &str) -> Option<Color> {
    let digits = text.strip_prefix('#').filter(|d| d.len() == 6)?;
    let value = u32::from_str_radix(digits, 16).ok()?;
    let [_, r, g, b] = value.to_be_bytes();
    Some(Color::Rgb(r, g, b))
}
