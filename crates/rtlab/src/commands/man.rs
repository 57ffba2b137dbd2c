//! `rtlab man [--dir DIR]`: manual pages generated from the command line
//! itself (clap_mangen): rtlab(1) on stdout, or one page per command in DIR.

use crate::cli::ManArgs;
use crate::input::InputError;
use std::process::ExitCode;

pub fn run(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let Some(dir) = &args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(crate::cli::command()).render(&mut page)?;
        if args.json {
            let doc = serde_json::json!({
                "schema": "rtlab.man/1",
                "page": String::from_utf8_lossy(&page),
            });
            page = format!("{}\n", serde_json::to_string_pretty(&doc)?).into_bytes();
        }
        std::io::Write::write_all(&mut std::io::stdout().lock(), &page)?;
        return Ok(ExitCode::SUCCESS);
    };
    // A directory that cannot be made is bad input, named as given.
    std::fs::create_dir_all(dir)
        .map_err(|e| InputError(format!("--dir {}: cannot create it: {e}", dir.display())))?;
    clap_mangen::generate_to(crate::cli::command(), dir)
        .map_err(|e| anyhow::anyhow!("writing the pages into {}: {e}", dir.display()))?;
    let mut pages: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("rtlab") && name.ends_with(".1"))
        .collect();
    pages.sort();
    if args.json {
        let doc = serde_json::json!({
            "schema": "rtlab.man/1",
            "dir": dir.display().to_string(),
            "pages": pages,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        eprintln!("wrote {} manual pages into {}", pages.len(), dir.display());
    }
    Ok(ExitCode::SUCCESS)
}
