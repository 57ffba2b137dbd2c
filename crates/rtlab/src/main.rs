//! rtlab: make a stock Linux machine time-critical and prove it.

use rtlab::{cli, commands, input};
use rtlab_core::result::terminal_text;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(error) => {
            // `rtlab export … | head`: the reader left, nothing to report.
            let broken_pipe = error.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            if let Some(bad) = error.downcast_ref::<input::InputError>() {
                // Messages quote files, stored runs and other processes:
                // escaped as everything rtlab prints.
                eprintln!("error: {}", terminal_text(&bad.to_string()));
                return ExitCode::from(2);
            }
            eprintln!("error: {}", terminal_text(&format!("{error:#}")));
            ExitCode::from(1)
        }
    }
}
