//! Opens a plan file of either form, told apart by its first bytes.

use super::binary::{MappedPlan, BINARY_MAGIC};
use super::model::{EventSource, PlanError, PlanHeader};
use std::io::Read;
use std::path::Path;

/// A plan ready to run: its header and its events (in memory for a text
/// plan, mapped for a binary one).
pub struct LoadedPlan {
    pub header: PlanHeader,
    pub events: Box<dyn EventSource>,
    /// The 1-based line of each event (text plans only).
    pub lines: Option<Vec<usize>>,
    /// Whether the file was in the binary form.
    pub binary: bool,
}

/// Reads a plan: binary if it starts with `RTLPLAN\0`, text otherwise.
pub fn load(path: impl AsRef<Path>) -> Result<LoadedPlan, PlanError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let err = |m: String| PlanError::whole(&name, m);
    let mut file = std::fs::File::open(path).map_err(|e| err(format!("cannot open: {e}")))?;
    let mut magic = [0u8; 8];
    let mut got = 0;
    while got < magic.len() {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(err(format!("cannot read: {e}"))),
        }
    }
    if got == magic.len() && &magic == BINARY_MAGIC {
        let plan = MappedPlan::open(path)?;
        return Ok(LoadedPlan {
            header: plan.header().clone(),
            events: Box::new(plan),
            lines: None,
            binary: true,
        });
    }
    let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read: {e}")))?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(e) => {
            let line = bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            return Err(PlanError::at(
                &name,
                line,
                "not UTF-8 text (nor a binary plan starting with RTLPLAN\\0)",
            ));
        }
    };
    let (header, events, lines) = super::text::parse_with_lines(text, &name)?;
    Ok(LoadedPlan {
        header,
        events: Box::new(events),
        lines: Some(lines),
        binary: false,
    })
}
