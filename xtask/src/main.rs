//! `cargo xtask <task>`: developer tasks that are programs, not tests.
//!
//! - `bench`: the performance benchmarks (release build), printing the figures issues ask for.

use std::process::Command;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask bench";

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

/// Runs every benchmark program in release mode.
fn bench(extra: &[String]) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo).args(["bench", "-p", "opencode-llm", "--bench", "llm", "--"]).args(extra).status();
    match status {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: cannot run cargo: {err}");
            ExitCode::FAILURE
        }
    }
}
