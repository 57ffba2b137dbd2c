//! Reading runs: the listing with its filter, a run by id or prefix, a
//! campaign execution's runs.

use serde::Serialize;

use rtlab_core::result::{check_run_id, RunResult};

use crate::columns::{int, uint, STATUSES};
use crate::db::{Row, Value};
use crate::error::StoreError;
use crate::open::Store;
use crate::tags::check_tag;

/// How many candidates an ambiguous id prefix lists.
const MAX_CANDIDATES: usize = 10;

/// Which runs [`Store::list`] returns; every field set must match.
#[derive(Default, Clone, Debug)]
pub struct RunFilter {
    /// Campaign name (`CampaignRef::name`).
    pub campaign: Option<String>,
    /// Campaign execution id (`CampaignRef::execution`).
    pub execution: Option<String>,
    /// `environment.hostname`.
    pub host: Option<String>,
    pub probe: Option<String>,
    /// One of [`STATUSES`].
    pub status: Option<String>,
    /// Runs with this tag.
    pub tag: Option<String>,
    /// At most this many runs (the newest).
    pub limit: Option<usize>,
}

/// One line of `rtlab runs`: a run and the totals of its series.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub started_at: String,
    pub probe: String,
    pub status: String,
    pub host: Option<String>,
    pub campaign: Option<String>,
    pub execution: Option<String>,
    pub configuration: Option<String>,
    pub load: Option<String>,
    /// `environment.kernel_release` (schema 4; None before).
    pub kernel: Option<String>,
    /// `environment.preempt_model` (schema 4; None before).
    pub preemption: Option<String>,
    /// Number of series.
    pub series: usize,
    /// Samples of all series.
    pub samples: u64,
    /// Missed deadlines of all series.
    pub missed: u64,
    /// The largest p99.9 of the series, ns (0 without samples).
    pub worst_p99_9_ns: u64,
    /// The largest maximum of the series, ns (0 without samples).
    pub worst_max_ns: u64,
    /// The run's tags, in order.
    pub tags: Vec<String>,
}

impl Store {
    /// Whether a run has exactly this id.
    pub fn contains(&self, id: &str) -> Result<bool, StoreError> {
        self.read(|db| {
            Ok(db
                .row("SELECT 1 FROM runs WHERE id = ?1", &[id.into()])?
                .is_some())
        })
    }

    /// The runs that match `filter`, newest first.
    pub fn list(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        if let Some(status) = &filter.status {
            if !STATUSES.contains(&status.as_str()) {
                return Err(StoreError::Invalid(format!(
                    "unknown run status `{status}`: expected one of {}",
                    STATUSES.join(", ")
                )));
            }
        }
        if let Some(tag) = &filter.tag {
            check_tag(tag)?;
        }
        // A store at schema 2 or 3, read without migrating, has no tags
        // or no kernel columns yet.
        let version = self.schema_version()?;
        let tagged = version >= 3;
        if filter.tag.is_some() && !tagged {
            return Err(StoreError::Invalid(format!(
                "result store {} has no tags yet (schema version {version}): tag a run to add \
                 them",
                self.path.display(),
            )));
        }
        let dialect = self.dialect();
        let tags = match tagged {
            true => dialect.tags_of_run(),
            false => "'[]'",
        };
        let by_tag = match tagged {
            true => "EXISTS (SELECT 1 FROM tags AS t WHERE t.run_id = r.id AND t.tag = ?7)",
            false => "FALSE",
        };
        let kernel = match version >= 4 {
            true => "r.kernel, r.preemption",
            false => "CAST(NULL AS TEXT), CAST(NULL AS TEXT)",
        };
        let limit = filter.limit.map_or(i64::MAX, |l| int(l as u64));
        let samples = dialect.saturating_sum("s.samples");
        let missed = dialect.saturating_sum("s.missed");
        let newest = dialect.by_time("r.started_at", true);
        let sql = format!(
            "SELECT r.id, r.started_at, r.probe, r.status, r.host, r.campaign, r.execution,
                 r.configuration, r.load, count(s.position), {samples}, {missed},
                 coalesce(max(s.p99_9_ns), 0), coalesce(max(s.max_ns), 0), {tags}, {kernel}
             FROM runs AS r LEFT JOIN series AS s ON s.run_id = r.id
             WHERE (CAST(?1 AS TEXT) IS NULL OR r.campaign = ?1)
               AND (CAST(?2 AS TEXT) IS NULL OR r.execution = ?2)
               AND (CAST(?3 AS TEXT) IS NULL OR r.host = ?3)
               AND (CAST(?4 AS TEXT) IS NULL OR r.probe = ?4)
               AND (CAST(?5 AS TEXT) IS NULL OR r.status = ?5)
               AND (CAST(?7 AS TEXT) IS NULL OR {by_tag})
             GROUP BY r.id
             ORDER BY {newest}, r.id DESC
             LIMIT ?6"
        );
        let params = [
            Value::from(filter.campaign.as_ref()),
            filter.execution.as_ref().into(),
            filter.host.as_ref().into(),
            filter.probe.as_ref().into(),
            filter.status.as_ref().into(),
            limit.into(),
            filter.tag.as_ref().into(),
        ];
        let rows = self.read(|db| db.rows(&sql, &params))?;
        rows.into_iter().map(|row| self.summary(row)).collect()
    }

    /// A row of [`Store::list`]'s query as a summary; a value of the wrong
    /// kind (a server holding what rtlab did not write) is an error.
    fn summary(&self, row: Row) -> Result<RunSummary, StoreError> {
        let id = row
            .first()
            .and_then(Value::text)
            .unwrap_or_default()
            .to_string();
        let bad = |column: &str| {
            StoreError::Invalid(format!(
                "result store {}: run `{}`: the {column} column holds a value rtlab never \
                 writes",
                self.path.display(),
                rtlab_core::result::printable(&id, 80)
            ))
        };
        let text = |i: usize, column: &str| match row.get(i) {
            Some(Value::Text(v)) => Ok(Some(v.clone())),
            Some(Value::Null) => Ok(None),
            _ => Err(bad(column)),
        };
        let number = |i: usize, column: &str| match row.get(i) {
            Some(Value::Int(v)) => Ok(uint(*v)),
            Some(Value::Real(v)) => Ok(*v as u64),
            Some(Value::Null) => Ok(0),
            _ => Err(bad(column)),
        };
        let required = |i: usize, column: &str| text(i, column)?.ok_or_else(|| bad(column));
        Ok(RunSummary {
            id: required(0, "id")?,
            started_at: required(1, "started_at")?,
            probe: required(2, "probe")?,
            status: required(3, "status")?,
            host: text(4, "host")?,
            campaign: text(5, "campaign")?,
            execution: text(6, "execution")?,
            configuration: text(7, "configuration")?,
            load: text(8, "load")?,
            series: number(9, "series")? as usize,
            samples: number(10, "samples")?,
            missed: number(11, "missed")?,
            worst_p99_9_ns: number(12, "p99_9_ns")?,
            worst_max_ns: number(13, "max_ns")?,
            tags: text(14, "tags")?
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default(),
            kernel: text(15, "kernel")?,
            preemption: text(16, "preemption")?,
        })
    }

    /// The run with this exact id, or with the only id that starts with it;
    /// `last` is the newest run. An unknown id or an ambiguous prefix is an
    /// error that names the candidates.
    pub fn get(&self, id: &str) -> Result<RunResult, StoreError> {
        let id = self.resolve(id)?;
        let row =
            self.read(|db| db.row("SELECT result FROM runs WHERE id = ?1", &[(&id).into()]))?;
        match row
            .and_then(|r| r.into_iter().next())
            .and_then(Value::into_text)
        {
            Some(json) => self.parse(&id, &json),
            // Deleted since it was resolved.
            None => Err(StoreError::NotFound {
                path: self.path.clone(),
                id,
            }),
        }
    }

    /// The full id a user's `id` (exact, unique prefix or `last`) stands for.
    pub fn resolve(&self, id: &str) -> Result<String, StoreError> {
        if id.is_empty() {
            return Err(StoreError::Invalid(
                "empty run id: give a run id, a unique prefix of one, or `last`".into(),
            ));
        }
        let first_text = |row: Option<Row>| {
            row.and_then(|r| r.into_iter().next())
                .and_then(Value::into_text)
        };
        if id == "last" {
            let sql = format!(
                "SELECT id FROM runs ORDER BY {}, id DESC LIMIT 1",
                self.dialect().by_time("started_at", true)
            );
            return first_text(self.read(|db| db.row(&sql, &[]))?).ok_or_else(|| {
                StoreError::Empty {
                    path: self.path.clone(),
                }
            });
        }
        let exact = self.read(|db| db.row("SELECT id FROM runs WHERE id = ?1", &[id.into()]))?;
        if let Some(exact) = first_text(exact) {
            return Ok(exact);
        }
        // Checked after the exact lookup: a run stored before ids were
        // checked is still reached by its full id (as `runs delete` looks
        // up what a prefix resolved to), and never by a prefix that breaks
        // the rule.
        check_run_id(id).map_err(StoreError::Invalid)?;
        let matches = self.read(|db| {
            db.rows(
                "SELECT id, count(*) OVER () FROM runs
                 WHERE substr(id, 1, length(CAST(?1 AS TEXT))) = ?1
                 ORDER BY id LIMIT ?2",
                &[id.into(), (MAX_CANDIDATES as i64).into()],
            )
        })?;
        let matches: Vec<(String, i64)> = matches
            .into_iter()
            .map(|row| {
                let mut row = row.into_iter();
                let id = row.next().and_then(Value::into_text).unwrap_or_default();
                (id, row.next().and_then(|v| v.int()).unwrap_or(0))
            })
            .collect();
        match matches.as_slice() {
            [] => Err(StoreError::NotFound {
                path: self.path.clone(),
                id: id.to_string(),
            }),
            [(only, _)] => Ok(only.clone()),
            [(_, total), ..] => Err(StoreError::Ambiguous {
                path: self.path.clone(),
                prefix: id.to_string(),
                total: uint(*total) as usize,
                candidates: matches.iter().map(|(id, _)| id.clone()).collect(),
            }),
        }
    }

    /// The runs of one campaign execution, in plan order (runs saved twice
    /// at one place of the plan in the order they started). Empty when no
    /// run has this execution id.
    pub fn campaign_runs(&self, execution: &str) -> Result<Vec<RunResult>, StoreError> {
        let sql = format!(
            "SELECT id, result FROM runs WHERE execution = ?1
             ORDER BY plan_index, {}, id",
            self.dialect().by_time("started_at", false)
        );
        let rows = self.read(|db| db.rows(&sql, &[execution.into()]))?;
        rows.into_iter()
            .map(|row| {
                let mut row = row.into_iter();
                let id = row.next().and_then(Value::into_text).unwrap_or_default();
                match row.next().and_then(Value::into_text) {
                    Some(json) => self.parse(&id, &json),
                    None => Err(StoreError::Invalid(format!(
                        "result store {}: run `{}` has no result JSON",
                        self.path.display(),
                        rtlab_core::result::printable(&id, 80)
                    ))),
                }
            })
            .collect()
    }

    fn parse(&self, id: &str, json: &str) -> Result<RunResult, StoreError> {
        serde_json::from_str(json).map_err(|cause| StoreError::Corrupt {
            path: self.path.clone(),
            id: id.to_string(),
            cause,
        })
    }
}
