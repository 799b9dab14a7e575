//! File routes of an instance: directory listing, file content, bounded fuzzy file search and git
//! status. Every path is resolved inside the instance directory; escaping it is a 400.

use std::collections::VecDeque;
use std::path::Component;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;

use axum::Json;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

use super::Op;
use crate::error::ApiError;
use crate::extract::Dir;
use crate::extract::Q;
use crate::instance::Instance;
use crate::state::blocking;

pub(super) fn ops() -> Vec<Op> {
    vec![
        Op::get("/file", "file.list", "Entries of a directory of the instance", list_route)
            .query(&["path"])
            .returns::<Vec<FileNode>>(),
        Op::get("/file/content", "file.read", "A file's content (text, or base64 for binary files)", content_route)
            .query(&["path"])
            .returns::<FileContent>(),
        Op::get("/file/status", "file.status", "Files changed in the git worktree", status_route)
            .returns::<Vec<FileStatus>>(),
        Op::get("/find/file", "find.files", "Fuzzy file-name search (bounded)", find_route)
            .query(&["query", "dirs", "type", "limit"])
            .returns::<Vec<String>>(),
    ]
}

/// `FileNode`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct FileNode {
    name: String,
    path: String,
    absolute: String,
    #[serde(rename = "type")]
    kind: &'static str,
    ignored: bool,
}

/// `FileContent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileContent {
    #[serde(rename = "type")]
    kind: &'static str,
    content: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
}

/// `File` of `/file/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub(crate) struct FileStatus {
    path: String,
    added: u64,
    removed: u64,
    status: &'static str,
}

#[derive(Debug, Deserialize)]
pub(crate) struct PathQuery {
    #[serde(default)]
    path: String,
}

impl PathQuery {
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct FindQuery {
    query: String,
    #[serde(default)]
    dirs: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// Files larger than this are refused by `/file/content`.
const MAX_CONTENT: u64 = 10 * 1024 * 1024;
/// Entries visited by one `/find/file` search at most.
const MAX_VISITED: usize = 50_000;
/// Directories `/find/file` never descends into (build output and dependencies).
const SKIPPED: &[&str] = &[".git", "node_modules", "target", "dist", "build", ".venv", "__pycache__"];

async fn list_route(Dir(i): Dir, Q(q): Q<PathQuery>) -> Result<Json<Vec<FileNode>>, ApiError> {
    blocking(move || list(&i, &q.path).map(Json)).await
}

async fn content_route(Dir(i): Dir, Q(q): Q<PathQuery>) -> Result<Json<FileContent>, ApiError> {
    blocking(move || content(&i, &q.path).map(Json)).await
}

async fn status_route(Dir(i): Dir) -> Result<Json<Vec<FileStatus>>, ApiError> {
    blocking(move || Ok(Json(git_status(&i.directory)))).await
}

async fn find_route(Dir(i): Dir, Q(q): Q<FindQuery>) -> Result<Json<Vec<String>>, ApiError> {
    blocking(move || find(&i.directory, &q).map(Json)).await
}

/// Resolves a client path inside `root`; `..` may not climb out and absolute paths must lie inside.
pub(crate) fn resolve(root: &Path, requested: &str) -> Result<PathBuf, ApiError> {
    let requested = Path::new(requested);
    let relative = if requested.is_absolute() {
        requested
            .strip_prefix(root)
            .map_err(|_| ApiError::bad(format!("{} is outside the project directory", requested.display())))?
    } else {
        requested
    };
    let mut path = root.to_path_buf();
    for component in relative.components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir if path != root => {
                path.pop();
            }
            _ => return Err(ApiError::bad(format!("{} climbs out of the project directory", relative.display()))),
        }
    }
    // A symlink may still point outside: check where it really leads.
    if let Ok(real) = path.canonicalize()
        && !real.starts_with(root)
    {
        return Err(ApiError::bad(format!("{} leads outside the project directory", relative.display())));
    }
    Ok(path)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned()
}

pub(crate) fn list(instance: &Instance, requested: &str) -> Result<Vec<FileNode>, ApiError> {
    let root = &instance.directory;
    let dir = resolve(root, requested)?;
    let entries =
        std::fs::read_dir(&dir).map_err(|err| ApiError::not_found(format!("cannot list {requested:?}: {err}")))?;
    let mut nodes: Vec<FileNode> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let path = entry.path();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let name = entry.file_name().to_string_lossy().into_owned();
            FileNode {
                ignored: name == ".git",
                name,
                path: relative(root, &path),
                absolute: path.to_string_lossy().into_owned(),
                kind: if is_dir { "directory" } else { "file" },
            }
        })
        .collect();
    nodes.sort_by(|a, b| (a.kind != "directory", &a.name).cmp(&(b.kind != "directory", &b.name)));
    Ok(nodes)
}

pub(crate) fn content(instance: &Instance, requested: &str) -> Result<FileContent, ApiError> {
    if requested.is_empty() {
        return Err(ApiError::bad("path is required"));
    }
    let path = resolve(&instance.directory, requested)?;
    let meta =
        std::fs::metadata(&path).map_err(|err| ApiError::not_found(format!("cannot read {requested:?}: {err}")))?;
    if meta.is_dir() {
        return Err(ApiError::bad(format!("{requested:?} is a directory; list it with /file")));
    }
    if meta.len() > MAX_CONTENT {
        return Err(ApiError::bad(format!(
            "{requested:?} has {} bytes, more than the {MAX_CONTENT} served",
            meta.len()
        )));
    }
    let bytes = std::fs::read(&path).map_err(|err| ApiError::not_found(format!("cannot read {requested:?}: {err}")))?;
    if !bytes.contains(&0)
        && let Ok(text) = String::from_utf8(bytes.clone())
    {
        return Ok(FileContent { kind: "text", content: text, encoding: None, mime_type: None });
    }
    Ok(FileContent {
        kind: "binary",
        content: STANDARD.encode(&bytes),
        encoding: Some("base64"),
        mime_type: Some(mime_of(&path).to_owned()),
    })
}

fn mime_of(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        _ => "application/octet-stream",
    }
}

/// Breadth-first walk (bounded by [`MAX_VISITED`]), fuzzy-matched and ranked: name contains the query,
/// then path contains it, then a subsequence match; shorter paths first.
pub(crate) fn find(root: &Path, q: &FindQuery) -> Result<Vec<String>, ApiError> {
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::bad("limit must be between 1 and 200"));
    }
    let want_dirs = match (q.kind.as_deref(), q.dirs.as_deref()) {
        (Some("file"), _) | (None, Some("false")) => false,
        (Some("directory") | None, _) => true,
        (Some(other), _) => return Err(ApiError::bad(format!("type must be file or directory, not {other:?}"))),
    };
    let only_dirs = q.kind.as_deref() == Some("directory");
    let needle = q.query.to_lowercase();
    let mut found: Vec<(u8, String)> = Vec::new();
    let mut queue = VecDeque::from([root.to_path_buf()]);
    let mut visited = 0usize;
    while let Some(dir) = queue.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            visited += 1;
            if visited > MAX_VISITED {
                queue.clear();
                break;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && SKIPPED.contains(&name.as_str()) {
                continue;
            }
            let mut shown = relative(root, &entry.path());
            if is_dir {
                queue.push_back(entry.path());
                shown.push('/');
            }
            if (is_dir && !want_dirs) || (!is_dir && only_dirs) {
                continue;
            }
            if let Some(rank) = rank(&needle, &name.to_lowercase(), &shown.to_lowercase()) {
                found.push((rank, shown));
            }
        }
    }
    found.sort_by(|a, b| (a.0, a.1.len(), &a.1).cmp(&(b.0, b.1.len(), &b.1)));
    Ok(found.into_iter().take(limit).map(|(_, path)| path).collect())
}

fn rank(needle: &str, name: &str, path: &str) -> Option<u8> {
    if needle.is_empty() || name.contains(needle) {
        return Some(0);
    }
    if path.contains(needle) {
        return Some(1);
    }
    let mut rest = path.chars();
    needle.chars().all(|c| rest.any(|p| p == c)).then_some(2)
}

/// `git status` of the worktree with line counts; empty outside git or without git.
fn git_status(directory: &Path) -> Vec<FileStatus> {
    let run = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(directory)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    let Some(status) = run(&["status", "--porcelain=v1", "--untracked-files=all"]) else { return Vec::new() };
    let counts = run(&["diff", "--numstat", "HEAD"]).unwrap_or_default();
    let count = |path: &str| {
        counts.lines().find_map(|line| {
            let mut fields = line.split('\t');
            let (added, removed, file) = (fields.next()?, fields.next()?, fields.next()?);
            (file == path).then(|| (added.parse().unwrap_or(0), removed.parse().unwrap_or(0)))
        })
    };
    status
        .lines()
        .filter_map(|line| {
            let (code, path) = (line.get(..2)?, line.get(3..)?);
            let path = path.rsplit(" -> ").next().unwrap_or(path).to_owned();
            let kind = match code {
                "??" => "added",
                c if c.contains('A') => "added",
                c if c.contains('D') => "deleted",
                _ => "modified",
            };
            let (added, removed) = count(&path).unwrap_or((0, 0));
            Some(FileStatus { path, added, removed, status: kind })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let root = Path::new("/work/project");
        assert_eq!(resolve(root, "src/main.rs").ok(), Some(PathBuf::from("/work/project/src/main.rs")));
        assert_eq!(resolve(root, "src/../Cargo.toml").ok(), Some(PathBuf::from("/work/project/Cargo.toml")));
        assert!(resolve(root, "../other").is_err());
        assert!(resolve(root, "/etc/passwd").is_err());
        assert_eq!(resolve(root, "/work/project/a").ok(), Some(PathBuf::from("/work/project/a")));
    }

    #[test]
    fn ranking_prefers_names_then_paths_then_subsequences() {
        assert_eq!(rank("main", "main.rs", "src/main.rs"), Some(0));
        assert_eq!(rank("src", "lib.rs", "src/lib.rs"), Some(1));
        assert_eq!(rank("slb", "lib.rs", "src/lib.rs"), Some(2));
        assert_eq!(rank("xyz", "lib.rs", "src/lib.rs"), None);
    }
}
