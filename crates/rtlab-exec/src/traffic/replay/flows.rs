//! A traffic plan read once before the replay: each flow's destination
//! and largest datagram (the size of its preallocated buffer), every
//! event's data checked, so that nothing on the hot path can fail to
//! decode.

use crate::plan::LoadedPlan;
use crate::traffic::format::{self, TrafficData};
use std::net::SocketAddr;

/// One flow (one `traffic` module of the plan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    pub name: String,
    pub dest: SocketAddr,
    /// The flow's largest datagram, bytes.
    pub largest: usize,
    pub events: u64,
}

/// The flows of a traffic plan, in the order of its module declarations
/// (an event's `module` is its flow's index).
pub fn flows_of(plan: &LoadedPlan, to: Option<SocketAddr>) -> Result<Vec<Flow>, String> {
    let decls = &plan.header.modules;
    if decls.is_empty() {
        return Err("not a traffic plan: it declares no module".into());
    }
    // A replay sends packets only: a mark or a signal among the flows
    // would be an event that is neither sent nor skipped.
    if let Some(other) = decls.iter().find(|d| d.kind != format::KIND) {
        return Err(format!(
            "not a traffic plan: module {} is of kind {} (a replay sends only `{}` flows; `rtlab plan run` fires the others)",
            other.name,
            other.kind,
            format::KIND
        ));
    }
    let mut flows = Vec::with_capacity(decls.len());
    for decl in decls {
        let dest = match (to, decl.setting("dest")) {
            (Some(to), _) => to,
            (None, Some(dest)) => dest
                .parse()
                .map_err(|_| format!("flow {}: dest={dest} is not ADDR:PORT", decl.name))?,
            (None, None) => {
                return Err(format!(
                    "flow {} has no dest= and no --to was given: where should it go?",
                    decl.name
                ))
            }
        };
        flows.push(Flow {
            name: decl.name.clone(),
            dest,
            largest: 0,
            events: 0,
        });
    }
    for index in 0..plan.events.len() {
        let event = plan.events.event(index);
        let data = TrafficData::decode(&event.data).map_err(|e| format!("event {index}: {e}"))?;
        let flow = flows
            .get_mut(usize::from(event.module))
            .ok_or_else(|| format!("event {index}: module {} is not declared", event.module))?;
        flow.largest = flow.largest.max(usize::from(data.size));
        flow.events += 1;
    }
    Ok(flows)
}
