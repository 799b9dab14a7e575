//! Location authority: every path a tool touches resolves inside its Location (the project
//! directory), inside managed tool-output storage, or is external and needs the user's
//! `external_directory` permission.
//!
//! Resolution is lexical first (`..` cannot climb out unnoticed) and then physical (symlinks are
//! resolved, so a link pointing outside is external). Because a symlink can be swapped in after that
//! check, files are opened without following a final symlink and the opened handle's real path is
//! checked again; writes go to a temporary file created relative to a verified directory handle and
//! are renamed into place, so a swapped link is replaced rather than followed, and no half-written
//! file is ever visible.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Component;
use std::path::Path;
use std::path::PathBuf;

use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

use crate::error::ToolError;
use crate::pending::PermissionAsk;
use crate::tool::ToolContext;

/// The directory tools act in, and managed tool-output storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    root: PathBuf,
    tool_output: PathBuf,
}

/// Where a resolved path lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Inside the Location.
    Inside,
    /// Inside managed tool-output storage: readable and searchable without asking.
    ToolOutput,
    /// Anywhere else: needs `external_directory` permission.
    External,
}

/// A path after resolution: absolute, with symlinks of its existing part resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub path: PathBuf,
    pub scope: Scope,
}

impl Location {
    /// A Location rooted at `root` (which must exist), with managed output in `tool_output`.
    pub fn new(root: impl AsRef<Path>, tool_output: impl AsRef<Path>) -> std::io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        let tool_output = physical(&lexical(Path::new("/"), tool_output.as_ref()));
        Ok(Self { root, tool_output })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn tool_output_dir(&self) -> &Path {
        &self.tool_output
    }

    /// Resolves a path given by the model (relative to the root, or absolute).
    pub fn resolve(&self, input: &str) -> Result<ResolvedPath, ToolError> {
        if input.trim().is_empty() {
            return Err(ToolError::model("The path is empty; give a path relative to the project directory"));
        }
        if input.contains('\0') {
            return Err(ToolError::model("The path contains a NUL byte"));
        }
        let path = physical(&lexical(&self.root, Path::new(input)));
        let scope = self.scope_of(&path);
        Ok(ResolvedPath { path, scope })
    }

    /// The path as the model should see it: relative inside the Location, absolute elsewhere.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    fn scope_of(&self, path: &Path) -> Scope {
        if path.starts_with(&self.root) {
            Scope::Inside
        } else if path.starts_with(&self.tool_output) {
            Scope::ToolOutput
        } else {
            Scope::External
        }
    }

    /// Resolves and authorizes: external paths need `external_directory` permission (asked for the
    /// containing directory, as OpenCode does).
    pub async fn authorize(&self, ctx: &ToolContext, input: &str, is_dir: bool) -> Result<ResolvedPath, ToolError> {
        let resolved = self.resolve(input)?;
        if resolved.scope == Scope::External {
            let dir = if is_dir { resolved.path.as_path() } else { resolved.path.parent().unwrap_or(&resolved.path) };
            let pattern = format!("{}/*", dir.display().to_string().trim_end_matches('/'));
            let mut metadata = serde_json::Map::new();
            metadata.insert("filepath".into(), resolved.path.display().to_string().into());
            metadata.insert("parentDir".into(), dir.display().to_string().into());
            ctx.ask(PermissionAsk {
                permission: "external_directory".into(),
                patterns: vec![pattern.clone()],
                always: vec![pattern],
                metadata,
            })
            .await?;
        }
        Ok(resolved)
    }

    /// Opens an authorized path for reading, refusing a symlink swapped in since resolution.
    pub fn open_read(&self, resolved: &ResolvedPath) -> Result<File, ToolError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(&resolved.path)
            .map_err(|err| self.open_error(resolved, &err, "read"))?;
        self.verify(resolved, &file)?;
        Ok(file)
    }

    /// Writes a whole file atomically (temporary file + rename) at an authorized path, creating
    /// missing parent directories inside the Location.
    pub fn write_atomic(&self, resolved: &ResolvedPath, contents: &[u8]) -> Result<(), ToolError> {
        let Some((parent, name)) = resolved.path.parent().zip(resolved.path.file_name()) else {
            return Err(ToolError::model(format!("Cannot write {}: not a file path", resolved.path.display())));
        };
        if resolved.scope == Scope::Inside {
            std::fs::create_dir_all(parent).map_err(|err| crate::error::io_model_error("create", parent, &err))?;
        }
        let mode = std::fs::symlink_metadata(&resolved.path)
            .ok()
            .filter(|meta| meta.is_file())
            .map(|meta| meta.permissions().mode());
        let dir = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_DIRECTORY).open(parent).map_err(
            |err| self.open_error(&ResolvedPath { path: parent.to_owned(), scope: resolved.scope }, &err, "write into"),
        )?;
        self.verify(&ResolvedPath { path: parent.to_owned(), scope: resolved.scope }, &dir)?;
        let temp = format!(".{}.{}.tmp", name.to_string_lossy(), crate::id::ascending(""));
        let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let mode_bits = Mode::from_bits_truncate(mode.unwrap_or(0o644) & 0o7777);
        let fd = nix::fcntl::openat(&dir, temp.as_str(), flags, mode_bits)
            .map_err(|err| ToolError::model(format!("Cannot write {}: {err}", resolved.path.display())))?;
        let mut file = File::from(fd);
        let written = file.write_all(contents).and_then(|()| file.sync_all());
        let renamed = written
            .map_err(|err| err.to_string())
            .and_then(|()| nix::fcntl::renameat(&dir, temp.as_str(), &dir, name).map_err(|err| err.to_string()));
        if let Err(err) = renamed {
            if let Err(cleanup) = nix::unistd::unlinkat(&dir, temp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir) {
                tracing::warn!(%cleanup, "cannot remove a temporary file");
            }
            return Err(ToolError::model(format!("Cannot write {}: {err}", resolved.path.display())));
        }
        Ok(())
    }

    /// Checks the real path of an opened handle against the scope it was authorized for.
    fn verify(&self, resolved: &ResolvedPath, file: &File) -> Result<(), ToolError> {
        let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) else {
            // No procfs (not Linux): re-resolve the path instead; a narrower window, still checked.
            return match self.scope_of(&physical(&resolved.path)) == resolved.scope {
                true => Ok(()),
                false => Err(escaped(&resolved.path)),
            };
        };
        let allowed = match resolved.scope {
            Scope::Inside => real.starts_with(&self.root),
            Scope::ToolOutput => real.starts_with(&self.tool_output),
            Scope::External => real == resolved.path,
        };
        if allowed { Ok(()) } else { Err(escaped(&resolved.path)) }
    }

    fn open_error(&self, resolved: &ResolvedPath, err: &std::io::Error, what: &str) -> ToolError {
        if err.raw_os_error() == Some(nix::libc::ELOOP) {
            return escaped(&resolved.path);
        }
        crate::error::io_model_error(what, &resolved.path, err)
    }
}

fn escaped(path: &Path) -> ToolError {
    ToolError::Permission {
        message: format!(
            "Access to {} was denied: it changed into a link leading outside the allowed directories",
            path.display()
        ),
        kind: crate::error::PermissionFailure::Denied,
    }
}

/// Joins and normalises `.`/`..` without touching the filesystem; `..` never climbs above `/`.
pub fn lexical(base: &Path, input: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    let joined = if input.is_absolute() { input.to_path_buf() } else { base.join(input) };
    for component in joined.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(part) => out.push(part),
        }
    }
    out
}

/// Resolves symlinks in the longest existing prefix and appends the rest unchanged.
fn physical(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return out;
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.parent().map(Path::to_path_buf)) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalises_dots() {
        assert_eq!(lexical(Path::new("/p"), Path::new("a/./b/../c")), PathBuf::from("/p/a/c"));
        assert_eq!(lexical(Path::new("/p"), Path::new("../x")), PathBuf::from("/x"));
        assert_eq!(lexical(Path::new("/p"), Path::new("../../../..")), PathBuf::from("/"));
        assert_eq!(lexical(Path::new("/p"), Path::new("/etc/passwd")), PathBuf::from("/etc/passwd"));
    }
}
