//! rtlab: make a stock Linux machine time-critical and prove it.

use rtlab::{cli, commands, input};
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
                eprintln!("error: {bad}");
                return ExitCode::from(2);
            }
            eprintln!("error: {error:#}");
            ExitCode::from(1)
        }
    }
}
