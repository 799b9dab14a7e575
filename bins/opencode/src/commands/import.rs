//! `opencode import --from-opencode`: OpenCode's own history copied into this program's store, with a
//! progress bar and a summary on stderr; and the one-time hint that it can be done.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use opencode_session_store::{IMPORTED_META, ImportCounts, ImportProgress, ImportReport, OpenCodeData};

use crate::context::Context;
use crate::error::CliError;

/// The `store_meta` key set once the hint was shown.
const HINT_META: &str = "opencode_import_hint_shown";

pub fn from_opencode(context: &Context) -> Result<(), CliError> {
    let data = OpenCodeData::open(&context.paths.data)?;
    let store = context.store()?;
    let mut bar = ProgressBar::new(std::io::stderr().is_terminal());
    let report = data.import_into(&store, &mut |progress| bar.draw(progress));
    bar.clear();
    let report = report?;
    for row in &report.skipped {
        eprintln!("skipped {} {}: {}", row.kind, row.id, row.reason);
    }
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    eprintln!("{}", summary(&report, &data.locations().join(" and ")));
    Ok(())
}

/// Once per store, when OpenCode's database is beside ours and nothing was imported from it yet: one
/// line on stderr saying how to bring its sessions over. Any failure here is left to the command
/// itself, which opens the store next and reports it properly.
pub fn hint_once(context: &Context) {
    if !OpenCodeData::exists_in(&context.paths.data) {
        return;
    }
    let Ok(store) = context.store() else { return };
    let due = store.read(|r| Ok(r.meta(IMPORTED_META)?.is_none() && r.meta(HINT_META)?.is_none()));
    if !due.unwrap_or(false) {
        return;
    }
    if store.write(|tx| tx.set_meta(HINT_META, tx.now())).is_ok() {
        eprintln!(
            "hint: OpenCode's sessions are in {}; `opencode import --from-opencode` copies them here \
             (OpenCode keeps its own, untouched)",
            context.paths.data.join(opencode_session_store::OPENCODE_DATABASE).display()
        );
    }
}

/// `imported from X: 3 sessions, 41 messages, 120 parts (already here: …); 1 row skipped`
fn summary(report: &ImportReport, from: &str) -> String {
    let counts = |c: &ImportCounts, name: &str| format!("{} {name}", c.added);
    let present = |c: &ImportCounts, name: &str| format!("{} {name}", c.present);
    let kinds = [(&report.sessions, "sessions"), (&report.messages, "messages"), (&report.parts, "parts")];
    let added: Vec<String> = kinds.iter().map(|(c, n)| counts(c, n)).collect();
    let here: Vec<String> = kinds.iter().map(|(c, n)| present(c, n)).collect();
    let skipped = match report.skipped.len() {
        0 => String::new(),
        1 => "; 1 row skipped (listed above)".to_owned(),
        n => format!("; {n} rows skipped (listed above)"),
    };
    format!("imported from {from}: {} (already here: {}){skipped}", added.join(", "), here.join(", "))
}

/// A one-line bar on a terminal's stderr, redrawn at most ten times a second; nothing elsewhere.
struct ProgressBar {
    enabled: bool,
    drawn: Option<Instant>,
}

impl ProgressBar {
    fn new(enabled: bool) -> Self {
        Self { enabled, drawn: None }
    }

    fn draw(&mut self, progress: ImportProgress) {
        let finished = progress.sessions_done == progress.sessions_total;
        if !self.enabled || (!finished && self.drawn.is_some_and(|t| t.elapsed() < Duration::from_millis(100))) {
            return;
        }
        self.drawn = Some(Instant::now());
        const WIDTH: usize = 30;
        let filled = (progress.sessions_done * WIDTH).checked_div(progress.sessions_total).unwrap_or(WIDTH);
        let bar = format!("{}{}", "#".repeat(filled), "-".repeat(WIDTH - filled.min(WIDTH)));
        let mut err = std::io::stderr().lock();
        // The bar is decoration: a terminal that cannot take it loses nothing.
        write!(
            err,
            "\r\x1b[2Kimporting [{bar}] {}/{} sessions, {} messages",
            progress.sessions_done, progress.sessions_total, progress.messages_done
        )
        .and_then(|()| err.flush())
        .ok();
    }

    fn clear(&self) {
        if self.enabled && self.drawn.is_some() {
            eprint!("\r\x1b[2K");
        }
    }
}
