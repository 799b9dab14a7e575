//! Frames of the TUI rendered on ratatui's `TestBackend` from states fed through `App::update`, at a
//! large and a small size, compared with the snapshot files in `tests/snapshots/`
//! (`OPENCODE_UPDATE_SNAPSHOTS=1` rewrites them after a deliberate change; review the diff).

mod frames;
