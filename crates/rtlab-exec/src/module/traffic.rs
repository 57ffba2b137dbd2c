//! The `traffic` kind as `rtlab plan run` fires it: each event's datagram
//! (its planned size, zeros) to the flow's `dest`, no stamp, no transmit
//! timestamps (those are `rtlab traffic replay`'s, crate::traffic::replay).
//!
//! CONTRACT (issue 20): the replay part owns this file.

use super::model::Module;
use crate::plan::model::ModuleDecl;

/// The module for a `traffic` flow under `rtlab plan run`.
pub fn plain_sender(decl: &ModuleDecl) -> Result<Box<dyn Module>, String> {
    let _ = decl;
    todo!("replay part")
}
