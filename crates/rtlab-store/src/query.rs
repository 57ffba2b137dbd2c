//! Reading runs: the listing with its filter, a run by id or prefix, a
//! campaign execution's runs.

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use rtlab_core::result::{check_run_id, RunResult};

use crate::columns::{int, saturating_sum, uint, STATUSES};
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
        self.conn
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [id], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
            .map_err(|e| self.err(e))
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
        // A store at schema 2, read without migrating, has no tags yet.
        let tagged = self.has_table("tags")?;
        if filter.tag.is_some() && !tagged {
            return Err(StoreError::Invalid(format!(
                "result store {} has no tags yet (schema version {}): tag a run to add them",
                self.path.display(),
                self.schema_version()?
            )));
        }
        let tags = match tagged {
            true => {
                "(SELECT json_group_array(tag) FROM
                         (SELECT tag FROM tags WHERE run_id = r.id ORDER BY tag))"
            }
            false => "'[]'",
        };
        let by_tag = match tagged {
            true => "EXISTS (SELECT 1 FROM tags AS t WHERE t.run_id = r.id AND t.tag = ?7)",
            false => "?7 IS NULL",
        };
        let limit = filter.limit.map_or(-1, |l| int(l as u64));
        let samples = saturating_sum("s.samples");
        let missed = saturating_sum("s.missed");
        let mut statement = self
            .conn
            .prepare_cached(&format!(
                "SELECT r.id, r.started_at, r.probe, r.status, r.host, r.campaign, r.execution,
                     r.configuration, r.load, count(s.position), {samples}, {missed}, coalesce(max(s.p99_9_ns), 0),
                     coalesce(max(s.max_ns), 0), {tags}
                 FROM runs AS r LEFT JOIN series AS s ON s.run_id = r.id
                 WHERE (?1 IS NULL OR r.campaign = ?1)
                   AND (?2 IS NULL OR r.execution = ?2)
                   AND (?3 IS NULL OR r.host = ?3)
                   AND (?4 IS NULL OR r.probe = ?4)
                   AND (?5 IS NULL OR r.status = ?5)
                   AND (?7 IS NULL OR {by_tag})
                 GROUP BY r.id
                 ORDER BY julianday(r.started_at) DESC, r.started_at DESC, r.id DESC
                 LIMIT ?6"
            ))
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map(
                params![
                    filter.campaign,
                    filter.execution,
                    filter.host,
                    filter.probe,
                    filter.status,
                    limit,
                    filter.tag,
                ],
                |row| {
                    Ok(RunSummary {
                        id: row.get(0)?,
                        started_at: row.get(1)?,
                        probe: row.get(2)?,
                        status: row.get(3)?,
                        host: row.get(4)?,
                        campaign: row.get(5)?,
                        execution: row.get(6)?,
                        configuration: row.get(7)?,
                        load: row.get(8)?,
                        series: uint(row.get(9)?) as usize,
                        samples: uint(row.get(10)?),
                        missed: uint(row.get(11)?),
                        worst_p99_9_ns: uint(row.get(12)?),
                        worst_max_ns: uint(row.get(13)?),
                        tags: serde_json::from_str(&row.get::<_, String>(14)?).unwrap_or_default(),
                    })
                },
            )
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// The run with this exact id, or with the only id that starts with it;
    /// `last` is the newest run. An unknown id or an ambiguous prefix is an
    /// error that names the candidates.
    pub fn get(&self, id: &str) -> Result<RunResult, StoreError> {
        let id = self.resolve(id)?;
        let json: String = self
            .conn
            .query_row("SELECT result FROM runs WHERE id = ?1", [&id], |row| {
                row.get(0)
            })
            .map_err(|e| self.err(e))?;
        self.parse(&id, &json)
    }

    /// The full id a user's `id` (exact, unique prefix or `last`) stands for.
    pub fn resolve(&self, id: &str) -> Result<String, StoreError> {
        if id.is_empty() {
            return Err(StoreError::Invalid(
                "empty run id: give a run id, a unique prefix of one, or `last`".into(),
            ));
        }
        if id == "last" {
            return self
                .conn
                .query_row(
                    "SELECT id FROM runs
                     ORDER BY julianday(started_at) DESC, started_at DESC, id DESC LIMIT 1",
                    [],
                    |row| row.get(0),
                )
                .optional()
                .map_err(|e| self.err(e))?
                .ok_or_else(|| StoreError::Empty {
                    path: self.path.clone(),
                });
        }
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [id], |row| row.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        if let Some(exact) = exact {
            return Ok(exact);
        }
        // Checked after the exact lookup: a run stored before ids were
        // checked is still reached by its full id (as `runs delete` looks
        // up what a prefix resolved to), and never by a prefix that breaks
        // the rule.
        check_run_id(id).map_err(StoreError::Invalid)?;
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, count(*) OVER () FROM runs WHERE substr(id, 1, length(?1)) = ?1
                 ORDER BY id LIMIT ?2",
            )
            .map_err(|e| self.err(e))?;
        let matches = statement
            .query_map(params![id, MAX_CANDIDATES as i64], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
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
        let mut statement = self
            .conn
            .prepare_cached(
                "SELECT id, result FROM runs WHERE execution = ?1
                 ORDER BY plan_index, julianday(started_at), started_at, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = statement
            .query_map([execution], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))?;
        rows.iter().map(|(id, json)| self.parse(id, json)).collect()
    }

    fn parse(&self, id: &str, json: &str) -> Result<RunResult, StoreError> {
        serde_json::from_str(json).map_err(|cause| StoreError::Corrupt {
            path: self.path.clone(),
            id: id.to_string(),
            cause,
        })
    }
}
