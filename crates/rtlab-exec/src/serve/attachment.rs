//! One attached process, from its registration to its run: its grant, its
//! promotion (journaled first), its page and slot, the samples drained
//! from its ring into the two series, the checks that it is alive and
//! yields, and the [`RunResult`] it becomes.

use super::access::Peer;
use super::config::{first_activation, Grant, ServeConfig};
use super::executive::Table;
use super::watch::Watch;
use rtlab_client::protocol::TaskStatus;
use rtlab_client::shm::{Mapping, STATE_DROPPED, STATE_STOPPED};
use rtlab_client::Stats;
use rtlab_core::cpuset::CpuSet;
use rtlab_core::env::Environment;
use rtlab_core::journal::{ForeignThread, Journal};
use rtlab_core::record::SeriesRecorder;
use rtlab_core::result::{timestamp_now, RunResult, RunStatus, Series, ThreadSettings, RUN_SCHEMA};
use rtlab_core::sched::{self, Policy, SchedParams, ThreadSched};
use std::os::fd::OwnedFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// How an attachment ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// The process detached.
    Detached,
    /// The process died (or closed its connection).
    Died,
    /// The executive dropped it: why.
    Dropped(String),
    /// The executive stopped.
    Stopped,
}

impl End {
    fn status(&self) -> RunStatus {
        match self {
            End::Detached => RunStatus::Complete,
            End::Died | End::Stopped => RunStatus::Partial,
            End::Dropped(_) => RunStatus::Failed,
        }
    }

    /// What the run's warnings and the server's line say.
    pub fn describe(&self) -> String {
        match self {
            End::Detached => "detached".into(),
            End::Died => "the process died (or closed its connection to the executive)".into(),
            End::Dropped(why) => format!("dropped by the executive: {why}"),
            End::Stopped => "the executive stopped".into(),
        }
    }
}

fn lock(journal: &Mutex<Journal>) -> std::sync::MutexGuard<'_, Journal> {
    journal.lock().unwrap_or_else(|p| p.into_inner())
}

/// Gives thread `thread` its grant: journaled first, then pinned to its
/// CPU and made SCHED_FIFO at its priority (reset on fork: its children
/// are not real-time). On failure the thread is put back.
fn promote(
    journal: &Mutex<Journal>,
    thread: ForeignThread,
    grant: &Grant,
) -> Result<ThreadSettings, String> {
    let old = sched::thread_sched(thread.tid).map_err(|e| format!("sched_getattr: {e}"))?;
    lock(journal)
        .note_thread_sched(thread, &format!("exec serve: task {}", grant.name))
        .map_err(|e| e.to_string())?;
    let fifo = SchedParams {
        policy: Policy::Fifo,
        priority: grant.priority,
        deadline: None,
    };
    let promoted = sched::set_thread_affinity(thread.tid, &CpuSet::from_cpus(vec![grant.cpu]))
        .map_err(|e| format!("sched_setaffinity(CPU {}): {e}", grant.cpu))
        .and_then(|()| {
            sched::set_thread(
                thread.tid,
                &ThreadSched {
                    params: fifo,
                    reset_on_fork: true,
                    nice: old.nice,
                },
            )
            .map_err(|e| format!("sched_setattr({fifo}): {e}"))
        });
    if let Err(why) = promoted {
        lock(journal).restore_thread_sched(thread.tid);
        return Err(why);
    }
    Ok(ThreadSettings {
        tid: thread.tid,
        pinned_cpu: Some(grant.cpu),
        requested: fifo,
        actual: sched::thread_sched(thread.tid).ok().map(|s| s.params),
        timer_slack_ns: None,
    })
}

/// One attached process.
pub struct Attachment {
    pub connection: OwnedFd,
    pub peer: Peer,
    pub thread: ForeignThread,
    pub comm: String,
    pub grant: Grant,
    /// The executive (index into the server's) and the slot.
    pub executive: usize,
    slot: usize,
    table: Arc<Table>,
    /// None once unmapped (or leaked, when the executive never let go).
    mapping: Option<Mapping>,
    pub first_ns: u64,
    hang_timeout_ns: u64,
    watch: Watch,
    tail: u64,
    lateness: SeriesRecorder,
    response: SeriesRecorder,
    budget_overruns: u64,
    /// Samples with impossible times, not taken.
    unbelieved: u64,
    settings: ThreadSettings,
    started_at: String,
}

/// What [`Attachment::start`] needs besides the grant.
pub struct Placement<'a> {
    pub journal: &'a Mutex<Journal>,
    pub executive: usize,
    pub table: Arc<Table>,
    pub epoch_ns: u64,
    pub hang_timeout_ns: u64,
}

impl Attachment {
    /// Promotes the thread, makes its page and arms its slot. The page's
    /// fd goes with the reply. Err: why it cannot be attached (nothing
    /// left changed).
    pub fn start(
        connection: OwnedFd,
        peer: Peer,
        thread: ForeignThread,
        comm: String,
        grant: Grant,
        at: Placement<'_>,
    ) -> Result<(Attachment, OwnedFd), (OwnedFd, String)> {
        let (mapping, fd) = match Mapping::create() {
            Ok(made) => made,
            Err(e) => return Err((connection, format!("the shared page: {e}"))),
        };
        let settings = match promote(at.journal, thread, &grant) {
            Ok(settings) => settings,
            Err(why) => {
                return Err((
                    connection,
                    format!("cannot promote thread {}: {why}", thread.tid),
                ))
            }
        };
        let first_ns = first_activation(at.epoch_ns, &grant, rtlab_core::clock::now_ns());
        let Some(slot) = at.table.arm(mapping.page(), grant.period_ns, first_ns) else {
            lock(at.journal).restore_thread_sched(thread.tid);
            return Err((connection, format!("CPU {} has no free slot", grant.cpu)));
        };
        let attachment = Attachment {
            connection,
            watch: Watch::new(peer.pid, thread.tid, at.hang_timeout_ns),
            peer,
            thread,
            comm,
            grant,
            executive: at.executive,
            slot,
            table: at.table,
            mapping: Some(mapping),
            first_ns,
            hang_timeout_ns: at.hang_timeout_ns,
            tail: 0,
            lateness: SeriesRecorder::new(None),
            response: SeriesRecorder::new(None),
            budget_overruns: 0,
            unbelieved: 0,
            settings,
            started_at: timestamp_now(),
        };
        Ok((attachment, fd))
    }

    /// Moves the samples the process pushed into its series, never more
    /// than the executive released. Each value is the process's own word:
    /// only its own statistics can be wrong.
    pub fn drain(&mut self) {
        let Some(mapping) = &self.mapping else {
            return;
        };
        // The samples' head first, then what they are checked against: a
        // sample pushed after `latest` was read would be for an activation
        // later than it and thrown away as impossible (CI lost one of 200
        // so, to the executive's next release racing this drain).
        let head = mapping.page().head();
        // The release count is a wrapping u32 (the page's futex word).
        let released = self.table.slot(self.slot).released();
        let most = u64::from(released.wrapping_sub(self.lateness.samples() as u32));
        let (first, deadline, budget) =
            (self.first_ns, self.grant.deadline_ns, self.grant.budget_ns);
        // An activation the executive never made, or work ending after
        // now: impossible times, not believed (nor let near the series).
        let (latest, now) = (
            self.table.slot(self.slot).activation_ns(),
            rtlab_core::clock::now_ns(),
        );
        let (lateness, response, overruns, unbelieved) = (
            &mut self.lateness,
            &mut self.response,
            &mut self.budget_overruns,
            &mut self.unbelieved,
        );
        self.tail = mapping.page().drain_to(self.tail, head, most, |sample| {
            if sample.activation_ns < first
                || sample.activation_ns > latest
                || sample.start_ns > sample.end_ns
                || sample.end_ns > now
            {
                *unbelieved += 1;
                return;
            }
            let at_ns = sample.activation_ns - first;
            let late = sample.start_ns.saturating_sub(sample.activation_ns);
            let responded = sample.end_ns.saturating_sub(sample.activation_ns);
            lateness.record(late, at_ns, 0);
            response.record(responded, at_ns, u64::from(responded > deadline));
            let work = sample.end_ns.saturating_sub(sample.start_ns);
            *overruns += u64::from(budget.is_some_and(|b| work > b));
        });
    }

    /// Why the process must be dropped now, if it must: it moved its
    /// thread off its CPU (any thread may set its own affinity, and would
    /// run at its granted priority where the executive does not plan),
    /// busy on one activation past the hang timeout (its page says so),
    /// or on the CPU a whole window without once waiting (the kernel says
    /// so).
    pub fn misbehaves(&mut self, now_ns: u64) -> Option<String> {
        if let Ok(cpus) = sched::thread_affinity(self.thread.tid) {
            if cpus.len() != 1 || !cpus.contains(self.grant.cpu) {
                return Some(format!(
                    "it moved its thread off CPU {} (its CPUs now: {cpus})",
                    self.grant.cpu
                ));
            }
        }
        let slot = self.table.slot(self.slot);
        let page = self.mapping.as_ref()?.page();
        let activation = slot.activation_ns();
        let busy = page.client.done_seq.load(Ordering::Acquire) != slot.released();
        if busy && activation > 0 && now_ns > activation + self.hang_timeout_ns {
            return Some(format!(
                "it worked on one activation for more than {} ms (the hang timeout)",
                self.hang_timeout_ns / 1_000_000
            ));
        }
        self.watch.check(now_ns)
    }

    /// The process's figures now (`exec status`).
    pub fn status(&self) -> TaskStatus {
        let late = self.lateness.stats();
        let resp = self.response.stats();
        TaskStatus {
            pid: self.peer.pid,
            tid: self.thread.tid,
            uid: self.peer.uid,
            name: self.grant.name.clone(),
            cpu: self.grant.cpu as u32,
            priority: self.grant.priority,
            period_ns: self.grant.period_ns,
            stats: Stats {
                activations: late.samples,
                missed_activations: self.table.slot(self.slot).missed(),
                deadline_misses: resp.missed,
                budget_overruns: self.budget_overruns,
                lateness_p50_ns: late.percentiles_ns.p50,
                lateness_p99_ns: late.percentiles_ns.p99,
                lateness_p999_ns: late.percentiles_ns.p99_9,
                lateness_max_ns: late.max_ns,
                response_p50_ns: resp.percentiles_ns.p50,
                response_p99_ns: resp.percentiles_ns.p99,
                response_p999_ns: resp.percentiles_ns.p99_9,
                response_max_ns: resp.max_ns,
            },
        }
    }

    /// Ends the attachment: the process told (the state word, woken), its
    /// slot retired, its last samples drained, its thread put back, its
    /// page unmapped; returns its run.
    pub fn finish(
        mut self,
        end: &End,
        executive_running: bool,
        journal: &Mutex<Journal>,
        environment: &Environment,
        config: &ServeConfig,
    ) -> RunResult {
        if let Some(mapping) = &self.mapping {
            let state = match end {
                End::Dropped(_) => Some(STATE_DROPPED),
                End::Stopped => Some(STATE_STOPPED),
                End::Detached | End::Died => None,
            };
            if let Some(state) = state {
                let server = &mapping.page().server;
                server.state.store(state, Ordering::Release);
                server.release_seq.fetch_add(1, Ordering::Release);
                rtlab_client::futex::wake_all(&server.release_seq);
            }
        }
        let retired = self
            .table
            .retire(self.slot, executive_running, 1_000_000_000);
        self.drain();
        let mut warnings = Vec::new();
        if let Some(restored) = lock(journal).restore_thread_sched(self.thread.tid) {
            if !restored.ok() {
                warnings.push(restored.to_string());
            }
        }
        if let Some(mapping) = self.mapping.take() {
            if retired {
                drop(mapping);
            } else {
                // The executive may still read it: leak it rather than unmap.
                std::mem::forget(mapping);
                warnings.push("the executive did not let go of the page: it is kept mapped".into());
            }
        }
        self.into_run(end, warnings, environment, config)
    }

    fn into_run(
        mut self,
        end: &End,
        mut warnings: Vec<String>,
        environment: &Environment,
        config: &ServeConfig,
    ) -> RunResult {
        let missed = self.table.slot(self.slot).missed();
        self.lateness.add_missed(missed);
        if *end != End::Detached {
            warnings.insert(0, end.describe());
        }
        if missed > 0 {
            warnings.push(format!(
                "{missed} activations missed (the process was still working): the `missed` count of {}.lateness",
                self.grant.name
            ));
        }
        if self.unbelieved > 0 {
            warnings.push(format!(
                "{} samples the process pushed had impossible times (an activation the executive never made, or work ending in the future): not taken",
                self.unbelieved
            ));
        }
        if self.budget_overruns > 0 {
            warnings.push(format!(
                "{} activations worked longer than the budget",
                self.budget_overruns
            ));
        }
        let series = |suffix: &str, metric: &str, stats| Series {
            name: format!("{}.{suffix}", self.grant.name),
            metric: metric.into(),
            cpu: Some(self.grant.cpu),
            interval_ns: self.grant.period_ns,
            thread: self.settings.clone(),
            stats,
        };
        let series = vec![
            series("lateness", "activation_lateness", self.lateness.stats()),
            series("response", "response_time", self.response.stats()),
        ];
        let now = rtlab_core::clock::now_ns();
        RunResult {
            schema: RUN_SCHEMA.into(),
            id: RunResult::new_id(),
            probe: "serve".into(),
            status: end.status(),
            started_at: self.started_at.clone(),
            ended_at: Some(timestamp_now()),
            elapsed_ns: now.saturating_sub(self.first_ns),
            command: config.command.clone(),
            config: serde_json::json!({
                "name": self.grant.name,
                "pid": self.peer.pid,
                "tid": self.thread.tid,
                "comm": self.comm,
                "uid": self.peer.uid,
                "period_ns": self.grant.period_ns,
                "offset_ns": self.grant.offset_ns,
                "deadline_ns": self.grant.deadline_ns,
                "budget_ns": self.grant.budget_ns,
                "cpu": self.grant.cpu,
                "priority": self.grant.priority,
                "budget_overruns": self.budget_overruns,
                "end": end.describe(),
            }),
            effective: config.effective.clone(),
            environment: environment.clone(),
            series,
            break_event: None,
            loads: Vec::new(),
            campaign: None,
            noise: None,
            net: None,
            traffic: None,
            witness: None,
            executive: None,
            warnings,
        }
    }
}
