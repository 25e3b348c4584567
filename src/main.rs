//! The `mmafuzz` command line: a thin layer over the library that parses arguments, shows
//! progress and turns every error into one clear message.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `mmafuzz probes | head -3`: a closed pipe ends the program quietly, as Unix tools do,
    // instead of a panic in println! (every file mmafuzz writes is replaced atomically).
    #[cfg(unix)]
    // SAFETY: restores the default action of one signal before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
