//! The terminal UI: a client of the HTTP API (through `opencode-client`), so the same code drives a
//! server started in-process and a remote one, ours or OpenCode's.
//!
//! How it is built (docs/ARCHITECTURE.md has the map):
//! - [`app`]: the state and its update function. Keys, server events and call results go in as
//!   [`app::Msg`]; calls to make come out as [`app::Command`]s. No I/O, so it is tested directly.
//! - `view`: draws a frame from the state (transcript, permission dialog, prompt box, status line,
//!   overlays); `transcript` renders and caches each message's wrapped lines; `markdown` (with
//!   `highlight` for fenced code), `wrap`.
//! - `runner`: the terminal loop. It draws only when something changed, at most every 16 ms, and
//!   sleeps otherwise.
//!
//! A new dialog is an [`app::Overlay`] variant (its keys in `App::key`, its drawing in `view`); a new
//! slash command is one arm in `App::slash`; a new server call is a [`app::Command`] and its arm in
//! `runner::run_command`.

pub mod app;
mod connect;
mod highlight;
mod input;
pub mod keys;
mod markdown;
mod recent;
mod runner;
mod theme;
mod transcript;
pub mod view;
mod wrap;

pub use runner::TuiError;
pub use runner::TuiOptions;
pub use runner::run;
pub use theme::Theme;
pub use theme::Themes;
pub use theme::dark_background;
pub use theme::theme_dirs;
