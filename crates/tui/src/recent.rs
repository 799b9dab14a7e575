//! Recently used models: the model picker lists them first and F2 / shift+F2 (OpenCode's
//! `model_cycle_recent`) step through them. Kept, most recent first, in the TUI's own state file
//! (`tui-recent-models.json` in the state directory, `~/.local/state/opencode`), so they survive a
//! restart; OpenCode's own `model.json` there is left alone.

use std::path::Path;

use opencode_client::ModelRef;

use crate::app::App;
use crate::app::Command;

/// Models remembered.
pub const RECENT_MODELS: usize = 10;

impl App {
    /// Makes `model` the most recent one; the list to keep.
    pub(crate) fn remember_model(&mut self, model: ModelRef) -> Vec<Command> {
        self.recent_models.retain(|known| *known != model);
        self.recent_models.insert(0, model);
        self.recent_models.truncate(RECENT_MODELS);
        vec![Command::SaveRecentModels(self.recent_models.clone())]
    }

    /// F2 (`forward`) or shift+F2: the next (or previous) recently used model becomes the one
    /// prompted with.
    pub(crate) fn cycle_recent_model(&mut self, forward: bool) -> Vec<Command> {
        let n = self.recent_models.len();
        if n < 2 {
            self.notice = Some("no other recent model (choose one with the model list)".to_owned());
            return Vec::new();
        }
        let current = self.model_choice.as_ref().and_then(|model| self.recent_models.iter().position(|m| m == model));
        let next = match (current, forward) {
            (Some(at), true) => (at + 1) % n,
            (Some(at), false) => (at + n - 1) % n,
            (None, _) => 0,
        };
        let model = self.recent_models[next].clone();
        self.notice = Some(format!("model {}/{}", model.provider_id, model.model_id));
        self.model_choice = Some(model);
        self.variant = None;
        Vec::new()
    }
}

/// The recent models kept in `file` (none when it is absent or unreadable).
pub fn load(file: &Path) -> Vec<ModelRef> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|value| serde_json::from_value(value.get("recent")?.clone()).ok())
        .unwrap_or_default()
}

/// Keeps `models` in `file` (its directory created); a failure is the returned message.
pub fn save(file: &Path, models: &[ModelRef]) -> Result<(), String> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    }
    let text = serde_json::json!({ "recent": models }).to_string();
    std::fs::write(file, text).map_err(|err| format!("cannot write {}: {err}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_models_survive_a_restart_and_a_missing_or_broken_file_is_none() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("state/tui-recent-models.json");
        assert!(load(&file).is_empty());
        let models = vec![ModelRef { provider_id: "mock".into(), model_id: "m".into() }];
        save(&file, &models).expect("saved");
        assert_eq!(load(&file), models);
        std::fs::write(&file, "{not json").expect("written");
        assert!(load(&file).is_empty());
    }
}
