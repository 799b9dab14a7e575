//! The step that runs a template's ``!`command` `` substitutions, injected so that expansion stays
//! testable: [`SystemShell`] runs them for real, bounded in time and output.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Runs one shell substitution and returns the text to insert. Never fails: a failure becomes text.
pub trait ShellRunner: Send + Sync {
    fn run(&self, command: &str, directory: &Path) -> String;
}

/// Runs substitutions with `<shell> -c <command>` in the directory: standard output is inserted (and
/// standard error too when the command fails); a command that outlives `timeout` is killed with its
/// process group, and output beyond `max_bytes` is cut with a note.
#[derive(Debug, Clone)]
pub struct SystemShell {
    pub shell: String,
    pub timeout: Duration,
    pub max_bytes: usize,
}

impl Default for SystemShell {
    fn default() -> Self {
        Self { shell: "sh".to_owned(), timeout: Duration::from_secs(30), max_bytes: 50 * 1024 }
    }
}

impl SystemShell {
    /// The configuration's `shell` (else `sh`) with the default bounds.
    pub fn new(shell: Option<&str>) -> Self {
        Self { shell: shell.filter(|s| !s.trim().is_empty()).unwrap_or("sh").to_owned(), ..Self::default() }
    }
}

impl ShellRunner for SystemShell {
    fn run(&self, command: &str, directory: &Path) -> String {
        match self.output(command, directory) {
            Ok(text) => text,
            Err(reason) => format!("Error executing command: {reason}"),
        }
    }
}

impl SystemShell {
    fn output(&self, command: &str, directory: &Path) -> Result<String, String> {
        let mut child = Command::new(&self.shell)
            .arg("-c")
            .arg(command)
            .current_dir(directory)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", self.shell))?;
        let stdout = self.reader(child.stdout.take());
        let stderr = self.reader(child.stderr.take());
        let status = self.wait(&mut child)?;
        // The readers end when the pipes close; a grandchild holding them open is not waited for.
        let grace = Duration::from_secs(1);
        let (out, out_cut) = stdout.recv_timeout(grace).unwrap_or_default();
        let (err, err_cut) = stderr.recv_timeout(grace).unwrap_or_default();
        let mut text = String::from_utf8_lossy(&out).into_owned();
        if !status.success() {
            let err = String::from_utf8_lossy(&err);
            if !err.trim().is_empty() {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&err);
            }
            if text.trim().is_empty() {
                text = format!("Error executing command: {status}");
            }
        }
        if out_cut || (err_cut && !status.success()) {
            text.push_str(&format!("\n(output cut at {} bytes)", self.max_bytes));
        }
        Ok(text)
    }

    /// Waits for the child until the timeout, then kills its process group.
    fn wait(&self, child: &mut Child) -> Result<std::process::ExitStatus, String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) => {
                    kill_group(child);
                    return Err(format!("timed out after {} s", self.timeout.as_secs_f32()));
                }
                Err(err) => return Err(err.to_string()),
            }
        }
    }

    /// Reads a pipe on a thread, keeping at most `max_bytes` (the rest is drained so the child never
    /// blocks on a full pipe); sends `(bytes, cut)`.
    fn reader(&self, pipe: Option<impl Read + Send + 'static>) -> mpsc::Receiver<(Vec<u8>, bool)> {
        let (send, receive) = mpsc::channel();
        let max = self.max_bytes;
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut cut = false;
            if let Some(mut pipe) = pipe {
                let mut buffer = [0u8; 8192];
                while let Ok(n) = pipe.read(&mut buffer) {
                    if n == 0 {
                        break;
                    }
                    let room = max.saturating_sub(kept.len());
                    kept.extend_from_slice(&buffer[..n.min(room)]);
                    cut |= n > room;
                }
            }
            let _ = send.send((kept, cut));
        });
        receive
    }
}

/// Kills the child's whole process group (it leads its own group), then reaps it.
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let killed = Command::new("kill")
        .args(["-KILL", "--", &group])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !killed {
        let _ = child.kill();
    }
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_inserted_and_failures_become_text() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker"), "").unwrap();
        let shell = SystemShell::default();
        assert_eq!(shell.run("ls; printf 'x'", dir.path()), "marker\nx");
        assert_eq!(shell.run("echo out; echo bad >&2; exit 3", dir.path()), "out\nbad\n");
        assert_eq!(shell.run("exit 4", dir.path()), "Error executing command: exit status: 4");
        let missing = SystemShell::new(Some("/nonexistent/shell")).run("true", dir.path());
        assert!(missing.starts_with("Error executing command: cannot start /nonexistent/shell"), "{missing}");
    }

    #[test]
    fn output_and_time_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let shell = SystemShell { max_bytes: 10, ..SystemShell::default() };
        assert_eq!(shell.run("yes | head -c 100000", dir.path()), "y\ny\ny\ny\ny\n\n(output cut at 10 bytes)");
        let shell = SystemShell { timeout: Duration::from_millis(100), ..SystemShell::default() };
        assert_eq!(shell.run("sleep 30 & sleep 30", dir.path()), "Error executing command: timed out after 0.1 s");
    }
}
