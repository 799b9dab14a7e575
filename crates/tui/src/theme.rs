//! Colours. The default (`system`) uses the terminal's own ANSI palette, so it follows the user's
//! terminal theme (light or dark) without asking it anything. Other themes are OpenCode's theme files
//! (`~/.config/opencode/themes/*.json`, then the project's `.opencode/themes/*.json`), read as OpenCode
//! reads them: `defs` names colours, `theme` maps each role to a colour, a def, or `{dark, light}`.

use std::path::Path;
use std::path::PathBuf;

use ratatui::style::Color;
use ratatui::style::Modifier;
use ratatui::style::Style;
use serde_json::Value;

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

impl Theme {
    /// The theme an OpenCode theme file describes, for a dark or a light terminal. Roles the file
    /// leaves out keep the `system` colours.
    pub fn from_opencode(file: &Value, dark: bool) -> Result<Self, String> {
        let roles = file.get("theme").and_then(Value::as_object).ok_or("it has no `theme` object")?;
        let defs = file.get("defs").cloned().unwrap_or(Value::Null);
        let colour = |names: &[&str]| -> Result<Option<Color>, String> {
            let Some(value) = names.iter().find_map(|name| roles.get(*name)) else { return Ok(None) };
            resolve(value, &defs, dark, 0).map(Some)
        };
        let mut theme = Self::default();
        let slots: [(&[&str], &mut Color); 7] = [
            (&["primary", "accent"], &mut theme.accent),
            (&["textMuted"], &mut theme.muted),
            (&["markdownCode", "syntaxString"], &mut theme.code),
            (&["error"], &mut theme.error),
            (&["success"], &mut theme.success),
            (&["warning"], &mut theme.warning),
            (&["syntaxKeyword", "secondary"], &mut theme.keyword),
        ];
        for (names, slot) in slots {
            if let Some(found) = colour(names)? {
                *slot = found;
            }
        }
        Ok(theme)
    }
}

/// A role's value: `#rrggbb`, an ANSI index, `none`, a def's name, or `{dark, light}`.
fn resolve(value: &Value, defs: &Value, dark: bool, depth: u8) -> Result<Color, String> {
    if depth > 8 {
        return Err("its defs refer to each other in a loop".to_owned());
    }
    match value {
        Value::String(text) if text == "none" || text == "transparent" => Ok(Color::Reset),
        Value::String(text) if text.starts_with('#') => hex(text).ok_or_else(|| format!("`{text}` is not #rrggbb")),
        Value::String(name) => match defs.get(name) {
            Some(def) => resolve(def, defs, dark, depth + 1),
            None => Err(format!("`{name}` is neither a colour nor one of its defs")),
        },
        Value::Number(index) => index
            .as_u64()
            .and_then(|i| u8::try_from(i).ok())
            .map(Color::Indexed)
            .ok_or("a colour index is 0-255".into()),
        Value::Object(variants) => {
            let chosen = variants.get(if dark { "dark" } else { "light" }).ok_or("a {dark, light} colour lacks one")?;
            resolve(chosen, defs, dark, depth + 1)
        }
        other => Err(format!("{other} is not a colour")),
    }
}

/// The themes a user can choose: `system`, and the theme files of the theme directories (a later
/// directory's file of the same name wins, so a project overrides the user's).
#[derive(Debug, Clone, Default)]
pub struct Themes {
    pub dirs: Vec<PathBuf>,
}

impl Themes {
    pub fn names(&self) -> Vec<String> {
        let mut names = vec!["system".to_owned()];
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for path in entries.flatten().map(|entry| entry.path()) {
                let stem = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned);
                if let (Some(stem), Some("json")) = (stem, path.extension().and_then(|e| e.to_str()))
                    && !names.contains(&stem)
                {
                    names.push(stem);
                }
            }
        }
        names[1..].sort();
        names
    }

    /// Theme `name` for a dark or light terminal; a one-line reason when it cannot be used.
    pub fn load(&self, name: &str, dark: bool) -> Result<Theme, String> {
        if name == "system" {
            return Ok(Theme::default());
        }
        let file = self.dirs.iter().rev().map(|dir| dir.join(format!("{name}.json"))).find(|f| f.is_file());
        let file = file.ok_or_else(|| format!("no theme `{name}` (themes are JSON files in {})", self.listed()))?;
        let text = std::fs::read_to_string(&file).map_err(|err| format!("cannot read {}: {err}", file.display()))?;
        let json: Value =
            serde_json::from_str(&text).map_err(|err| format!("{} is not JSON: {err}", file.display()))?;
        Theme::from_opencode(&json, dark).map_err(|err| format!("{} is not a theme: {err}", file.display()))
    }

    fn listed(&self) -> String {
        self.dirs.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>().join(", ")
    }
}

/// Whether the terminal's background is dark, from `COLORFGBG` (`fg;bg`, set by many terminals);
/// dark when unknown.
pub fn dark_background(colorfgbg: Option<&str>) -> bool {
    let background = colorfgbg.and_then(|value| value.rsplit(';').next()).and_then(|bg| bg.parse::<u8>().ok());
    !matches!(background, Some(7 | 15))
}

/// The user's and the project's theme directories under `config` (`~/.config/opencode`) and
/// `project`.
pub fn theme_dirs(config: Option<&Path>, project: Option<&Path>) -> Vec<PathBuf> {
    let global = config.map(|config| config.join("themes"));
    let local = project.map(|project| project.join(".opencode/themes"));
    global.into_iter().chain(local).collect()
}

fn hex(text: &str) -> Option<Color> {
    let digits = text.strip_prefix('#').filter(|d| d.len() == 6)?;
    let value = u32::from_str_radix(digits, 16).ok()?;
    let [_, r, g, b] = value.to_be_bytes();
    Some(Color::Rgb(r, g, b))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_opencode_theme_file_maps_onto_the_roles() {
        let file = json!({
            "defs": {"blue": "#0000ff", "grey": {"dark": "#808080", "light": "#202020"}},
            "theme": {"primary": "blue", "textMuted": "grey", "error": {"dark": "#ff0000", "light": "#aa0000"},
                      "syntaxKeyword": 5, "success": "none"}
        });
        let dark = Theme::from_opencode(&file, true).unwrap();
        assert_eq!(dark.accent, Color::Rgb(0, 0, 255));
        assert_eq!(dark.muted, Color::Rgb(128, 128, 128));
        assert_eq!(dark.error, Color::Rgb(255, 0, 0));
        assert_eq!(dark.keyword, Color::Indexed(5));
        assert_eq!(dark.success, Color::Reset);
        assert_eq!(dark.warning, Theme::default().warning, "a role left out keeps the system colour");
        let light = Theme::from_opencode(&file, false).unwrap();
        assert_eq!((light.muted, light.error), (Color::Rgb(32, 32, 32), Color::Rgb(170, 0, 0)));
    }

    #[test]
    fn a_broken_theme_says_why() {
        let err = |file: Value| Theme::from_opencode(&file, true).unwrap_err();
        assert_eq!(err(json!({"defs": {}})), "it has no `theme` object");
        assert_eq!(err(json!({"theme": {"primary": "sky"}})), "`sky` is neither a colour nor one of its defs");
        assert_eq!(err(json!({"theme": {"primary": "#12"}})), "`#12` is not #rrggbb");
        assert_eq!(
            err(json!({"defs": {"a": "b", "b": "a"}, "theme": {"primary": "a"}})),
            "its defs refer to each other in a loop"
        );
    }

    #[test]
    fn themes_come_from_the_users_then_the_projects_directory() {
        let root = tempfile::tempdir().unwrap();
        let (config, project) = (root.path().join("config"), root.path().join("project"));
        for (dir, colour) in [(config.join("themes"), "#111111"), (project.join(".opencode/themes"), "#222222")] {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("night.json"), json!({"theme": {"primary": colour}}).to_string()).unwrap();
        }
        std::fs::write(config.join("themes/day.json"), "{not json").unwrap();
        let themes = Themes { dirs: theme_dirs(Some(&config), Some(&project)) };
        assert_eq!(themes.names(), ["system", "day", "night"]);
        assert_eq!(themes.load("night", true).unwrap().accent, Color::Rgb(0x22, 0x22, 0x22), "the project wins");
        assert!(themes.load("day", true).unwrap_err().contains("day.json is not JSON"));
        assert!(themes.load("dusk", true).unwrap_err().starts_with("no theme `dusk`"));
        assert!(!dark_background(Some("0;15")) && dark_background(Some("15;0")) && dark_background(None));
    }
}
