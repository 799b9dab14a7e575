//! Bounding huge, odd and unsavable outputs.

use std::io::Write;

use opencode_config::ToolOutputConfig;
use opencode_tool_registry::OutputStore;

const MB: usize = 1024 * 1024;

fn lines(text: &str) -> usize {
    text.lines().count()
}

#[test]
fn hundred_megabytes_stream_to_one_file_with_a_bounded_preview() {
    let dir = tempfile::tempdir().unwrap();
    let store = OutputStore::new(dir.path(), ToolOutputConfig::default());
    let mut writer = store.writer();
    let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"; // 64 bytes
    let chunk = line.repeat(1024); // 64 KiB
    for _ in 0..(100 * MB / chunk.len()) {
        writer.write_all(chunk.as_bytes()).unwrap();
    }
    let bounded = writer.finish();
    assert!(bounded.truncated);
    assert_eq!(bounded.total_bytes, (100 * MB) as u64);
    assert_eq!(bounded.total_lines, (100 * MB / 64) as u64);
    assert!(bounded.text.len() <= 50 * 1024);
    assert!(lines(&bounded.text) <= 2000);
    assert!(bounded.text.starts_with(line));
    assert!(bounded.text.ends_with(line));
    let path = bounded.managed_path.unwrap();
    assert!(bounded.text.contains(&path.display().to_string()));
    assert_eq!(std::fs::metadata(&path).unwrap().len(), (100 * MB) as u64);
    assert!(path.file_name().unwrap().to_string_lossy().starts_with("tool_"));
}

#[test]
fn one_long_line_keeps_its_beginning_and_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = OutputStore::new(dir.path(), ToolOutputConfig::default());
    let text = format!("BEGIN{}END", "x".repeat(5 * MB));
    let bounded = store.bound(&text);
    assert!(bounded.text.starts_with("BEGINxxx"));
    assert!(bounded.text.ends_with("xxxEND"));
    assert!(bounded.text.len() <= 50 * 1024);
    assert_eq!(std::fs::read_to_string(bounded.managed_path.unwrap()).unwrap(), text);
}

#[test]
fn invalid_utf8_is_shown_lossily_and_saved_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let store = OutputStore::new(dir.path(), ToolOutputConfig { max_lines: 100, max_bytes: 2048 });
    let mut bytes = Vec::new();
    for _ in 0..2000 {
        bytes.extend_from_slice(b"ok \xff\xfe caf\xc3\xa9 ");
    }
    let bounded = store.bound_bytes(&bytes);
    assert!(bounded.text.contains('\u{fffd}'));
    assert!(bounded.text.contains("café"));
    assert!(bounded.text.len() <= 2048);
    assert_eq!(std::fs::read(bounded.managed_path.unwrap()).unwrap(), bytes);
}

#[test]
fn small_invalid_utf8_that_grows_when_decoded_is_still_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let store = OutputStore::new(dir.path(), ToolOutputConfig { max_lines: 100, max_bytes: 1024 });
    let bytes = vec![0xffu8; 1000]; // 1000 bytes, 3000 once decoded
    let bounded = store.bound_bytes(&bytes);
    assert!(bounded.truncated);
    assert!(bounded.text.len() <= 1024);
}

#[test]
fn unwritable_spill_directory_gives_a_lossy_success() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "file").unwrap();
    let store = OutputStore::new(blocker.join("tool-output"), ToolOutputConfig::default());
    let text: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
    let bounded = store.bound(&text);
    assert!(bounded.truncated);
    assert_eq!(bounded.managed_path, None);
    let diagnostic = bounded.diagnostic.unwrap();
    assert!(diagnostic.contains("cannot create a tool output file"), "{diagnostic}");
    assert!(bounded.text.contains("could not be saved"));
    assert!(bounded.text.contains("preview is lossy"));
    assert!(bounded.text.starts_with("line 0\n"));
    assert!(bounded.text.ends_with("line 9999\n"));
    assert!(lines(&bounded.text) <= 2000);
}

#[test]
fn names_are_unique_in_one_flat_directory() {
    let dir = tempfile::tempdir().unwrap();
    let store = OutputStore::new(dir.path(), ToolOutputConfig { max_lines: 10, max_bytes: 1024 });
    let text = "x\n".repeat(100);
    let paths: std::collections::HashSet<_> = (0..50).map(|_| store.bound(&text).managed_path.unwrap()).collect();
    assert_eq!(paths.len(), 50);
    assert!(paths.iter().all(|path| path.parent() == Some(dir.path())));
}
