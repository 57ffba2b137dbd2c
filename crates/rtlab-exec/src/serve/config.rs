//! `exec serve`'s settings (defaults, limits, their one check) and the one
//! judge of an attach request: what the executive grants a process, or
//! why not.

use crate::periodic::{
    default_cpu, EXECUTIVE_PRIORITY, GUARD_NS, MIN_PERIOD_NS, RELEASE_EARLY_NS, TASK_PRIORITY,
};
use crate::taskset::TaskSet;
use rtlab_client::protocol::{AttachRequest, MAX_NAME};
use rtlab_core::cpuset::CpuSet;
use rtlab_core::result::Effective;
use rtlab_core::settings::FieldError;
use rtlab_core::units::human_duration;
use std::path::PathBuf;

/// Most processes attached at once (`--max-tasks`).
pub const DEFAULT_MAX_TASKS: usize = 64;
/// Highest `--max-tasks`: the status reply lists every attached process
/// in one message of at most [`rtlab_client::protocol::MAX_MESSAGE`].
pub const MAX_SERVE_TASKS: usize = 80;
/// Highest SCHED_FIFO priority a process may get (`--max-priority`).
pub const DEFAULT_MAX_PRIORITY: u32 = TASK_PRIORITY;
/// The executive threads' SCHED_FIFO priority (`--priority`).
pub const DEFAULT_PRIORITY: u32 = EXECUTIVE_PRIORITY;
/// Shortest hang timeout: a process busy on one activation longer than
/// max(this, [`HANG_PERIODS`] periods) is dropped (`--hang-timeout`).
pub const DEFAULT_HANG_TIMEOUT_NS: u64 = 1_000_000_000;
/// Periods of one activation's work after which a process counts as hung.
pub const HANG_PERIODS: u64 = 10;
/// Longest period: a process is looked after once a period at least.
pub const MAX_PERIOD_NS: u64 = 10_000_000_000;
/// Whether attach requests go through admission (`--admission on|off`).
pub const DEFAULT_ADMISSION: bool = true;
/// The first activation of a process is at least this far from its attach
/// (the reply must reach it and it must come to wait).
pub const ATTACH_MARGIN_NS: u64 = 20_000_000;

/// Everything `exec serve` needs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where it listens (`--socket`).
    pub socket: PathBuf,
    /// The CPUs processes run on, one executive thread each (`--cpus`).
    pub cpus: Vec<usize>,
    /// Users besides root who may attach (`--allow-user`).
    pub allow_users: Vec<u32>,
    /// Groups whose members may attach, supplementary groups included
    /// (`--allow-group`).
    pub allow_groups: Vec<u32>,
    /// SCHED_FIFO priority of the executive threads (`--priority`).
    pub priority: u32,
    /// Highest priority a process may ask for (`--max-priority`); a
    /// process that asks none gets it.
    pub max_priority: u32,
    /// Most processes attached at once (`--max-tasks`).
    pub max_tasks: usize,
    /// Busy on one activation this long: dropped (`--hang-timeout`);
    /// None: max(1 s, 10 periods) per process.
    pub hang_timeout_ns: Option<u64>,
    /// How early an executive wakes before an activation and spins.
    pub guard_ns: u64,
    /// How early a process is released; it spins to its instant.
    pub release_early_ns: u64,
    /// Processes attach to its tasks by name, with their timing (`--taskset`).
    pub taskset: Option<TaskSet>,
    /// Each attach request is admitted by response-time analysis beside
    /// the processes attached, or refused with the failed test
    /// (`--admission`).
    pub admission: bool,
    /// The command line, for the runs' records.
    pub command: Vec<String>,
    /// What the server process holds (memory locked, PM QoS), for the
    /// runs' records.
    pub effective: Effective,
    /// CPUs given to the executive and its processes alone (`--focus`);
    /// `cpus` must be among them.
    pub focus: Option<CpuSet>,
}

impl ServeConfig {
    /// Every default, listening at `socket`.
    pub fn new(socket: PathBuf) -> ServeConfig {
        ServeConfig {
            socket,
            cpus: vec![default_cpu()],
            allow_users: Vec::new(),
            allow_groups: Vec::new(),
            priority: DEFAULT_PRIORITY,
            max_priority: DEFAULT_MAX_PRIORITY,
            max_tasks: DEFAULT_MAX_TASKS,
            hang_timeout_ns: None,
            guard_ns: GUARD_NS,
            release_early_ns: RELEASE_EARLY_NS,
            taskset: None,
            admission: DEFAULT_ADMISSION,
            command: Vec::new(),
            effective: Effective::default(),
            focus: None,
        }
    }

    /// Checks the settings together; the field is the flag's name.
    pub fn validate(&self) -> Result<(), FieldError> {
        let fail = |field, message: String| Err(FieldError::new(field, message));
        let online = CpuSet::online();
        if self.cpus.is_empty() {
            return fail("cpus", "no CPU given".into());
        }
        if let Some(cpu) = self.cpus.iter().find(|&&cpu| !online.contains(cpu)) {
            return fail(
                "cpus",
                format!("{{cpus}}: CPU {cpu} is not online (online: {online})"),
            );
        }
        if let Some(focus) = &self.focus {
            super::focused::check(focus, &self.cpus, "cpus")?;
        }
        if !(2..=99).contains(&self.priority) {
            return fail(
                "priority",
                format!("{{priority}} {} is not in 2-99", self.priority),
            );
        }
        if !(1..self.priority).contains(&self.max_priority) {
            return fail(
                "max_priority",
                format!(
                    "{{max_priority}} {} must be 1-{}, below the executive's {{priority}} {}",
                    self.max_priority,
                    self.priority - 1,
                    self.priority
                ),
            );
        }
        if !(1..=MAX_SERVE_TASKS).contains(&self.max_tasks) {
            return fail(
                "max_tasks",
                format!(
                    "{{max_tasks}} {} is not in 1-{MAX_SERVE_TASKS}",
                    self.max_tasks
                ),
            );
        }
        if self.hang_timeout_ns == Some(0) {
            return fail("hang_timeout", "{hang_timeout} must be above 0".into());
        }
        if self.release_early_ns > self.guard_ns || self.guard_ns >= ATTACH_MARGIN_NS {
            return fail(
                "release_early",
                format!(
                    "the release margin {} must be at most the guard {}, below {}",
                    human_duration(self.release_early_ns),
                    human_duration(self.guard_ns),
                    human_duration(ATTACH_MARGIN_NS)
                ),
            );
        }
        if let Some(task) = self
            .taskset
            .iter()
            .flat_map(|set| &set.tasks)
            .find(|task| task.priority > self.max_priority || task.priority == 0)
        {
            return fail(
                "taskset",
                format!(
                    "task {}: priority {} is not in 1-{} ({{max_priority}})",
                    task.name, task.priority, self.max_priority
                ),
            );
        }
        Ok(())
    }

    /// How long a process may stay busy on one activation.
    pub fn hang_timeout_of(&self, period_ns: u64) -> u64 {
        self.hang_timeout_ns
            .unwrap_or_else(|| DEFAULT_HANG_TIMEOUT_NS.max(period_ns.saturating_mul(HANG_PERIODS)))
    }
}

/// What a process gets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    pub name: String,
    pub period_ns: u64,
    pub offset_ns: u64,
    pub deadline_ns: u64,
    pub budget_ns: Option<u64>,
    pub cpu: usize,
    pub priority: u32,
}

/// Why a request is not granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A parameter is wrong: the field is the request's key.
    Invalid(FieldError),
    /// Permission, limits or the task set.
    Refused(String),
}

impl Refusal {
    /// The reply's `kind` and message.
    pub fn kind_and_message(&self) -> (&'static str, String) {
        match self {
            Refusal::Invalid(e) => ("invalid", e.render(|key| key.to_string())),
            Refusal::Refused(why) => ("refused", why.clone()),
        }
    }
}

/// A task name as series names and terminals take it: ASCII letters,
/// digits, `-`, `_` and `.`, 1 to [`MAX_NAME`] bytes.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `comm` (a process's name, its own choice) made a valid task name.
pub fn name_from_comm(comm: &[u8]) -> String {
    let name: String = comm
        .iter()
        .take(MAX_NAME)
        .map(|&b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "task".into()
    } else {
        name
    }
}

/// Judges `request` (from a process named `comm`): its timing (from the
/// task set when there is one), its priority under the cap and its CPU
/// among the executive's (the least loaded when it asks none; `load(cpu)`
/// is the processes on each).
pub fn grant(
    config: &ServeConfig,
    request: &AttachRequest,
    comm: &[u8],
    load: impl Fn(usize) -> usize,
) -> Result<Grant, Refusal> {
    let invalid = |field, message: String| Err(Refusal::Invalid(FieldError::new(field, message)));
    if request.version != rtlab_client::protocol::VERSION {
        return invalid(
            "version",
            format!(
                "protocol version {} is not this executive's {}",
                request.version,
                rtlab_client::protocol::VERSION
            ),
        );
    }
    let name = match &request.name {
        Some(name) if !valid_name(name) => {
            return invalid(
                "name",
                format!("{{name}} must be 1-{MAX_NAME} ASCII letters, digits, '-', '_' or '.'"),
            )
        }
        Some(name) => name.clone(),
        None => name_from_comm(comm),
    };
    let mut granted = match &config.taskset {
        Some(set) => {
            let Some(task) = set.tasks.iter().find(|t| t.name == name) else {
                return Err(Refusal::Refused(format!(
                    "no task named {name} in the executive's task set"
                )));
            };
            Grant {
                name,
                period_ns: task.period_ns,
                offset_ns: task.offset_ns,
                deadline_ns: task.deadline_ns,
                budget_ns: task.budget_ns,
                cpu: task.cpu.unwrap_or(usize::MAX),
                priority: task.priority,
            }
        }
        None => Grant {
            name,
            period_ns: request.period_ns,
            offset_ns: request.offset_ns,
            deadline_ns: request.deadline_ns.unwrap_or(request.period_ns),
            budget_ns: request.budget_ns,
            cpu: request.cpu.map_or(usize::MAX, |c| c as usize),
            priority: request.priority.unwrap_or(config.max_priority),
        },
    };
    let g = &granted;
    if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&g.period_ns) {
        return invalid(
            "period_ns",
            format!(
                "{{period_ns}} {} is not in {}-{}",
                human_duration(g.period_ns),
                human_duration(MIN_PERIOD_NS),
                human_duration(MAX_PERIOD_NS)
            ),
        );
    }
    if g.offset_ns >= g.period_ns {
        return invalid("offset_ns", "{offset_ns} must be below the period".into());
    }
    if g.deadline_ns == 0 || g.deadline_ns > g.period_ns {
        return invalid(
            "deadline_ns",
            "{deadline_ns} must be 1 ns to the period".into(),
        );
    }
    if g.budget_ns.is_some_and(|b| b == 0 || b > g.deadline_ns) {
        return invalid(
            "budget_ns",
            "{budget_ns} must be 1 ns to the deadline".into(),
        );
    }
    if !(1..=config.max_priority).contains(&g.priority) {
        return invalid(
            "priority",
            format!(
                "{{priority}} {} is not in 1-{} (the executive's --max-priority)",
                g.priority, config.max_priority
            ),
        );
    }
    if g.cpu == usize::MAX {
        granted.cpu = *config
            .cpus
            .iter()
            .min_by_key(|&&cpu| load(cpu))
            .expect("validated: at least one CPU");
    } else if !config.cpus.contains(&g.cpu) {
        return invalid(
            "cpu",
            format!(
                "{{cpu}} {} is not one of the executive's CPUs {:?}",
                g.cpu, config.cpus
            ),
        );
    }
    Ok(granted)
}

/// The first activation at least [`ATTACH_MARGIN_NS`] after `now_ns` on
/// the grid `epoch + offset + k × period`.
pub fn first_activation(epoch_ns: u64, grant: &Grant, now_ns: u64) -> u64 {
    let base = epoch_ns + grant.offset_ns;
    let earliest = now_ns + ATTACH_MARGIN_NS;
    if earliest <= base {
        return base;
    }
    base + (earliest - base).div_ceil(grant.period_ns) * grant.period_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(period_ns: u64) -> AttachRequest {
        AttachRequest {
            version: rtlab_client::protocol::VERSION,
            tid: 1,
            period_ns,
            offset_ns: 0,
            deadline_ns: None,
            budget_ns: None,
            cpu: None,
            priority: None,
            name: None,
        }
    }

    fn config() -> ServeConfig {
        ServeConfig {
            cpus: vec![0],
            ..ServeConfig::new("/tmp/x.sock".into())
        }
    }

    fn field_of(result: Result<Grant, Refusal>) -> &'static str {
        match result {
            Err(Refusal::Invalid(e)) => e.field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_defaults_are_valid_and_granted() {
        assert_eq!(config().validate(), Ok(()));
        let g = grant(&config(), &request(1_000_000), b"my prog\x1b", |_| 0).unwrap();
        assert_eq!(g.name, "my_prog_");
        assert_eq!(
            (g.deadline_ns, g.priority, g.cpu),
            (1_000_000, TASK_PRIORITY, 0)
        );
    }

    #[test]
    fn hostile_requests_name_their_field() {
        let c = config();
        assert_eq!(field_of(grant(&c, &request(0), b"x", |_| 0)), "period_ns");
        let high = AttachRequest {
            priority: Some(99),
            ..request(1_000_000)
        };
        assert_eq!(field_of(grant(&c, &high, b"x", |_| 0)), "priority");
        let offset = AttachRequest {
            offset_ns: 1_000_000,
            ..request(1_000_000)
        };
        assert_eq!(field_of(grant(&c, &offset, b"x", |_| 0)), "offset_ns");
        let cpu = AttachRequest {
            cpu: Some(7),
            ..request(1_000_000)
        };
        assert_eq!(field_of(grant(&c, &cpu, b"x", |_| 0)), "cpu");
        let name = AttachRequest {
            name: Some("../x".into()),
            ..request(1_000_000)
        };
        assert_eq!(field_of(grant(&c, &name, b"x", |_| 0)), "name");
        let budget = AttachRequest {
            budget_ns: Some(2_000_000),
            ..request(1_000_000)
        };
        assert_eq!(field_of(grant(&c, &budget, b"x", |_| 0)), "budget_ns");
    }

    #[test]
    fn a_status_of_the_most_processes_fits_in_one_message() {
        use rtlab_client::protocol::{Reply, StatusReply, TaskStatus, MAX_MESSAGE};
        let widest = TaskStatus {
            pid: i32::MAX,
            tid: i32::MAX,
            uid: u32::MAX,
            name: "n".repeat(MAX_NAME),
            cpu: u32::MAX,
            priority: u32::MAX,
            period_ns: u64::MAX,
            stats: rtlab_client::Stats {
                activations: u64::MAX,
                missed_activations: u64::MAX,
                deadline_misses: u64::MAX,
                budget_overruns: u64::MAX,
                lateness_p50_ns: u64::MAX,
                lateness_p99_ns: u64::MAX,
                lateness_p999_ns: u64::MAX,
                lateness_max_ns: u64::MAX,
                response_p50_ns: u64::MAX,
                response_p99_ns: u64::MAX,
                response_p999_ns: u64::MAX,
                response_max_ns: u64::MAX,
            },
        };
        let status = Reply::Status(StatusReply {
            pid: u32::MAX,
            socket: "s".repeat(107),
            cpus: (0..1024).collect(),
            tasks: vec![widest; MAX_SERVE_TASKS],
        });
        let bytes = serde_json::to_vec(&status).unwrap().len();
        assert!(bytes <= MAX_MESSAGE, "{bytes} bytes");
        let too_many = ServeConfig {
            max_tasks: MAX_SERVE_TASKS + 1,
            ..config()
        };
        assert_eq!(too_many.validate().unwrap_err().field, "max_tasks");
    }

    #[test]
    fn the_executive_stays_above_its_processes() {
        let c = ServeConfig {
            max_priority: 90,
            ..config()
        };
        assert_eq!(c.validate().unwrap_err().field, "max_priority");
    }

    #[test]
    fn the_first_activation_is_on_the_grid_and_a_margin_away() {
        let g = grant(&config(), &request(1_000_000), b"x", |_| 0).unwrap();
        let first = first_activation(1_000, &g, 5_000_000);
        assert_eq!((first - 1_000) % 1_000_000, 0);
        assert!(first >= 5_000_000 + ATTACH_MARGIN_NS);
        assert!(first < 5_000_000 + ATTACH_MARGIN_NS + 1_000_000);
    }
}
