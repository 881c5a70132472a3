//! `thicket`: the command-line tool of ThicketDB.
//!
//! Exit status: 0 on success, 1 when `get` finds no value, 2 on any error
//! (the message goes to stderr as `error: <message>`).

mod bench;
mod cli;
mod commands;
mod error;
mod keys;
mod permutation;
mod stats_json;
mod stress;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::error::CliError;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(commands::Status::Success) => ExitCode::SUCCESS,
        Ok(commands::Status::NotFound) => ExitCode::from(1),
        // The reader of our output went away (`thicket scan | head`).
        Err(CliError::BrokenPipe) => ExitCode::SUCCESS,
        Err(e) => {
            // Not `eprintln!`, which panics when stderr fails (a full disk
            // under a redirected stderr, injected I/O faults): the exit
            // status still says what happened.
            let _ = writeln!(std::io::stderr(), "error: {e}");
            ExitCode::from(2)
        }
    }
}
