#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-tool-registry` benchmarks (`cargo xtask bench opencode-tool-registry`, or
//! `cargo bench -p opencode-tool-registry --bench tools`).
//!
//! 1. `grep` over a large tree (the cargo registry sources, or `$GREP_BENCH_ROOT`) against the `rg`
//!    binary when installed, else against GNU `grep -rnI` (stated in the output), same query, same run,
//!    best of three after a warm-up.
//! 2. Bounding a 100 MB output streamed through `BoundedWriter` (spilled to a managed file): wall
//!    time, and peak resident memory after 10 MB and after 100 MB (equal peaks = memory independent
//!    of output size).

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use opencode_config::ToolOutputConfig;
use opencode_tool_registry::OutputStore;

const PATTERN: &str = r"fn\s+opencode_rare_needle_[0-9]+";

fn main() {
    grep_benchmark();
    bounding_benchmark();
}

fn grep_benchmark() {
    let root = std::env::var_os("GREP_BENCH_ROOT").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"));
        home.join("registry/src")
    });
    if !root.is_dir() {
        eprintln!("skipping grep benchmark: {} not found", root.display());
        return;
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ours = || {
        let found = opencode_tool_registry::tools::grep::search(&root, PATTERN, None, 100, threads).expect("search");
        found.len()
    };
    let rg = Command::new("rg").arg("--version").output().is_ok_and(|out| out.status.success());
    let (name, mut baseline) = if rg {
        let mut command = Command::new("rg");
        command.args(["-n", "--hidden", "-e", PATTERN]).arg(&root);
        ("rg -n --hidden", command)
    } else {
        let mut command = Command::new("grep");
        command.args(["-rnIE", r"fn[[:space:]]+opencode_rare_needle_[0-9]+"]).arg(&root);
        ("grep -rnIE (rg not installed)", command)
    };
    let files = walk_count(&root);
    ours();
    let _ = baseline.output();
    let best = |f: &mut dyn FnMut()| (0..3).map(|_| time(&mut *f)).min().unwrap_or_default();
    let mut matches = 0;
    let ours_time = best(&mut || matches = ours());
    let base_time = best(&mut || {
        let _ = baseline.output().expect("baseline runs");
    });
    println!("grep over {} ({files} files), pattern {PATTERN:?}, {threads} threads", root.display());
    println!("{:<36} {:>10}", "search", "best of 3");
    println!("{:<36} {:>8.1} ms  ({matches} matches)", "opencode grep::search", ms(ours_time));
    println!("{:<36} {:>8.1} ms", name, ms(base_time));
    println!("ratio ours / baseline: {:.2}", ours_time.as_secs_f64() / base_time.as_secs_f64());
}

fn bounding_benchmark() {
    let dir = std::env::temp_dir().join(format!("opencode-bound-bench-{}", std::process::id()));
    let store = OutputStore::new(&dir, ToolOutputConfig::default());
    let chunk = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n".repeat(1024);
    println!();
    println!("bounding streamed output (64 KiB writes, default limits 2000 lines / 50 KiB)");
    for megabytes in [10usize, 100] {
        let start = Instant::now();
        let mut writer = store.writer();
        for _ in 0..(megabytes * 1024 * 1024 / chunk.len()) {
            writer.write_all(chunk.as_bytes()).expect("write");
        }
        let bounded = writer.finish();
        let elapsed = start.elapsed();
        let path = bounded.managed_path.expect("spilled");
        println!(
            "{megabytes:>4} MB: {:>7.1} ms, preview {} bytes, file {} bytes, peak RSS {} KiB",
            ms(elapsed),
            bounded.text.len(),
            std::fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0),
            peak_rss_kib()
        );
        std::fs::remove_file(path).expect("remove");
    }
    if let Err(err) = std::fs::remove_dir_all(&dir) {
        eprintln!("cannot remove {}: {err}", dir.display());
    }
}

fn walk_count(root: &std::path::Path) -> usize {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .count()
}

fn time(f: &mut dyn FnMut()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// `VmHWM` from `/proc/self/status` (peak resident set), or 0 where unavailable.
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        })
        .unwrap_or(0)
}
