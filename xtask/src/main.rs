//! `cargo xtask <task>`: developer tasks that are programs, not tests.
//!
//! - `bench`: the performance benchmarks (release build), printing the figures issues ask for.

use std::process::Command;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask bench [package] [-- bench args]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("bench") => bench(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// Every benchmark program: (package, bench target).
const BENCHES: &[(&str, &str)] = &[
    ("opencode-llm", "llm"),
    ("opencode-system-context", "reconcile"),
    ("opencode-session-store", "store"),
    ("opencode-tool-registry", "tools"),
    ("opencode-session-runtime", "turn"),
];

/// Runs every benchmark program in release mode; `cargo xtask bench <package>` runs one package's.
fn bench(extra: &[String]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let only = extra.first().filter(|arg| !arg.starts_with('-'));
    for (package, target) in BENCHES.iter().filter(|(package, _)| only.is_none_or(|only| only == package)) {
        let rest = if only.is_some() { &extra[1..] } else { extra };
        let status = Command::new(&cargo).args(["bench", "-p", package, "--bench", target, "--"]).args(rest).status();
        match status {
            Ok(status) if status.success() => {}
            Ok(_) => return ExitCode::FAILURE,
            Err(err) => {
                eprintln!("error: cannot run cargo: {err}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
