//! Writing runs: saving (all or nothing, never over another run),
//! updating a running run, deleting.

use std::path::Path;
use std::time::{Duration, Instant};

use rtlab_core::result::{check_run_id, printable, RunResult};

use crate::columns::{int, status_name};
use crate::db::{Sql, Value};
use crate::error::StoreError;
use crate::location::Location;
use crate::open::{Conn, Store};
use crate::push::{kept_dir, Existing};
use crate::unsaved::{keep_unsaved_in, unsaved_dirs, UnsavedDir};

/// How long a write that lost its PostgreSQL connection keeps trying to
/// connect again before it gives up (and the run is kept as a file).
pub const RECONNECT_FOR: Duration = Duration::from_secs(5);

impl Store {
    /// Inserts a new run in one transaction: the run row with the complete
    /// `RunResult` JSON, one `series` row per series and one `spikes` row
    /// per spike. A run with the same id already stored is never replaced:
    /// that is [`StoreError::Duplicate`] (see [`Store::update`]). An id that
    /// [`check_run_id`] refuses is [`StoreError::InvalidRun`]. On
    /// PostgreSQL a dropped connection is connected again and the save
    /// retried, for up to [`RECONNECT_FOR`].
    pub fn save(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.write_all(std::slice::from_ref(run), false, Existing::Refuse)
    }

    /// Replaces a run saved while it was running with what it became (a
    /// run may be saved when it starts and again when it ends). Refused
    /// unless the stored run has this id, is still `running`, and has the
    /// same probe and start: anything else would be another run.
    pub fn update(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.write_all(std::slice::from_ref(run), true, Existing::Refuse)
    }

    /// Saves every run of `runs` in one transaction: all of them are
    /// stored, or (an error, a crash, a kill) none. A run whose id is
    /// stored already, or comes twice, is [`StoreError::Duplicate`] and
    /// nothing is stored. `rtlab import` stores its files so.
    pub fn save_all(&mut self, runs: &[RunResult]) -> Result<(), StoreError> {
        self.write_all(runs, false, Existing::Refuse)
    }

    pub(crate) fn write_all(
        &mut self,
        runs: &[RunResult],
        update: bool,
        existing: Existing,
    ) -> Result<(), StoreError> {
        let mut encoded = Vec::with_capacity(runs.len());
        for run in runs {
            check_run_id(&run.id).map_err(|reason| self.invalid_run(run, reason))?;
            if self.read_only {
                return Err(self.invalid_run(run, "the store was opened read-only".into()));
            }
            encoded.push(
                Encoded::new(run)
                    .map_err(|e| self.invalid_run(run, format!("it cannot be serialized: {e}")))?,
            );
        }
        let give_up = Instant::now() + RECONNECT_FOR;
        let mut pause = Duration::from_millis(100);
        let mut existing = existing;
        loop {
            match self.write_encoded(runs, &encoded, update, existing) {
                Err(e) if e.is_connection() && Instant::now() < give_up => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                    // Failing to connect is the next attempt's error.
                    let _ = self.reconnect();
                    // The commit may have landed before the connection
                    // dropped: the same run found stored is this one.
                    existing = Existing::AcceptSame;
                }
                other => return other,
            }
        }
    }

    fn write_encoded(
        &mut self,
        runs: &[RunResult],
        encoded: &[Encoded],
        update: bool,
        existing: Existing,
    ) -> Result<(), StoreError> {
        // Read first: a store opened at an older schema (the migrations'
        // tests) lacks later columns and tables.
        let version = self.schema_version()?;
        self.transaction(|db, path| {
            for (run, encoded) in runs.iter().zip(encoded) {
                write_in(db, path, version, run, encoded, update, existing)?;
            }
            Ok(())
        })
    }

    /// A new connection to a PostgreSQL store in place of one that
    /// dropped (an SQLite store keeps its own).
    pub(crate) fn reconnect(&mut self) -> Result<(), StoreError> {
        if let Location::Postgres(target) = &self.location {
            let fresh = Store::open_postgres(target, crate::migrations::LATEST)?;
            self.conn = fresh.conn;
        }
        Ok(())
    }

    /// [`Store::reconnect`] when the connection to a PostgreSQL store has
    /// dropped (a push after a campaign that lost it).
    pub(crate) fn ensure_connected(&mut self) -> Result<(), StoreError> {
        match &self.conn {
            Conn::Postgres(client) if client.borrow().is_closed() => self.reconnect(),
            _ => Ok(()),
        }
    }

    /// Deletes the run with exactly this id (no prefix: deleting is not
    /// undone), with its series and spikes.
    pub fn delete(&mut self, id: &str) -> Result<(), StoreError> {
        self.delete_all(&[id])
    }

    /// Deletes the runs with exactly these ids in one transaction: all of
    /// them, or (one is not there any more, an error, a crash) none.
    pub fn delete_all<S: AsRef<str>>(&mut self, ids: &[S]) -> Result<(), StoreError> {
        let version = self.schema_version()?;
        self.transaction(|db, path| {
            for id in ids {
                let id = id.as_ref();
                let deleted =
                    delete_rows(db, version, id).map_err(|e| StoreError::from_db(path, e))?;
                if deleted == 0 {
                    return Err(StoreError::NotFound {
                        path: path.to_path_buf(),
                        id: id.to_string(),
                    });
                }
            }
            Ok(())
        })
    }

    fn invalid_run(&self, run: &RunResult, reason: String) -> StoreError {
        StoreError::InvalidRun {
            path: self.path.clone(),
            id: printable(&run.id, 80),
            reason,
        }
    }
}

/// Deletes a run's rows (tags, spikes, series, run), returning how many
/// runs. Explicit rather than by cascade alone, so it does not depend on
/// the connection's foreign-key setting.
fn delete_rows(db: &mut dyn Sql, version: u32, id: &str) -> Result<u64, crate::db::DbError> {
    let id = [Value::from(id)];
    if version >= 3 {
        db.execute("DELETE FROM tags WHERE run_id = ?1", &id)?;
    }
    db.execute("DELETE FROM spikes WHERE run_id = ?1", &id)?;
    db.execute("DELETE FROM series WHERE run_id = ?1", &id)?;
    db.execute("DELETE FROM runs WHERE id = ?1", &id)
}

/// The run stored under an id a write is given.
struct Stored {
    status: String,
    started_at: String,
    probe: String,
    samples: i64,
    host: Option<String>,
    result: String,
}

fn stored_run(db: &mut dyn Sql, id: &str) -> Result<Option<Stored>, crate::db::DbError> {
    let sql = format!(
        "SELECT r.status, r.started_at, r.probe,
             (SELECT {} FROM series WHERE run_id = r.id), r.host, r.result
         FROM runs AS r WHERE r.id = ?1",
        db.dialect().saturating_sum("samples")
    );
    Ok(db.row(&sql, &[id.into()])?.map(|row| {
        let mut row = row.into_iter();
        let mut text = || row.next().and_then(Value::into_text);
        let (status, started_at, probe) = (text(), text(), text());
        let samples = row.next().and_then(|v| v.int()).unwrap_or(0);
        Stored {
            status: status.unwrap_or_default(),
            started_at: started_at.unwrap_or_default(),
            probe: probe.unwrap_or_default(),
            samples,
            host: row.next().and_then(Value::into_text),
            result: row.next().and_then(Value::into_text).unwrap_or_default(),
        }
    }))
}

/// Inserts (or, for `update`, replaces the same running run with) one run
/// inside the caller's transaction.
fn write_in(
    db: &mut dyn Sql,
    path: &Path,
    version: u32,
    run: &RunResult,
    encoded: &Encoded,
    update: bool,
    existing: Existing,
) -> Result<(), StoreError> {
    let err = |e| StoreError::from_db(path, e);
    // Read in the transaction: another process may be saving too.
    let stored = stored_run(db, &run.id).map_err(err)?;
    let same_run = |found: &Stored| {
        found.status == "running" && found.started_at == run.started_at && found.probe == run.probe
    };
    match (&stored, update) {
        (None, false) => {}
        (Some(found), false)
            if existing == Existing::AcceptSame && found.result == encoded.result =>
        {
            return Ok(());
        }
        (Some(found), true) if same_run(found) => {
            delete_rows(db, version, &run.id).map_err(err)?;
        }
        (None, true) => {
            return Err(StoreError::NotFound {
                path: path.to_path_buf(),
                id: run.id.clone(),
            })
        }
        (Some(found), _) => {
            // Ids are unique per host: another host may have made this one.
            let other_host = match (&found.host, &run.environment.hostname) {
                (Some(theirs), ours) if Some(theirs) != ours.as_ref() => {
                    format!(", from host {}", printable(theirs, 64))
                }
                _ => String::new(),
            };
            return Err(StoreError::Duplicate {
                path: path.to_path_buf(),
                id: run.id.clone(),
                stored: format!(
                    "{}, {}, started {}, {} samples{other_host}",
                    found.probe,
                    found.status,
                    printable(&found.started_at, 40),
                    found.samples
                ),
            });
        }
    }
    let campaign = run.campaign.as_ref();
    let mut columns = vec![
        ("id", Value::from(&run.id)),
        ("format", (&run.schema).into()),
        ("probe", (&run.probe).into()),
        ("status", status_name(run.status).into()),
        ("host", run.environment.hostname.as_ref().into()),
        ("started_at", (&run.started_at).into()),
        ("ended_at", run.ended_at.as_ref().into()),
        ("elapsed_ns", int(run.elapsed_ns).into()),
        ("command", (&encoded.command).into()),
        ("config", (&encoded.config).into()),
        ("environment", (&encoded.environment).into()),
        ("warnings", (&encoded.warnings).into()),
        ("result", (&encoded.result).into()),
        ("campaign", campaign.map(|c| &c.name).into()),
        ("execution", campaign.map(|c| &c.execution).into()),
        ("plan_index", campaign.map(|c| int(c.index as u64)).into()),
        ("plan_total", campaign.map(|c| int(c.total as u64)).into()),
        ("configuration", campaign.map(|c| &c.configuration).into()),
        ("load", campaign.map(|c| &c.load).into()),
        ("repeat", campaign.map(|c| i64::from(c.repeat)).into()),
        ("loads", (&encoded.loads).into()),
    ];
    if version >= 4 {
        columns.push(("kernel", run.environment.kernel_release.as_ref().into()));
        columns.push(("preemption", (&run.environment.preempt_model).into()));
    }
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let marks: Vec<String> = (1..=columns.len()).map(|i| format!("?{i}")).collect();
    let values: Vec<Value> = columns.into_iter().map(|(_, value)| value).collect();
    db.execute(
        &format!(
            "INSERT INTO runs ({}) VALUES ({})",
            names.join(", "),
            marks.join(", ")
        ),
        &values,
    )
    .map_err(err)?;
    insert_series(db, run, encoded).map_err(err)
}

/// The `series` and `spikes` rows of a run.
fn insert_series(
    db: &mut dyn Sql,
    run: &RunResult,
    encoded: &Encoded,
) -> Result<(), crate::db::DbError> {
    for (position, (series, (hist_ns, hist_us))) in
        run.series.iter().zip(&encoded.histograms).enumerate()
    {
        let stats = &series.stats;
        let p = &stats.percentiles_ns;
        db.execute(
            "INSERT INTO series (run_id, position, name, metric, cpu, interval_ns,
                     samples, missed, dropped, min_ns, max_ns, mean_ns, stdev_ns,
                     p50_ns, p90_ns, p99_ns, p99_9_ns, p99_99_ns, max_at_ns, max_sample,
                     histogram_ns, histogram_us)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
                     ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
            &[
                (&run.id).into(),
                (position as i64).into(),
                (&series.name).into(),
                (&series.metric).into(),
                series.cpu.map(|c| int(c as u64)).into(),
                int(series.interval_ns).into(),
                int(stats.samples).into(),
                int(stats.missed).into(),
                int(stats.dropped).into(),
                int(stats.min_ns).into(),
                int(stats.max_ns).into(),
                stats.mean_ns.into(),
                stats.stdev_ns.into(),
                int(p.p50).into(),
                int(p.p90).into(),
                int(p.p99).into(),
                int(p.p99_9).into(),
                int(p.p99_99).into(),
                stats.max_at.map(|s| int(s.at_ns)).into(),
                stats.max_at.map(|s| int(s.sample)).into(),
                hist_ns.into(),
                hist_us.into(),
            ],
        )?;
        for (rank, spike) in stats.top.iter().enumerate() {
            db.execute(
                "INSERT INTO spikes (run_id, series_index, series, rank, sample, at_ns,
                         latency_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                &[
                    (&run.id).into(),
                    (position as i64).into(),
                    (&series.name).into(),
                    (rank as i64).into(),
                    int(spike.sample).into(),
                    int(spike.at_ns).into(),
                    int(spike.latency_ns).into(),
                ],
            )?;
        }
    }
    Ok(())
}

/// The JSON columns of a run, serialized before the transaction starts.
struct Encoded {
    result: String,
    command: String,
    config: String,
    environment: String,
    warnings: String,
    loads: String,
    /// `histogram_ns` and `histogram_us` of each series.
    histograms: Vec<(String, String)>,
}

impl Encoded {
    fn new(run: &RunResult) -> serde_json::Result<Encoded> {
        use serde_json::to_string;
        Ok(Encoded {
            result: to_string(run)?,
            command: to_string(&run.command)?,
            config: to_string(&run.config)?,
            environment: to_string(&run.environment)?,
            warnings: to_string(&run.warnings)?,
            loads: to_string(&run.loads)?,
            histograms: run
                .series
                .iter()
                .map(|s| {
                    Ok((
                        to_string(&s.stats.histogram_ns)?,
                        to_string(&s.stats.histogram_us)?,
                    ))
                })
                .collect::<serde_json::Result<_>>()?,
        })
    }
}

impl Store {
    /// [`Store::save`], and when that fails, the run kept as a file in
    /// the first of [`unsaved_dirs`] that takes it, so that it is not lost:
    /// the error ([`StoreError::Unsaved`]) names the file and how to store
    /// it later.
    pub fn save_or_keep(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.save_or_keep_in_dirs(run, &unsaved_dirs())
    }

    /// [`Store::save_or_keep`] with the fallback directory given.
    pub fn save_or_keep_in(&mut self, run: &RunResult, dir: &Path) -> Result<(), StoreError> {
        let dirs = [UnsavedDir {
            dir: dir.to_path_buf(),
            volatile: false,
        }];
        self.save_or_keep_in_dirs(run, &dirs)
    }

    /// [`Store::save_or_keep`] with the fallback directories given.
    pub fn save_or_keep_in_dirs(
        &mut self,
        run: &RunResult,
        dirs: &[UnsavedDir],
    ) -> Result<(), StoreError> {
        let cause = match self.save(run) {
            Ok(()) => return Ok(()),
            Err(cause) => cause,
        };
        // A run meant for a PostgreSQL store is kept where `rtlab store
        // push` for that store looks.
        let dirs: Vec<UnsavedDir> = dirs
            .iter()
            .map(|d| UnsavedDir {
                dir: kept_dir(&d.dir, &self.location),
                volatile: d.volatile,
            })
            .collect();
        Err(StoreError::Unsaved {
            path: self.path.clone(),
            id: printable(&run.id, 80),
            cause: Box::new(cause),
            kept: keep_unsaved_in(run, &dirs),
            push: matches!(self.location, Location::Postgres(_)),
        })
    }
}
