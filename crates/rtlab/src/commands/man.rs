//! `rtlab man [--dir DIR]`: manual pages generated from the command line
//! itself (clap_mangen): rtlab(1) on stdout, or one page per command in DIR.

use crate::cli::ManArgs;
use crate::input::InputError;
use std::process::ExitCode;

pub fn run(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(crate::cli::command()).render(&mut page)?;
        std::io::Write::write_all(&mut std::io::stdout().lock(), &page)?;
        return Ok(ExitCode::SUCCESS);
    };
    // A directory that cannot be made is bad input, named as given.
    std::fs::create_dir_all(dir)
        .map_err(|e| InputError(format!("--dir {}: cannot create it: {e}", dir.display())))?;
    clap_mangen::generate_to(crate::cli::command(), dir)
        .map_err(|e| anyhow::anyhow!("writing the pages into {}: {e}", dir.display()))?;
    let pages = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("rtlab"))
        .count();
    eprintln!("wrote {pages} manual pages into {}", dir.display());
    Ok(ExitCode::SUCCESS)
}
