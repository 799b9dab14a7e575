//! `/connect`: pick a provider (typing filters the list), then type its API key (shown masked);
//! the key is stored by the server (`PUT /auth/{provider}`) and its models can be used at once.

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use opencode_client::ProviderEntry;

use crate::app::App;
use crate::app::Command;
use crate::app::Overlay;

impl App {
    /// The providers `/connect` offers for `query` (matching id or name), connected ones last.
    pub fn connectable(&self, query: &str) -> Vec<&ProviderEntry> {
        let query = query.to_lowercase();
        let mut found: Vec<&ProviderEntry> = self
            .providers_to_connect
            .iter()
            .filter(|p| p.id.to_lowercase().contains(&query) || p.name.to_lowercase().contains(&query))
            .collect();
        found.sort_by_key(|provider| provider.connected);
        found
    }

    pub(crate) fn connect_key(&mut self, key: KeyEvent, mut query: String, selected: usize) -> Vec<Command> {
        let found = self.connectable(&query).len();
        let selected = match key.code {
            KeyCode::Up => selected.saturating_sub(1),
            KeyCode::Down => (selected + 1).min(found.saturating_sub(1)),
            KeyCode::Esc => {
                self.overlay = Overlay::None;
                return Vec::new();
            }
            KeyCode::Enter => {
                let chosen = self.connectable(&query).get(selected).map(|p| (p.id.clone(), p.name.clone()));
                self.overlay = match chosen {
                    Some((provider, name)) => Overlay::ApiKey { provider, name, key: String::new() },
                    None => Overlay::None,
                };
                return Vec::new();
            }
            KeyCode::Backspace => {
                query.pop();
                0
            }
            KeyCode::Char(c) => {
                query.push(c);
                0
            }
            _ => selected,
        };
        self.overlay = Overlay::Connect { query, selected };
        Vec::new()
    }

    pub(crate) fn api_key_key(
        &mut self,
        key: KeyEvent,
        provider: String,
        name: String,
        mut typed: String,
    ) -> Vec<Command> {
        match key.code {
            KeyCode::Esc => self.overlay = Overlay::None,
            KeyCode::Enter if !typed.trim().is_empty() => {
                self.overlay = Overlay::None;
                return vec![Command::SetApiKey { provider, name, key: typed.trim().to_owned() }];
            }
            KeyCode::Backspace => {
                typed.pop();
                self.overlay = Overlay::ApiKey { provider, name, key: typed };
            }
            KeyCode::Char(c) => {
                typed.push(c);
                self.overlay = Overlay::ApiKey { provider, name, key: typed };
            }
            _ => self.overlay = Overlay::ApiKey { provider, name, key: typed },
        }
        Vec::new()
    }
}
