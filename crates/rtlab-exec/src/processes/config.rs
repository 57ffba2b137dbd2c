//! A processes run's settings: the periodic task set, who releases the
//! processes, the program that runs them, the limits and their check; and
//! the plan one worker process is started with.

use crate::periodic::{Mode, PeriodicConfig};
use crate::serve::MAX_SERVE_TASKS;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::settings::FieldError;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Most tasks (processes) in one run: each is a process of the rtlab
/// binary with its memory locked, and the table needs 30.
pub const MAX_PROCESSES: usize = 100;

/// The name of the hidden subcommand of `rtlab exec` a worker runs
/// (`PROGRAM exec process-worker PLAN`).
pub const WORKER_SUBCOMMAND: &str = "process-worker";

/// Periodic tasks as separate processes, each running the worker of
/// [`crate::processes`] in `program` (the rtlab binary).
#[derive(Debug, Clone)]
pub struct ProcessesConfig {
    /// The task set, as `exec periodic` has it (its `mode` is ignored:
    /// [`ProcessesConfig::release`] says who releases the processes).
    pub periodic: PeriodicConfig,
    /// [`Mode::Executive`]: each process attaches to `rtlab exec serve`
    /// through rtlab-client; [`Mode::Fifo`]: each process is SCHED_FIFO and
    /// sleeps to its own activations (paper 002's Program 4.7).
    pub release: Mode,
    /// The rtlab binary: `/proc/self/exe` when run from rtlab.
    pub program: PathBuf,
    /// The executive form only: its `rtlab exec serve --focus` (paper
    /// 002's SCHED_KURT_PROCS: the CPUs for the executive and its
    /// processes alone; the run's own process and loads stay outside).
    pub focus: Option<CpuSet>,
}

impl ProcessesConfig {
    pub fn new(periodic: PeriodicConfig, release: Mode, program: PathBuf) -> ProcessesConfig {
        ProcessesConfig {
            periodic,
            release,
            program,
            focus: None,
        }
    }

    /// Checks the settings together: the task set's own rules, then the
    /// process count. Errors name the setting by its campaign key.
    pub fn validate(&self) -> Result<(), FieldError> {
        self.periodic.validate()?;
        if self.periodic.task_set.is_some() {
            // A worker is told one period, work and priority: the N equal
            // tasks. A set's own timings per process is `exec serve`'s job.
            return Err(FieldError::new(
                "taskset",
                "{taskset} and --processes do not go together: a task set runs as threads (a set's own programs attach to `rtlab exec serve --taskset`)".to_string(),
            ));
        }
        if self.release == Mode::Executive && self.periodic.tasks > MAX_SERVE_TASKS {
            return Err(FieldError::new(
                "tasks",
                format!(
                    "{} tasks as processes under the executive is more than the {MAX_SERVE_TASKS} `rtlab exec serve` holds at once",
                    self.periodic.tasks
                ),
            ));
        }
        if let Some(focus) = &self.focus {
            if self.release != Mode::Executive {
                return Err(FieldError::new(
                    "focus",
                    "{focus} is the executive's (rtlab exec serve --focus): not with self-timed SCHED_FIFO processes".to_string(),
                ));
            }
            crate::serve::focused::check(focus, &[self.periodic.cpu], "cpu")?;
        }
        if self.periodic.tasks > MAX_PROCESSES {
            return Err(FieldError::new(
                "tasks",
                format!(
                    "{} tasks as processes is more than the {MAX_PROCESSES} a run may start",
                    self.periodic.tasks
                ),
            ));
        }
        Ok(())
    }

    /// What worker `task` is told: its slot in the task set, and how it is
    /// released (`socket`: the executive's, executive form only).
    pub fn worker_plan(&self, task: usize, socket: Option<&Path>) -> WorkerPlan {
        let p = &self.periodic;
        WorkerPlan {
            task,
            period_ns: p.period_ns,
            work_ns: p.work_ns,
            offset_ns: p.offset_of(task),
            activations: p.activations,
            cpu: p.cpu,
            priority: p.task_priority,
            executive_socket: match self.release {
                Mode::Executive => socket.map(Path::to_path_buf),
                Mode::Fifo => None,
            },
        }
    }
}

/// One worker process's part of the run, passed on its command line as
/// JSON (`PROGRAM exec process-worker PLAN`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerPlan {
    /// Its index: the task is `task{task}`.
    pub task: usize,
    pub period_ns: u64,
    pub work_ns: u64,
    /// Phase: fifo, after the common start; executive, on the executive's
    /// grid (its epoch + offset + k × period).
    pub offset_ns: u64,
    pub activations: u64,
    pub cpu: usize,
    /// SCHED_FIFO priority (fifo: set by the worker; executive: asked of
    /// the executive, which sets it).
    pub priority: u32,
    /// The executive's socket: released by `rtlab exec serve`; None:
    /// self-timed SCHED_FIFO.
    pub executive_socket: Option<PathBuf>,
}

impl WorkerPlan {
    /// The plan as its command-line argument.
    pub fn to_arg(&self) -> String {
        serde_json::to_string(self).expect("a plan always serializes")
    }

    /// The plan from its command-line argument, checked as a run's would be.
    pub fn from_arg(text: &str) -> Result<WorkerPlan, String> {
        let plan: WorkerPlan =
            serde_json::from_str(text).map_err(|e| format!("the worker plan {text:?}: {e}"))?;
        if plan.period_ns == 0 || plan.work_ns >= plan.period_ns {
            return Err(format!(
                "the worker plan {text:?}: the work must be shorter than a non-zero period"
            ));
        }
        if plan.activations == 0 || !(1..=99).contains(&plan.priority) {
            return Err(format!(
                "the worker plan {text:?}: no activation, or a priority outside 1-99"
            ));
        }
        Ok(plan)
    }

    /// The task's name, as its series are named.
    pub fn name(&self) -> String {
        format!("task{}", self.task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::periodic::DEFAULT_PERIOD_NS;
    use rtlab_core::settings::flag;

    fn config(tasks: usize, release: Mode) -> ProcessesConfig {
        let periodic = PeriodicConfig::new(tasks, DEFAULT_PERIOD_NS, 100_000, 1_000_000_000);
        ProcessesConfig::new(periodic, release, PathBuf::from("/proc/self/exe"))
    }

    #[test]
    fn the_process_count_is_limited() {
        assert_eq!(config(30, Mode::Fifo).validate(), Ok(()));
        assert_eq!(config(MAX_SERVE_TASKS, Mode::Executive).validate(), Ok(()));
        let e = config(MAX_SERVE_TASKS + 1, Mode::Executive)
            .validate()
            .unwrap_err();
        assert_eq!(e.field, "tasks");
        assert!(e
            .render(flag)
            .contains("more than the 80 `rtlab exec serve` holds"));
        let e = config(MAX_PROCESSES + 1, Mode::Fifo)
            .validate()
            .unwrap_err();
        assert_eq!(e.field, "tasks");
        assert_eq!(
            e.render(flag),
            "--tasks: 101 tasks as processes is more than the 100 a run may start"
        );
    }

    #[test]
    fn a_plan_goes_through_its_argument_unchanged() {
        let socket = Path::new("/tmp/x/exec.sock");
        let exec = config(4, Mode::Executive).worker_plan(3, Some(socket));
        assert_eq!(exec.offset_ns, 3 * DEFAULT_PERIOD_NS / 4);
        assert_eq!(exec.executive_socket.as_deref(), Some(socket));
        assert_eq!(exec.name(), "task3");
        assert_eq!(WorkerPlan::from_arg(&exec.to_arg()), Ok(exec));
        let fifo = config(4, Mode::Fifo).worker_plan(0, Some(socket));
        assert_eq!(fifo.executive_socket, None);
        assert_eq!(fifo.activations, 100);
    }

    #[test]
    fn a_bad_plan_is_refused() {
        let mut plan = config(1, Mode::Fifo).worker_plan(0, None);
        plan.work_ns = plan.period_ns;
        assert!(WorkerPlan::from_arg(&plan.to_arg())
            .unwrap_err()
            .contains("the work must be shorter"));
        assert!(WorkerPlan::from_arg("{")
            .unwrap_err()
            .starts_with("the worker plan"));
    }
}
