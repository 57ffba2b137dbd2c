//! `rtlab restore`: undo what an rtlab killed by SIGKILL (or a power loss)
//! left changed.

use crate::cli::RestoreArgs;
use rtlab_core::journal;
use std::process::ExitCode;

pub fn run(args: &RestoreArgs) -> anyhow::Result<ExitCode> {
    let (dir, recovered) = journal::recover_stale_in_state_dir();
    let failed = recovered.iter().any(|r| !r.ok());
    if args.json {
        let doc = serde_json::json!({
            "schema": "rtlab.restore/1",
            "state_dir": dir,
            "recovered": recovered,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else if recovered.is_empty() {
        println!(
            "nothing to restore (no journal of a dead rtlab in {})",
            dir.display()
        );
    } else {
        for r in &recovered {
            println!("{r}");
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
