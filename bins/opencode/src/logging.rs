//! The log file of a command whose standard streams belong to someone else (`opencode acp`: stdout
//! carries protocol frames, and an editor shows stderr only as a raw agent log). One file per start,
//! `<data>/log/<command>-<time>.log`, as OpenCode keeps them; the newest ten of a command are kept.
//! `OPENCODE_LOG_LEVEL` (error, warn, info, debug, trace; default info) sets how much is written.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Mutex;

use opencode_config::Env;
use opencode_config::Paths;

/// Log files of one command kept besides the new one.
const KEPT: usize = 9;

/// Sends the process's diagnostics to a new log file for `command`; its path, or `None` (the
/// reason on stderr) when the file cannot be created: the command runs without one.
pub fn to_file(paths: &Paths, env: &Env, command: &str) -> Option<PathBuf> {
    let dir = paths.data.join("log");
    let created = std::fs::create_dir_all(&dir).and_then(|()| {
        prune(&dir, command);
        let stamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H%M%S");
        let path = dir.join(format!("{command}-{stamp}-{}.log", std::process::id()));
        std::fs::File::create(&path).map(|file| (path, file))
    });
    let (path, file) = match created {
        Ok(created) => created,
        Err(err) => {
            eprintln!("warning: no log file in {}: {err}", dir.display());
            return None;
        }
    };
    let subscriber =
        tracing_subscriber::fmt().with_writer(Mutex::new(file)).with_ansi(false).with_max_level(level(env)).finish();
    tracing::subscriber::set_global_default(subscriber).ok()?;
    Some(path)
}

fn level(env: &Env) -> tracing::Level {
    env.get("OPENCODE_LOG_LEVEL").and_then(|level| level.parse().ok()).unwrap_or(tracing::Level::INFO)
}

/// Removes the oldest log files of `command` beyond the last [`KEPT`].
fn prune(dir: &Path, command: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let prefix = format!("{command}-");
    let mut logs: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(&prefix)))
        .collect();
    // Names carry the start time, so they sort oldest first.
    logs.sort();
    let excess = logs.len().saturating_sub(KEPT);
    for old in logs.into_iter().take(excess) {
        let _gone = std::fs::remove_file(old);
    }
}
