//! Writing runs: saving (all or nothing, never over another run),
//! updating a running run, deleting.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

use rtlab_core::result::{check_run_id, printable, RunResult};

use crate::columns::{int, saturating_sum, status_name};
use crate::error::StoreError;
use crate::open::{Store, BUSY_TIMEOUT};
use crate::unsaved::{keep_unsaved_in, unsaved_dirs, UnsavedDir};

impl Store {
    /// Inserts a new run in one transaction: the run row with the complete
    /// `RunResult` JSON, one `series` row per series and one `spikes` row
    /// per spike. A run with the same id already stored is never replaced:
    /// that is [`StoreError::Duplicate`] (see [`Store::update`]). An id that
    /// [`check_run_id`] refuses is [`StoreError::InvalidRun`].
    pub fn save(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.write(run, false)
    }

    /// Replaces a run saved while it was running with what it became (a
    /// run may be saved when it starts and again when it ends). Refused
    /// unless the stored run has this id, is still `running`, and has the
    /// same probe and start: anything else would be another run.
    pub fn update(&mut self, run: &RunResult) -> Result<(), StoreError> {
        self.write(run, true)
    }

    fn write(&mut self, run: &RunResult, update: bool) -> Result<(), StoreError> {
        self.write_all(std::slice::from_ref(run), update)
    }

    /// Saves every run of `runs` in one transaction: all of them are
    /// stored, or (an error, a crash, a kill) none. A run whose id is
    /// stored already, or comes twice, is [`StoreError::Duplicate`] and
    /// nothing is stored. `rtlab import` stores its files so.
    pub fn save_all(&mut self, runs: &[RunResult]) -> Result<(), StoreError> {
        self.write_all(runs, false)
    }

    fn write_all(&mut self, runs: &[RunResult], update: bool) -> Result<(), StoreError> {
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
        let path = self.path.clone();
        let err = |e| StoreError::sqlite(&path, BUSY_TIMEOUT, e);
        let tx = self.write_transaction()?;
        for (run, encoded) in runs.iter().zip(&encoded) {
            write_in(&tx, &path, run, encoded, update)?;
        }
        tx.commit().map_err(err)
    }

    /// Deletes the run with exactly this id (no prefix: deleting is not
    /// undone), with its series and spikes.
    pub fn delete(&mut self, id: &str) -> Result<(), StoreError> {
        self.delete_all(&[id])
    }

    /// Deletes the runs with exactly these ids in one transaction: all of
    /// them, or (one is not there any more, an error, a crash) none.
    pub fn delete_all<S: AsRef<str>>(&mut self, ids: &[S]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e| StoreError::sqlite(&path, BUSY_TIMEOUT, e);
        let tx = self.write_transaction()?;
        for id in ids {
            let id = id.as_ref();
            let deleted = delete_rows(&tx, id).map_err(err)?;
            if deleted == 0 {
                return Err(StoreError::NotFound {
                    path: path.clone(),
                    id: id.to_string(),
                });
            }
        }
        tx.commit().map_err(err)
    }

    fn invalid_run(&self, run: &RunResult, reason: String) -> StoreError {
        StoreError::InvalidRun {
            path: self.path.clone(),
            id: printable(&run.id, 80),
            reason,
        }
    }
}

/// Deletes a run's rows (spikes, series, run), returning how many runs.
/// Explicit rather than by cascade alone, so it does not depend on the
/// connection's foreign-key setting.
fn delete_rows(conn: &Connection, id: &str) -> rusqlite::Result<usize> {
    // A store opened at an older schema (tests of the migrations) has no tags.
    let tags: Option<i64> = conn
        .query_row(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'tags'",
            [],
            |row| row.get(0),
        )
        .optional()?;
    if tags.is_some() {
        conn.execute("DELETE FROM tags WHERE run_id = ?1", [id])?;
    }
    conn.execute("DELETE FROM spikes WHERE run_id = ?1", [id])?;
    conn.execute("DELETE FROM series WHERE run_id = ?1", [id])?;
    conn.execute("DELETE FROM runs WHERE id = ?1", [id])
}

/// Inserts (or, for `update`, replaces the same running run with) one run
/// inside the caller's transaction.
fn write_in(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    run: &RunResult,
    encoded: &Encoded,
    update: bool,
) -> Result<(), StoreError> {
    let err = |e| StoreError::sqlite(path, BUSY_TIMEOUT, e);
    let campaign = run.campaign.as_ref();
    // Read in the transaction: another process may be saving too.
    let stored: Option<(String, String, String, i64)> = tx
        .query_row(
            &format!(
                "SELECT r.status, r.started_at, r.probe,
                     (SELECT {} FROM series WHERE run_id = r.id)
                 FROM runs AS r WHERE r.id = ?1",
                saturating_sum("samples")
            ),
            [&run.id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()
        .map_err(err)?;
    let same_run = |(status, started_at, probe, _): &(String, String, String, i64)| {
        status == "running" && *started_at == run.started_at && *probe == run.probe
    };
    match (&stored, update) {
        (None, false) => {}
        (Some(found), true) if same_run(found) => {
            delete_rows(tx, &run.id).map_err(err)?;
        }
        (None, true) => {
            return Err(StoreError::NotFound {
                path: path.to_path_buf(),
                id: run.id.clone(),
            })
        }
        (Some((status, started_at, probe, samples)), _) => {
            return Err(StoreError::Duplicate {
                path: path.to_path_buf(),
                id: run.id.clone(),
                stored: format!(
                    "{probe}, {status}, started {}, {samples} samples",
                    printable(started_at, 40)
                ),
            })
        }
    }
    tx.execute(
        "INSERT INTO runs (id, format, probe, status, host, started_at, ended_at, elapsed_ns,
                 command, config, environment, warnings, result,
                 campaign, execution, plan_index, plan_total, configuration, load, repeat, loads)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
                 ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
        params![
            run.id,
            run.schema,
            run.probe,
            status_name(run.status),
            run.environment.hostname,
            run.started_at,
            run.ended_at,
            int(run.elapsed_ns),
            encoded.command,
            encoded.config,
            encoded.environment,
            encoded.warnings,
            encoded.result,
            campaign.map(|c| &c.name),
            campaign.map(|c| &c.execution),
            campaign.map(|c| int(c.index as u64)),
            campaign.map(|c| int(c.total as u64)),
            campaign.map(|c| &c.configuration),
            campaign.map(|c| &c.load),
            campaign.map(|c| c.repeat),
            encoded.loads,
        ],
    )
    .map_err(err)?;
    {
        let mut insert_series = tx
            .prepare_cached(
                "INSERT INTO series (run_id, position, name, metric, cpu, interval_ns,
                         samples, missed, dropped, min_ns, max_ns, mean_ns, stdev_ns,
                         p50_ns, p90_ns, p99_ns, p99_9_ns, p99_99_ns, max_at_ns, max_sample,
                         histogram_ns, histogram_us)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,
                         ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
            )
            .map_err(err)?;
        let mut insert_spike = tx
            .prepare_cached(
                "INSERT INTO spikes (run_id, series_index, series, rank, sample, at_ns,
                         latency_ns)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(err)?;
        for (position, (series, (hist_ns, hist_us))) in
            run.series.iter().zip(&encoded.histograms).enumerate()
        {
            let stats = &series.stats;
            let p = &stats.percentiles_ns;
            insert_series
                .execute(params![
                    run.id,
                    position as i64,
                    series.name,
                    series.metric,
                    series.cpu.map(|c| int(c as u64)),
                    int(series.interval_ns),
                    int(stats.samples),
                    int(stats.missed),
                    int(stats.dropped),
                    int(stats.min_ns),
                    int(stats.max_ns),
                    stats.mean_ns,
                    stats.stdev_ns,
                    int(p.p50),
                    int(p.p90),
                    int(p.p99),
                    int(p.p99_9),
                    int(p.p99_99),
                    stats.max_at.map(|s| int(s.at_ns)),
                    stats.max_at.map(|s| int(s.sample)),
                    hist_ns,
                    hist_us,
                ])
                .map_err(err)?;
            for (rank, spike) in stats.top.iter().enumerate() {
                insert_spike
                    .execute(params![
                        run.id,
                        position as i64,
                        series.name,
                        rank as i64,
                        int(spike.sample),
                        int(spike.at_ns),
                        int(spike.latency_ns),
                    ])
                    .map_err(err)?;
            }
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
        Err(StoreError::Unsaved {
            path: self.path.clone(),
            id: printable(&run.id, 80),
            cause: Box::new(cause),
            kept: keep_unsaved_in(run, dirs),
        })
    }
}
