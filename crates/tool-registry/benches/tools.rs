#![allow(clippy::expect_used, reason = "a benchmark program fails loudly")]

//! `opencode-tool-registry` benchmarks (`cargo xtask bench opencode-tool-registry`, or
//! `cargo bench -p opencode-tool-registry --bench tools`).
//!
//! 1. `grep` over a large tree (the cargo registry sources, or `$GREP_BENCH_ROOT`) against the `rg`
//!    binary when installed, else against GNU `grep -rnI` (stated in the output), same query, same run,
//!    best of three after a warm-up.
//! 2. `glob` (the tool, through the registry) over the same tree against `find -name`, same run.
//! 3. `edit`'s replacer chain on a 5 000-line file: a fuzzy hit (block anchor) and a miss (every
//!    replacer, then the nearest-candidates search).
//! 4. Bounding a 100 MB output streamed through `BoundedWriter` (spilled to a managed file): wall
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
    glob_benchmark();
    edit_benchmark();
    bounding_benchmark();
}

fn bench_root() -> PathBuf {
    std::env::var_os("GREP_BENCH_ROOT").map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo"));
        home.join("registry/src")
    })
}

fn glob_benchmark() {
    let root = bench_root();
    if !root.is_dir() {
        eprintln!("skipping glob benchmark: {} not found", root.display());
        return;
    }
    let temp = tempfile::tempdir().expect("temp dir");
    let output = OutputStore::new(temp.path().join("tool-output"), ToolOutputConfig::default());
    let location = opencode_tool_registry::Location::new(&root, output.dir()).expect("location");
    let registry = opencode_tool_registry::ToolRegistry::new(location, output).expect("registry");
    registry.register(opencode_tool_registry::typed(opencode_tool_registry::tools::glob::Glob)).expect("register");
    let agents = opencode_tool_registry::Agents::new(
        &opencode_tool_registry::AgentDirs::default(),
        None,
        &indexmap::IndexMap::new(),
    );
    // Repeating the identical call is the point here, not a doom loop.
    let mut agent = (*agents.get("build").expect("build agent")).clone();
    agent.permission.push(opencode_tool_registry::Rule::new(
        "doom_loop",
        "*",
        opencode_config::PermissionAction::Allow,
    ));
    let ctx = opencode_tool_registry::ToolContext {
        session_id: "ses_bench".into(),
        message_id: "msg_bench".into(),
        call_id: "call_bench".into(),
        agent: std::sync::Arc::new(agent),
        location: std::sync::Arc::clone(registry.location()),
        cancel: tokio_util::sync::CancellationToken::new(),
        permissions: std::sync::Arc::new(opencode_tool_registry::Permissions::in_memory()),
        progress: std::sync::Arc::new(opencode_tool_registry::NoProgress),
        output: registry.output().clone(),
        editor: None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let call = opencode_tool_registry::ToolCall {
        call_id: "call_bench".into(),
        name: "glob".into(),
        input: serde_json::json!({"pattern": "**/*.toml"}),
    };
    let mut ours = || {
        let settled = runtime.block_on(registry.execute(&call, &ctx)).expect("glob settles");
        assert!(settled.text.lines().count() > 1, "glob found files");
    };
    let mut find = Command::new("find");
    find.arg(&root).args(["-type", "f", "-name", "*.toml"]);
    ours();
    let _ = find.output();
    let ours_time = (0..3).map(|_| time(&mut ours)).min().unwrap_or_default();
    let find_time = (0..3)
        .map(|_| {
            time(&mut || {
                let _ = find.output().expect("find runs");
            })
        })
        .min()
        .unwrap_or_default();
    println!();
    println!("glob **/*.toml over {}", root.display());
    println!("{:<36} {:>8.1} ms", "opencode glob tool (registry)", ms(ours_time));
    println!("{:<36} {:>8.1} ms", "find -type f -name '*.toml'", ms(find_time));
    println!("ratio ours / baseline: {:.2}", ours_time.as_secs_f64() / find_time.as_secs_f64());
}

fn edit_benchmark() {
    use opencode_tool_registry::tools::edit::replace;
    let content: String =
        (0..5000).map(|i| format!("    fn item_{i}(value: u32) -> u32 {{\n        value + {i}\n    }}\n")).collect();
    let fuzzy = "fn item_2500(value: u32) -> u32 {\n    value + 2501\n}";
    let miss = "fn nothing_like_this() {\n    never();\n}";
    let mut hit = || {
        replace(&content, fuzzy, "fn replaced() {}", false).expect("block anchor finds it");
    };
    let mut missed = || {
        assert!(replace(&content, miss, "x", false).is_err());
    };
    println!();
    println!("edit replacer chain on a {}-line file ({} bytes)", content.lines().count(), content.len());
    println!(
        "{:<36} {:>8.1} ms",
        "fuzzy hit (block anchor)",
        ms((0..3).map(|_| time(&mut hit)).min().unwrap_or_default())
    );
    println!(
        "{:<36} {:>8.1} ms",
        "miss (all replacers + candidates)",
        ms((0..3).map(|_| time(&mut missed)).min().unwrap_or_default())
    );
}

fn grep_benchmark() {
    let root = bench_root();
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
