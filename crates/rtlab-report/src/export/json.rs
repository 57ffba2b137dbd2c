//! rtlab's own JSON (`rtlab.run/1`), pretty-printed.

use super::exporter::Exporter;
use rtlab_core::result::RunResult;
use std::io::{self, Write};

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn write(&self, result: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, result)?;
        out.write_all(b"\n")
    }
}
