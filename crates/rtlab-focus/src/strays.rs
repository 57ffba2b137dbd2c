//! The processes in a partition that no joined process accounts for: a
//! process forked inside by a member that has left since, or orphaned by
//! one that died. `leave` sends them where the leaving member went, so a
//! detached program's helpers do not keep a focused CPU.

use rtlab_core::journal::cgroup_procs;
use rtlab_core::process::Stat;
use std::collections::HashMap;
use std::path::Path;

/// Field 4 of a stat line: the parent's pid.
const PPID: usize = 4;

/// The processes in `partition` whose chain of parents inside the
/// partition does not reach one of `members`.
pub(crate) fn strays(partition: &Path, members: &[i32]) -> Vec<i32> {
    let procs = cgroup_procs(partition).unwrap_or_default();
    let parent: HashMap<i32, i32> = procs
        .iter()
        .filter_map(|&pid| Some((pid, Stat::of(pid as u32).ok()?.number(PPID)?)))
        .collect();
    procs
        .into_iter()
        .filter(|&pid| !reaches_member(pid, &parent, members))
        .collect()
}

/// Whether `pid`, or an ancestor of it inside the partition (the keys of
/// `parent`), is a member. Bounded: a pid table changing underneath cannot
/// make a cycle last.
fn reaches_member(pid: i32, parent: &HashMap<i32, i32>, members: &[i32]) -> bool {
    let mut at = pid;
    for _ in 0..=parent.len() {
        if members.contains(&at) {
            return true;
        }
        match parent.get(&at) {
            Some(&up) => at = up,
            None => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_of_members_stay_and_the_rest_are_strays() {
        // 10 joined; 11 its child, 12 its grandchild; 20 forked by a member
        // that left (its parent 5 is outside); 30 an orphan (parent 1).
        let parent: HashMap<i32, i32> = [(10, 2), (11, 10), (12, 11), (20, 5), (30, 1)]
            .into_iter()
            .collect();
        let members = [10];
        for kept in [10, 11, 12] {
            assert!(reaches_member(kept, &parent, &members), "{kept}");
        }
        for stray in [20, 30] {
            assert!(!reaches_member(stray, &parent, &members), "{stray}");
        }
        // A cycle (pids reused underneath) ends.
        let cycle: HashMap<i32, i32> = [(1, 2), (2, 1)].into_iter().collect();
        assert!(!reaches_member(1, &cycle, &[9]));
    }
}
