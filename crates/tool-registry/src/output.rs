//! Bounding model-visible tool output, and the Managed Tool Output Files that keep what was cut.
//!
//! One settlement gets one aggregate limit: at most `max_lines` lines and `max_bytes` UTF-8 bytes,
//! whichever is reached first. Output within the limit passes unchanged. Larger output keeps its
//! beginning and its end around a marker naming the file that holds the complete text. Bytes are
//! streamed: a [`BoundedWriter`] holds at most about two limits in memory however much is written,
//! and spills everything to `<data>/tool-output/tool_<unique>` once the limit is passed. If that
//! file cannot be written the result is still a success, with an explicitly lossy preview and a
//! diagnostic for operators.

use std::collections::VecDeque;
use std::fs::File;
use std::io::BufWriter;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use std::time::SystemTime;

use opencode_config::ToolOutputConfig;

/// How long Managed Tool Output Files are kept (OpenCode: 7 days).
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// The prefix of every Managed Tool Output File name.
pub const FILE_PREFIX: &str = "tool_";

/// The smallest limits honoured, so that a preview always has room for its marker.
const MIN_LINES: usize = 8;
const MIN_BYTES: usize = 1024;

/// The flat directory of Managed Tool Output Files and the limits applied to every settlement.
#[derive(Debug, Clone)]
pub struct OutputStore {
    dir: PathBuf,
    limits: ToolOutputConfig,
    retention: Duration,
}

/// Model-visible text after bounding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bounded {
    /// The text the model sees: unchanged when within the limit, else head + marker + tail.
    pub text: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// The Managed Tool Output File holding the complete text, when it was cut and could be saved.
    pub managed_path: Option<PathBuf>,
    /// Why the complete text could not be saved (the preview is then explicitly lossy).
    pub diagnostic: Option<String>,
    /// Size of the complete output.
    pub total_bytes: u64,
    pub total_lines: u64,
}

impl OutputStore {
    /// A store writing into `dir` (normally [`opencode_config::Paths::tool_output_dir`]).
    pub fn new(dir: impl Into<PathBuf>, limits: ToolOutputConfig) -> Self {
        let limits =
            ToolOutputConfig { max_lines: limits.max_lines.max(MIN_LINES), max_bytes: limits.max_bytes.max(MIN_BYTES) };
        Self { dir: dir.into(), limits, retention: RETENTION }
    }

    /// Replaces the retention period (tests, operators).
    pub fn with_retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn limits(&self) -> ToolOutputConfig {
        self.limits
    }

    /// A streaming writer bounded by this store's limits.
    pub fn writer(&self) -> BoundedWriter {
        self.writer_with(self.limits)
    }

    /// A streaming writer with tighter limits (a tool shaping its own output below the final limit).
    pub fn writer_with(&self, limits: ToolOutputConfig) -> BoundedWriter {
        BoundedWriter::new(self.dir.clone(), limits)
    }

    /// Bounds one complete text.
    pub fn bound(&self, text: &str) -> Bounded {
        self.bound_bytes(text.as_bytes())
    }

    /// Bounds raw bytes (invalid UTF-8 is shown lossily; the file keeps the exact bytes).
    pub fn bound_bytes(&self, bytes: &[u8]) -> Bounded {
        let mut writer = self.writer();
        for chunk in bytes.chunks(1 << 20) {
            writer.push(chunk);
        }
        writer.finish()
    }

    /// Removes Managed Tool Output Files older than the retention period; returns how many.
    pub fn cleanup(&self, now: SystemTime) -> std::io::Result<usize> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(err) => return Err(err),
        };
        let mut removed = 0;
        for entry in entries {
            let entry = entry?;
            if !entry.file_name().to_string_lossy().starts_with(FILE_PREFIX) {
                continue;
            }
            let modified = entry.metadata().and_then(|meta| meta.modified())?;
            if now.duration_since(modified).is_ok_and(|age| age > self.retention) {
                std::fs::remove_file(entry.path())?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Runs [`cleanup`](Self::cleanup) now and then every `every` until the runtime shuts down.
    pub fn spawn_cleanup(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let store = self.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(every);
            loop {
                ticker.tick().await;
                let store = store.clone();
                match tokio::task::spawn_blocking(move || store.cleanup(SystemTime::now())).await {
                    Ok(Ok(removed)) => tracing::debug!(removed, "tool output cleanup"),
                    Ok(Err(err)) => tracing::warn!(%err, "tool output cleanup failed"),
                    Err(err) => tracing::warn!(%err, "tool output cleanup task failed"),
                }
            }
        })
    }
}

/// Streams output of any size into a bounded preview plus, when needed, a Managed Tool Output File.
#[derive(Debug)]
pub struct BoundedWriter {
    dir: PathBuf,
    limits: ToolOutputConfig,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
    /// Everything written, until the limit is passed.
    pending: Vec<u8>,
    spill: Option<Spill>,
}

#[derive(Debug)]
struct Spill {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    tail_cap: usize,
    file: Option<(PathBuf, BufWriter<File>)>,
    diagnostic: Option<String>,
}

impl BoundedWriter {
    fn new(dir: PathBuf, limits: ToolOutputConfig) -> Self {
        Self { dir, limits, total_bytes: 0, newlines: 0, last_byte: None, pending: Vec::new(), spill: None }
    }

    /// Appends bytes; never fails (storage failures make the result lossy, not failed).
    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.total_bytes += bytes.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        self.last_byte = bytes.last().copied();
        match &mut self.spill {
            Some(spill) => spill.push(bytes),
            None => {
                self.pending.extend_from_slice(bytes);
                if self.over_limit() {
                    self.start_spill();
                }
            }
        }
    }

    /// Whether the output has passed the limit (it will be truncated).
    pub fn exceeded(&self) -> bool {
        self.spill.is_some()
    }

    /// Bytes written so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Ends the output and returns what the model sees.
    pub fn finish(mut self) -> Bounded {
        if self.spill.is_none() {
            let text = String::from_utf8_lossy(&self.pending).into_owned();
            // Lossy decoding can grow invalid bytes threefold: bound what the model would see.
            if text.len() <= self.limits.max_bytes {
                let total_lines = self.total_lines();
                return Bounded {
                    text,
                    truncated: false,
                    managed_path: None,
                    diagnostic: None,
                    total_bytes: self.total_bytes,
                    total_lines,
                };
            }
            self.start_spill();
        }
        let total_lines = self.total_lines();
        let Some(spill) = self.spill.take() else {
            return Bounded::default();
        };
        spill.finish(self.limits, self.total_bytes, total_lines)
    }

    fn total_lines(&self) -> u64 {
        self.newlines + u64::from(self.last_byte.is_some_and(|byte| byte != b'\n'))
    }

    fn over_limit(&self) -> bool {
        self.total_bytes > self.limits.max_bytes as u64 || self.total_lines() > self.limits.max_lines as u64
    }

    fn start_spill(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let half = self.limits.max_bytes / 2;
        let head = pending[..pending.len().min(half)].to_vec();
        let mut spill = Spill { head, tail: VecDeque::new(), tail_cap: half, file: None, diagnostic: None };
        match create_unique(&self.dir) {
            Ok(file) => spill.file = Some(file),
            Err(err) => spill.fail(format!("cannot create a tool output file in {}: {err}", self.dir.display())),
        }
        spill.push(&pending);
        self.spill = Some(spill);
    }
}

impl Write for BoundedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.push(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Spill {
    fn push(&mut self, bytes: &[u8]) {
        if let Some((_, file)) = &mut self.file
            && let Err(err) = file.write_all(bytes)
        {
            self.fail(format!("cannot write the tool output file: {err}"));
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            self.tail.extend(bytes);
            let excess = self.tail.len().saturating_sub(self.tail_cap);
            self.tail.drain(..excess);
        }
    }

    /// Gives up on the file: remove what was written so no incomplete file is ever named.
    fn fail(&mut self, diagnostic: String) {
        tracing::warn!(%diagnostic, "tool output is kept as a lossy preview");
        if let Some((path, file)) = self.file.take() {
            drop(file);
            if let Err(err) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), %err, "cannot remove an incomplete tool output file");
            }
        }
        self.diagnostic.get_or_insert(diagnostic);
    }

    fn finish(mut self, limits: ToolOutputConfig, total_bytes: u64, total_lines: u64) -> Bounded {
        if let Some((_, file)) = &mut self.file
            && let Err(err) = file.flush()
        {
            self.fail(format!("cannot write the tool output file: {err}"));
        }
        let managed_path = self.file.take().map(|(path, _)| path);
        let marker = marker(managed_path.as_deref(), self.diagnostic.as_deref(), total_bytes, total_lines);
        let bytes_left = limits.max_bytes.saturating_sub(marker.len());
        let lines_left = limits.max_lines.saturating_sub(count_lines(&marker) + 2);
        let head = head_text(&self.head, bytes_left / 2, lines_left / 2);
        let tail_bytes: Vec<u8> = self.tail.into_iter().collect();
        let tail = tail_text(&tail_bytes, bytes_left - head.len(), lines_left - count_lines(&head).min(lines_left));
        Bounded {
            text: format!("{head}{marker}{tail}"),
            truncated: true,
            managed_path,
            diagnostic: self.diagnostic,
            total_bytes,
            total_lines,
        }
    }
}

fn marker(path: Option<&Path>, diagnostic: Option<&str>, total_bytes: u64, total_lines: u64) -> String {
    match (path, diagnostic) {
        (Some(path), _) => format!(
            "\n\n... output truncated ({total_lines} lines, {total_bytes} bytes in total); full output saved to: {} ...\n\
             The tool call succeeded but the output was truncated. Use grep to search the full content or read \
             with offset/limit to view specific sections.\n\n",
            path.display()
        ),
        (None, diagnostic) => format!(
            "\n\n... output truncated ({total_lines} lines, {total_bytes} bytes in total); the full output could \
             not be saved ({}), so this preview is lossy ...\n\n",
            diagnostic.unwrap_or("no storage")
        ),
    }
}

fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The first `max_lines` lines and `max_bytes` bytes, cut on a character boundary.
fn head_text(bytes: &[u8], max_bytes: usize, max_lines: usize) -> String {
    if max_lines == 0 {
        return String::new();
    }
    let mut end = bytes.len().min(max_bytes);
    if let Some(index) = memchr::memchr_iter(b'\n', &bytes[..end]).nth(max_lines - 1) {
        end = index + 1;
    }
    let mut slice = &bytes[..end];
    if let Err(err) = std::str::from_utf8(slice)
        && err.error_len().is_none()
    {
        slice = &slice[..err.valid_up_to()];
    }
    fit_front(String::from_utf8_lossy(slice).into_owned(), max_bytes)
}

/// The last `max_lines` lines and `max_bytes` bytes, starting on a character boundary.
fn tail_text(bytes: &[u8], max_bytes: usize, max_lines: usize) -> String {
    if max_lines == 0 {
        return String::new();
    }
    let mut start = bytes.len().saturating_sub(max_bytes);
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if let Some(index) = memchr::memrchr_iter(b'\n', body).nth(max_lines - 1) {
        start = start.max(index + 1);
    }
    // The tail is cut from a larger stream: a leading partial character belongs to the cut part.
    for _ in 0..3 {
        if start < bytes.len() && (bytes[start] & 0b1100_0000) == 0b1000_0000 {
            start += 1;
        }
    }
    let text = String::from_utf8_lossy(&bytes[start..]).into_owned();
    if text.len() <= max_bytes {
        return text;
    }
    let mut cut = text.len() - max_bytes;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text[cut..].to_owned()
}

fn fit_front(mut text: String, max_bytes: usize) -> String {
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
    }
    text
}

/// Creates `tool_<unique>` with create-new semantics; names ascend with time.
fn create_unique(dir: &Path) -> std::io::Result<(PathBuf, BufWriter<File>)> {
    std::fs::create_dir_all(dir)?;
    let mut last_err = None;
    for _ in 0..8 {
        let path = dir.join(crate::id::ascending(FILE_PREFIX));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, BufWriter::with_capacity(1 << 16, file))),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => last_err = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_err.unwrap_or_else(|| std::io::Error::other("no unique name found")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, lines: usize, bytes: usize) -> OutputStore {
        OutputStore::new(dir, ToolOutputConfig { max_lines: lines, max_bytes: bytes })
    }

    #[test]
    fn small_output_passes_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let bounded = store(dir.path(), 10, 2048).bound("a\nb\n");
        assert_eq!(bounded.text, "a\nb\n");
        assert!(!bounded.truncated);
        assert_eq!(bounded.total_lines, 2);
    }

    #[test]
    fn too_many_lines_keep_head_and_tail_and_spill_everything() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let bounded = store(dir.path(), 20, 4096).bound(&text);
        assert!(bounded.truncated);
        assert!(bounded.text.starts_with("line 1\nline 2\n"), "{}", bounded.text);
        assert!(bounded.text.ends_with("line 99\nline 100\n"));
        assert!(count_lines(&bounded.text) <= 20, "{}", bounded.text);
        let path = bounded.managed_path.unwrap();
        assert!(bounded.text.contains(&path.display().to_string()));
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    }

    #[test]
    fn tail_skips_partial_characters() {
        assert_eq!(tail_text("aé".as_bytes(), 2, 5), "é");
        assert_eq!(tail_text(&"é".as_bytes()[1..], 1, 5), "");
        assert_eq!(tail_text(b"a\xffb", 9, 5), "a\u{fffd}b");
        assert_eq!(head_text("éa".as_bytes(), 1, 5), "");
    }

    #[test]
    fn cleanup_removes_only_expired_managed_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tool_old"), "x").unwrap();
        std::fs::write(dir.path().join("other"), "x").unwrap();
        let store = store(dir.path(), 10, 1024).with_retention(Duration::from_secs(60));
        assert_eq!(store.cleanup(SystemTime::now()).unwrap(), 0);
        let later = SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(store.cleanup(later).unwrap(), 1);
        assert!(dir.path().join("other").exists());
    }
}
