//! `opencode`: the command-line interface. Parsing is here; each command lives in `commands/`.

mod allocator;
mod cli;
mod commands;
mod context;
mod error;
mod logging;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // One line each, whatever the underlying message holds.
            eprintln!("error: {}", one_line(&err.to_string()));
            eprintln!("hint: {}", one_line(err.hint()));
            ExitCode::from(err.exit_code())
        }
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
