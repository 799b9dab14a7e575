//! `opencode`: the command-line interface. Parsing is here; each command lives in `commands/`.

mod cli;
mod commands;
mod context;
mod error;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            eprintln!("hint: {}", err.hint());
            ExitCode::FAILURE
        }
    }
}
