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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(text: &str) -> LoadedPlan {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.plan");
        std::fs::write(&path, text).unwrap();
        crate::plan::load(&path).unwrap()
    }

    const HEAD: &str =
        "rtlab-plan 1\nmodule a traffic dest=127.0.0.1:7000\nmodule b traffic\nevents\n";

    #[test]
    fn each_flow_gets_its_destination_and_largest_datagram() {
        let plan = plan_of(&format!(
            "{HEAD}0us a hex:6400\n1us b hex:0005\n2us a hex:c800\n"
        ));
        let to: SocketAddr = "10.0.0.2:9000".parse().unwrap();
        let flows = flows_of(&plan, Some(to)).unwrap();
        assert_eq!(
            flows
                .iter()
                .map(|f| (f.name.as_str(), f.dest, f.largest, f.events))
                .collect::<Vec<_>>(),
            [("a", to, 200, 2), ("b", to, 1280, 1)]
        );
        // Without --to: flow b has nowhere to go.
        let e = flows_of(&plan, None).unwrap_err();
        assert!(e.contains("flow b has no dest="), "{e}");
    }

    #[test]
    fn an_event_that_is_not_a_datagram_is_named_by_its_index() {
        let to = Some("127.0.0.1:9".parse().unwrap());
        let reserved = plan_of(&format!("{HEAD}0us a hex:6400\n1us a hex:64000100\n"));
        let e = flows_of(&reserved, to).unwrap_err();
        assert!(e.starts_with("event 1: ") && e.contains("reserved"), "{e}");
        let big = plan_of(&format!("{HEAD}0us a hex:ffff\n"));
        let e = flows_of(&big, to).unwrap_err();
        assert!(e.starts_with("event 0: ") && e.contains("65535"), "{e}");
        let marks = plan_of("rtlab-plan 1\nmodule m mark\nevents\n0us m\n");
        let e = flows_of(&marks, to).unwrap_err();
        assert!(e.contains("not a traffic plan"), "{e}");
    }
}
