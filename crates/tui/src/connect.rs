//! `/connect`: pick a provider (typing filters the list), then type its API key (shown masked);
//! the key is stored by the server (`PUT /auth/{provider}`) and its models can be used at once.

use crossterm::event::KeyCode;
use crossterm::event::KeyEvent;
use opencode_client::ProviderEntry;

use crate::app::App;
use crate::app::Command;
use crate::app::Overlay;
use crate::app::Pick;
use crate::app::search;

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
        self.overlay = match search(key, &mut query, selected, found) {
            Pick::Chosen(at) => match self.connectable(&query).get(at) {
                Some(provider) => {
                    Overlay::ApiKey { provider: provider.id.clone(), name: provider.name.clone(), key: String::new() }
                }
                None => Overlay::None,
            },
            Pick::Closed => Overlay::None,
            Pick::Moved(selected) => Overlay::Connect { query, selected },
            Pick::Other => Overlay::Connect { query, selected },
        };
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
