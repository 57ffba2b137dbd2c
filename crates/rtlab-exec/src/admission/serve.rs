//! Admission at registration with `exec serve`: the processes granted so
//! far (WCET = their budget, unknown without one) and the candidate,
//! under fixed priorities (the executive's SCHED_FIFO) with the overheads
//! the server measured at its start. A candidate that named no CPU tries
//! the executive's CPUs least utilized first and takes the first that
//! admits it.

use super::overheads::{measure, Measured, ReleaseSettings};

use crate::serve::config::{Grant, ServeConfig};
use rtlab_admit::{admit, Policy, Refusal, Task};
use rtlab_client::protocol::AttachRequest;

/// What the server admits with: its measured overheads.
#[derive(Debug, Clone)]
pub struct ServeAdmission {
    pub measured: Measured,
}

/// A grant as the analysis sees it.
pub fn task_of(grant: &Grant) -> Task {
    Task {
        name: grant.name.clone(),
        cpu: grant.cpu,
        period_ns: grant.period_ns,
        deadline_ns: grant.deadline_ns,
        wcet_ns: grant.budget_ns,
        priority: grant.priority,
    }
}

/// Whether the CPU of `request` (or of its task in the executive's task
/// set) was asked for; else the server chooses it.
pub fn cpu_asked(config: &ServeConfig, request: &AttachRequest, name: &str) -> bool {
    match &config.taskset {
        Some(set) => set.tasks.iter().any(|t| t.name == name && t.cpu.is_some()),
        None => request.cpu.is_some(),
    }
}

/// Σ WCET / period of the known WCETs of `tasks` on `cpu`.
pub fn utilization(tasks: &[Task], cpu: usize) -> f64 {
    tasks
        .iter()
        .filter(|t| t.cpu == cpu)
        .filter_map(|t| Some(t.wcet_ns? as f64 / t.period_ns.max(1) as f64))
        .sum()
}

impl ServeAdmission {
    /// Measures the release path on the server's CPUs with its settings
    /// (before it listens: nothing else of it runs there yet).
    pub fn start(config: &ServeConfig) -> ServeAdmission {
        let settings = ReleaseSettings {
            priority: config.priority,
            task_priority: config.max_priority,
            guard_ns: config.guard_ns,
            release_early_ns: config.release_early_ns,
        };
        ServeAdmission {
            measured: measure(&config.cpus, &settings),
        }
    }

    /// The CPU `candidate` is admitted on beside `granted`, or why not.
    /// With `cpu_asked` only its own CPU is tried; else `cpus`, least
    /// utilized first, then fewest processes (the refusal is then the
    /// first CPU's).
    pub fn place(
        &self,
        granted: &[Task],
        candidate: &Task,
        cpu_asked: bool,
        cpus: &[usize],
    ) -> Result<usize, Refusal> {
        let overheads = &self.measured.overheads;
        let policy = Policy::FixedPriority;
        if cpu_asked {
            return admit(granted, candidate, policy, overheads, cpus).map(|_| candidate.cpu);
        }
        // Least utilized first; among equals (processes without budgets)
        // the one with the fewest processes, as the server spreads them.
        let tasks_on = |cpu: usize| granted.iter().filter(|t| t.cpu == cpu).count();
        let mut order = cpus.to_vec();
        order.sort_by(|&a, &b| {
            utilization(granted, a)
                .total_cmp(&utilization(granted, b))
                .then(tasks_on(a).cmp(&tasks_on(b)))
        });
        let mut first_refusal = None;
        for cpu in order {
            let on_cpu = Task {
                cpu,
                ..candidate.clone()
            };
            match admit(granted, &on_cpu, policy, overheads, cpus) {
                Ok(_) => return Ok(cpu),
                Err(refusal) => {
                    first_refusal.get_or_insert(refusal);
                }
            }
        }
        Err(first_refusal.expect("validated: at least one CPU"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, cpu: usize, wcet: Option<u64>) -> Task {
        Task {
            name: name.into(),
            cpu,
            period_ns: 10_000_000,
            deadline_ns: 10_000_000,
            wcet_ns: wcet,
            priority: 50,
        }
    }

    #[test]
    fn utilization_counts_the_known_wcets_of_one_cpu() {
        let tasks = [
            task("a", 0, Some(2_000_000)),
            task("b", 0, None),
            task("c", 1, Some(5_000_000)),
        ];
        assert!((utilization(&tasks, 0) - 0.2).abs() < 1e-12);
        assert!((utilization(&tasks, 1) - 0.5).abs() < 1e-12);
        assert_eq!(utilization(&tasks, 2), 0.0);
    }

    #[test]
    fn a_free_candidate_goes_where_it_fits_least_utilized_then_least_crowded_first() {
        let admission = ServeAdmission {
            measured: Measured {
                overheads: rtlab_admit::Overheads::none(),
                per_cpu: Vec::new(),
                not_measured: Some("test".into()),
            },
        };
        // Without budgets anywhere: the CPU with fewer processes.
        let unknown = [task("spinner", 0, None)];
        let placed = admission.place(&unknown, &task("b", 0, None), false, &[0, 1]);
        assert_eq!(placed, Ok(1));
        // 6 ms of 10 on CPU 1: another 6 ms fits only on CPU 0.
        let busy = task("busy", 1, Some(6_000_000));
        let candidate = task("c", 0, Some(6_000_000));
        assert_eq!(
            admission.place(std::slice::from_ref(&busy), &candidate, false, &[1, 0]),
            Ok(0)
        );
        // Asked for CPU 1, it is refused there, naming the test.
        let on_one = task("c", 1, Some(6_000_000));
        let refusal = admission
            .place(&[busy], &on_one, true, &[0, 1])
            .unwrap_err();
        assert_eq!(refusal.cpu, 1);
        assert!(!refusal.message.is_empty());
    }

    #[test]
    fn the_cpu_asked_is_the_request_s_or_its_task_s() {
        let mut config = ServeConfig::new("/tmp/x.sock".into());
        let request = AttachRequest {
            version: rtlab_client::protocol::VERSION,
            tid: 1,
            period_ns: 1_000_000,
            offset_ns: 0,
            deadline_ns: None,
            budget_ns: None,
            cpu: Some(0),
            priority: None,
            name: None,
        };
        assert!(cpu_asked(&config, &request, "x"));
        let free = AttachRequest {
            cpu: None,
            ..request.clone()
        };
        assert!(!cpu_asked(&config, &free, "x"));
        let text = "[[task]]\nname = \"x\"\nperiod = \"10ms\"\nwork = \"1ms\"\n";
        config.taskset =
            Some(crate::taskset::TaskSet::parse(text, std::path::Path::new("t.toml")).unwrap());
        assert!(!cpu_asked(&config, &request, "x"));
    }
}
