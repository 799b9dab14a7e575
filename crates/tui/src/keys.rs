//! Key bindings under OpenCode's names and defaults, which `tui.json` `keybinds` overrides as
//! OpenCode reads it: `"session_new": "<leader>n"`, alternatives separated by commas, `"none"` to
//! unbind, `leader` for the leader key. Names OpenCode has and this TUI does not (sharing, the
//! timeline) are accepted and ignored, so one `tui.json` serves both.

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use crossterm::event::KeyModifiers;
use serde_json::Value;

/// What a binding does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    AppExit,
    AppHelp,
    CommandList,
    SessionNew,
    SessionList,
    SessionCompact,
    SessionExport,
    SessionInterrupt,
    SessionChildCycle,
    SessionParent,
    ModelList,
    ModelCycleRecent,
    ModelCycleRecentReverse,
    VariantCycle,
    AgentList,
    AgentCycle,
    AgentCycleReverse,
    ThemeList,
    SidebarToggle,
    EditorOpen,
    MessagesCopy,
    MessagesUndo,
    MessagesRedo,
    MessagesPageUp,
    MessagesPageDown,
}

impl Action {
    /// Whether the action is taken before dialogs and popups see the key (the rest, like Tab and
    /// Esc, mean something else in them).
    pub fn global(self) -> bool {
        !matches!(
            self,
            Self::AgentCycle
                | Self::AgentCycleReverse
                | Self::SessionInterrupt
                | Self::MessagesPageUp
                | Self::MessagesPageDown
        )
    }
}

/// Every binding's name, action and default (OpenCode's).
const DEFAULTS: &[(&str, Action, &str)] = &[
    ("app_exit", Action::AppExit, "ctrl+c,ctrl+d,<leader>q"),
    ("app_help", Action::AppHelp, "<leader>h"),
    ("command_list", Action::CommandList, "ctrl+p"),
    ("session_new", Action::SessionNew, "<leader>n"),
    ("session_list", Action::SessionList, "<leader>l"),
    ("session_compact", Action::SessionCompact, "<leader>c"),
    ("session_export", Action::SessionExport, "<leader>x"),
    ("session_interrupt", Action::SessionInterrupt, "escape"),
    ("session_child_cycle", Action::SessionChildCycle, "<leader>right,<leader>down"),
    ("session_parent", Action::SessionParent, "<leader>left,<leader>up"),
    ("model_list", Action::ModelList, "<leader>m"),
    ("model_cycle_recent", Action::ModelCycleRecent, "f2"),
    ("model_cycle_recent_reverse", Action::ModelCycleRecentReverse, "shift+f2"),
    ("variant_cycle", Action::VariantCycle, "ctrl+t"),
    ("agent_list", Action::AgentList, "<leader>a"),
    ("agent_cycle", Action::AgentCycle, "tab"),
    ("agent_cycle_reverse", Action::AgentCycleReverse, "shift+tab"),
    ("theme_list", Action::ThemeList, "<leader>t"),
    ("sidebar_toggle", Action::SidebarToggle, "<leader>b"),
    ("editor_open", Action::EditorOpen, "<leader>e"),
    ("messages_copy", Action::MessagesCopy, "<leader>y"),
    ("messages_undo", Action::MessagesUndo, "<leader>u"),
    ("messages_redo", Action::MessagesRedo, "<leader>r"),
    ("messages_page_up", Action::MessagesPageUp, "pageup"),
    ("messages_page_down", Action::MessagesPageDown, "pagedown"),
];

/// One key with its modifiers, after the leader or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Chord {
    leader: bool,
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl Chord {
    fn matches(&self, key: KeyEvent, after_leader: bool) -> bool {
        self.leader == after_leader && self.code == normal_code(key.code) && self.modifiers == normal_modifiers(key)
    }
}

#[derive(Debug, Clone)]
pub struct Keymap {
    leader: Vec<Chord>,
    bindings: Vec<(Chord, Action)>,
}

impl Default for Keymap {
    fn default() -> Self {
        let mut keymap = Self { leader: parse("ctrl+x").unwrap_or_default(), bindings: Vec::new() };
        for (_, action, binding) in DEFAULTS {
            keymap.bindings.extend(parse(binding).unwrap_or_default().into_iter().map(|chord| (chord, *action)));
        }
        keymap
    }
}

impl Keymap {
    /// The defaults with `keybinds` (tui.json's object) over them; a binding that does not parse is
    /// named in the error and the defaults stay for it.
    pub fn with(keybinds: &Value) -> (Self, Vec<String>) {
        let mut keymap = Self::default();
        let mut problems = Vec::new();
        let Some(keybinds) = keybinds.as_object() else { return (keymap, problems) };
        for (name, binding) in keybinds {
            let Some(text) = binding.as_str() else {
                problems.push(format!("keybinds.{name} is not a string"));
                continue;
            };
            let chords = match parse(text) {
                Ok(chords) => chords,
                Err(reason) => {
                    problems.push(format!("keybinds.{name}: {reason}"));
                    continue;
                }
            };
            if name == "leader" {
                keymap.leader = chords;
            } else if let Some((_, action, _)) = DEFAULTS.iter().find(|(known, _, _)| known == name) {
                keymap.bindings.retain(|(_, bound)| bound != action);
                keymap.bindings.extend(chords.into_iter().map(|chord| (chord, *action)));
            }
        }
        (keymap, problems)
    }

    pub fn is_leader(&self, key: KeyEvent) -> bool {
        self.leader.iter().any(|chord| chord.matches(key, false))
    }

    /// The keys bound to `action` as a person reads them (`ctrl+x n`), alternatives joined by ` / `;
    /// empty when it is unbound.
    pub fn describe(&self, action: Action) -> String {
        let leader = self.leader.first().map(|chord| name(*chord)).unwrap_or_default();
        let keys: Vec<String> = self
            .bindings
            .iter()
            .filter(|(_, bound)| *bound == action)
            .map(|(chord, _)| if chord.leader { format!("{leader} {}", name(*chord)) } else { name(*chord) })
            .collect();
        keys.join(" / ")
    }

    pub fn action(&self, key: KeyEvent, after_leader: bool) -> Option<Action> {
        self.bindings.iter().find(|(chord, _)| chord.matches(key, after_leader)).map(|(_, action)| *action)
    }
}

/// How a chord is written in tui.json (`ctrl+x`, `shift+tab`, `pageup`), without the leader.
fn name(chord: Chord) -> String {
    let mut out = String::new();
    for (flag, word) in [
        (KeyModifiers::CONTROL, "ctrl+"),
        (KeyModifiers::ALT, "alt+"),
        (KeyModifiers::SUPER, "super+"),
        (KeyModifiers::SHIFT, "shift+"),
    ] {
        if chord.modifiers.contains(flag) {
            out.push_str(word);
        }
    }
    let key = match chord.code {
        KeyCode::BackTab => "shift+tab".to_owned(),
        KeyCode::Tab => "tab".to_owned(),
        KeyCode::Enter => "enter".to_owned(),
        KeyCode::Esc => "esc".to_owned(),
        KeyCode::Char(' ') => "space".to_owned(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Up => "↑".to_owned(),
        KeyCode::Down => "↓".to_owned(),
        KeyCode::Left => "←".to_owned(),
        KeyCode::Right => "→".to_owned(),
        KeyCode::PageUp => "pageup".to_owned(),
        KeyCode::PageDown => "pagedown".to_owned(),
        KeyCode::F(n) => format!("f{n}"),
        other => format!("{other:?}").to_lowercase(),
    };
    out.push_str(&key);
    out
}

/// `"ctrl+x,<leader>n"` as chords; `"none"` is no chord.
fn parse(binding: &str) -> Result<Vec<Chord>, String> {
    if binding.trim() == "none" {
        return Ok(Vec::new());
    }
    binding.split(',').map(|one| chord(one.trim())).collect()
}

fn chord(text: &str) -> Result<Chord, String> {
    let (leader, rest) = match text.strip_prefix("<leader>") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let mut modifiers = KeyModifiers::NONE;
    let parts: Vec<&str> = rest.split('+').collect();
    let (name, held) = parts.split_last().ok_or_else(|| format!("`{text}` names no key"))?;
    for modifier in held {
        modifiers |= match modifier.to_ascii_lowercase().as_str() {
            "ctrl" | "control" => KeyModifiers::CONTROL,
            "alt" | "meta" | "option" => KeyModifiers::ALT,
            "shift" => KeyModifiers::SHIFT,
            "super" | "cmd" => KeyModifiers::SUPER,
            other => return Err(format!("`{other}` in `{text}` is not a modifier")),
        };
    }
    let code = match name.to_ascii_lowercase().as_str() {
        "tab" if modifiers.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
        "tab" => KeyCode::Tab,
        "enter" | "return" => KeyCode::Enter,
        "escape" | "esc" => KeyCode::Esc,
        "space" => KeyCode::Char(' '),
        "backspace" => KeyCode::Backspace,
        "delete" => KeyCode::Delete,
        "up" => KeyCode::Up,
        "down" => KeyCode::Down,
        "left" => KeyCode::Left,
        "right" => KeyCode::Right,
        "home" => KeyCode::Home,
        "end" => KeyCode::End,
        "pageup" => KeyCode::PageUp,
        "pagedown" => KeyCode::PageDown,
        key if key.len() > 1 && key.starts_with('f') && key[1..].parse::<u8>().is_ok_and(|n| (1..=24).contains(&n)) => {
            KeyCode::F(key[1..].parse().unwrap_or(1))
        }
        key if key.chars().count() == 1 => KeyCode::Char(key.chars().next().unwrap_or(' ')),
        other => return Err(format!("`{other}` in `{text}` is not a key")),
    };
    let modifiers = if is_shift_implied(code) { modifiers - KeyModifiers::SHIFT } else { modifiers };
    Ok(Chord { leader, code: normal_code(code), modifiers })
}

/// Shift is part of the key for Shift+Tab and for letters (a terminal sends `A`, not shift+a).
fn is_shift_implied(code: KeyCode) -> bool {
    matches!(code, KeyCode::BackTab | KeyCode::Char(_))
}

fn normal_code(code: KeyCode) -> KeyCode {
    match code {
        KeyCode::Char(c) => KeyCode::Char(c.to_ascii_lowercase()),
        other => other,
    }
}

fn normal_modifiers(key: KeyEvent) -> KeyModifiers {
    let mut modifiers =
        key.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT | KeyModifiers::SUPER);
    if is_shift_implied(key.code) {
        modifiers -= KeyModifiers::SHIFT;
    }
    modifiers
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn opencodes_defaults() {
        let keys = Keymap::default();
        assert!(keys.is_leader(press(KeyCode::Char('x'), KeyModifiers::CONTROL)));
        assert_eq!(keys.action(press(KeyCode::Char('n'), KeyModifiers::NONE), true), Some(Action::SessionNew));
        assert_eq!(keys.action(press(KeyCode::Char('n'), KeyModifiers::NONE), false), None);
        assert_eq!(keys.action(press(KeyCode::BackTab, KeyModifiers::SHIFT), false), Some(Action::AgentCycleReverse));
        assert_eq!(keys.action(press(KeyCode::Char('p'), KeyModifiers::CONTROL), false), Some(Action::CommandList));
        assert_eq!(keys.action(press(KeyCode::Right, KeyModifiers::NONE), true), Some(Action::SessionChildCycle));
        assert_eq!(keys.describe(Action::AppExit), "ctrl+c / ctrl+d / ctrl+x q");
        assert_eq!(keys.describe(Action::AgentCycleReverse), "shift+tab");
        let (rebound, _) = Keymap::with(&serde_json::json!({"leader": "ctrl+g", "messages_copy": "none"}));
        assert_eq!(rebound.describe(Action::SessionNew), "ctrl+g n");
        assert_eq!(rebound.describe(Action::MessagesCopy), "");
    }

    #[test]
    fn tui_json_rebinds_unbinds_and_names_what_it_cannot_read() {
        let (keys, problems) = Keymap::with(&json!({
            "leader": "ctrl+g", "session_new": "<leader>c,f3", "messages_copy": "none",
            "session_share": "<leader>s", "model_list": "hyper+m", "agent_list": 3
        }));
        assert!(keys.is_leader(press(KeyCode::Char('g'), KeyModifiers::CONTROL)));
        assert!(!keys.is_leader(press(KeyCode::Char('x'), KeyModifiers::CONTROL)));
        assert_eq!(keys.action(press(KeyCode::F(3), KeyModifiers::NONE), false), Some(Action::SessionNew));
        // The first binding of a key wins: compact keeps <leader>c until it is rebound itself.
        assert_eq!(keys.action(press(KeyCode::Char('c'), KeyModifiers::NONE), true), Some(Action::SessionCompact));
        assert_eq!(keys.action(press(KeyCode::Char('y'), KeyModifiers::NONE), true), None, "unbound");
        assert_eq!(
            problems,
            ["keybinds.model_list: `hyper` in `hyper+m` is not a modifier", "keybinds.agent_list is not a string"]
        );
        assert_eq!(keys.action(press(KeyCode::Char('m'), KeyModifiers::NONE), true), Some(Action::ModelList));
    }
}
