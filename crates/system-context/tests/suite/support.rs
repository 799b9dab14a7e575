//! Test sources whose value, availability and load delay the test controls, and temp dirs.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use opencode_system_context::ContextSource;
use opencode_system_context::Loaded;
use opencode_system_context::SourceKey;
use opencode_system_context::SystemContext;

/// A shared handle on what a [`TestSource`] loads next.
#[derive(Clone)]
pub struct Knob(Arc<Mutex<Loaded<String>>>);

impl Knob {
    pub fn new(value: &str) -> Self {
        Self(Arc::new(Mutex::new(Loaded::Value(value.to_owned()))))
    }

    pub fn set(&self, value: &str) {
        *self.0.lock().unwrap() = Loaded::Value(value.to_owned());
    }

    pub fn unavailable(&self) {
        *self.0.lock().unwrap() = Loaded::Unavailable;
    }
}

/// A string-valued source: baseline `<key>: <v>`, update `<key> is now: <v>`, removal `<key> is gone`
/// when removable. With `max_delay_us`, every load sleeps a random time first.
pub struct TestSource {
    pub key: SourceKey,
    pub knob: Knob,
    pub removable: bool,
    pub max_delay_us: u64,
}

impl TestSource {
    pub fn context(key: &str, knob: &Knob) -> SystemContext {
        Self::build(key, knob, false, 0)
    }

    pub fn removable(key: &str, knob: &Knob) -> SystemContext {
        Self::build(key, knob, true, 0)
    }

    pub fn build(key: &str, knob: &Knob, removable: bool, max_delay_us: u64) -> SystemContext {
        SystemContext::make(Self { key: SourceKey::new(key).unwrap(), knob: knob.clone(), removable, max_delay_us })
    }
}

impl ContextSource for TestSource {
    type Value = String;

    fn key(&self) -> &SourceKey {
        &self.key
    }

    async fn load(&self) -> Loaded<String> {
        if self.max_delay_us > 0 {
            tokio::time::sleep(Duration::from_micros(fastrand::u64(0..self.max_delay_us))).await;
        }
        self.knob.0.lock().unwrap().clone()
    }

    fn baseline(&self, current: &String) -> String {
        format!("{}: {current}", self.key)
    }

    fn update(&self, _previous: &String, current: &String) -> String {
        format!("{} is now: {current}", self.key)
    }

    fn removed(&self, _previous: &String) -> Option<String> {
        self.removable.then(|| format!("{} is gone", self.key))
    }
}

pub fn key(text: &str) -> SourceKey {
    SourceKey::new(text).unwrap()
}

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "opencode-system-context-{}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            fastrand::u64(..)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).unwrap();
        Self(std::fs::canonicalize(path).unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `content` at `relative`, creating parent directories.
    pub fn write(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn mkdir(&self, relative: &str) -> PathBuf {
        let path = self.0.join(relative);
        std::fs::create_dir_all(&path).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
