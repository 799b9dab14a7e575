//! Runs the built binary in a temporary home with a clean environment.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home/.config/opencode")).unwrap();
        std::fs::create_dir_all(dir.path().join("work")).unwrap();
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn global_config(&self) -> PathBuf {
        self.path().join("home/.config/opencode/opencode.json")
    }

    pub fn auth_file(&self) -> PathBuf {
        self.path().join("home/.local/share/opencode/auth.json")
    }

    pub fn work(&self) -> PathBuf {
        self.path().join("work")
    }

    /// `opencode <args>` with only HOME set (and model fetching off).
    pub fn opencode(&self, args: &[&str]) -> Command {
        let mut command = Command::cargo_bin("opencode").unwrap();
        command
            .env_clear()
            .env("HOME", self.path().join("home"))
            .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
            .current_dir(self.work())
            .args(args);
        command
    }
}

pub fn stdout(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}
