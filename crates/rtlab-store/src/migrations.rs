//! The schema's history. Each migration takes the database from the version
//! before it to its own, in both dialects: SQLite (`PRAGMA user_version`
//! holds the version reached) and PostgreSQL (the one row of
//! `rtlab_schema`, which also marks the database as rtlab's). The two
//! build the same tables and columns, integers as 64 bits and JSON as
//! text in both. Migrations are only ever appended: a released one is
//! never edited, since databases in the field were built by it.
//!
//! Every table keeps the run's complete `RunResult` JSON in `runs.result`;
//! the other columns and tables are an index of it for queries (by rtlab and
//! by hand with `sqlite3`). That is what lets a migration add columns and
//! tables for data older rtlabs already stored: it backfills them from
//! `runs.result` (skipping a run whose JSON is damaged: it stays listed,
//! and `get` reports it).

use std::path::Path;

use crate::error::StoreError;

/// `PRAGMA application_id` of an rtlab result store: "rtlb".
pub const APPLICATION_ID: i32 = 0x72_74_6c_62;

pub struct Migration {
    /// The schema version this migration produces.
    pub version: u32,
    /// What it adds, for messages and docs/store.md.
    pub description: &'static str,
    pub sqlite: &'static str,
    pub postgres: &'static str,
}

/// All migrations, in order; the last one's version is the latest schema.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "runs and their latency series",
        sqlite: r#"
PRAGMA application_id = 1920232546;

CREATE TABLE runs (
    id          TEXT PRIMARY KEY NOT NULL,
    format      TEXT NOT NULL,              -- format of `result`: rtlab.run/1
    probe       TEXT NOT NULL,
    status      TEXT NOT NULL,              -- running, complete, partial, break, failed
    host        TEXT,                       -- environment.hostname
    started_at  TEXT NOT NULL,              -- RFC 3339 UTC
    ended_at    TEXT,
    elapsed_ns  INTEGER NOT NULL,
    command     TEXT NOT NULL,              -- JSON array
    config      TEXT NOT NULL,              -- JSON object
    environment TEXT NOT NULL,              -- JSON object
    warnings    TEXT NOT NULL,              -- JSON array
    result      TEXT NOT NULL               -- the whole RunResult as JSON
);
CREATE INDEX runs_by_start ON runs (started_at);

CREATE TABLE series (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position     INTEGER NOT NULL,          -- 0-based, in thread order
    name         TEXT NOT NULL,             -- cpu0
    metric       TEXT NOT NULL,             -- wakeup_latency
    cpu          INTEGER,
    interval_ns  INTEGER NOT NULL,
    samples      INTEGER NOT NULL,
    missed       INTEGER NOT NULL,
    dropped      INTEGER NOT NULL,
    min_ns       INTEGER NOT NULL,
    max_ns       INTEGER NOT NULL,
    mean_ns      REAL,
    stdev_ns     REAL,
    p50_ns       INTEGER NOT NULL,
    p90_ns       INTEGER NOT NULL,
    p99_ns       INTEGER NOT NULL,
    p99_9_ns     INTEGER NOT NULL,
    p99_99_ns    INTEGER NOT NULL,
    max_at_ns    INTEGER,                   -- when the maximum happened
    max_sample   INTEGER,                   -- and its sample index
    histogram_ns TEXT NOT NULL,             -- JSON [[value_ns, count], ...]
    histogram_us TEXT NOT NULL,             -- JSON [[bin_us, count], ...]
    PRIMARY KEY (run_id, position)
);
"#,
        postgres: r#"
CREATE TABLE rtlab_schema (                 -- one row: marks the database as rtlab's
    application TEXT NOT NULL CHECK (application = 'rtlab'),
    version     BIGINT NOT NULL
);
INSERT INTO rtlab_schema (application, version) VALUES ('rtlab', 0);

-- SQLite's julianday(), json() and CAST that give NULL for what does not
-- parse (a damaged or hand-made row must not fail a query or a migration).
-- A time is a date first: PostgreSQL would also read 'now' or 'epoch'.
CREATE FUNCTION rtlab_time(t TEXT) RETURNS TIMESTAMPTZ LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF t !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}' THEN RETURN NULL; END IF;
    RETURN t::timestamptz;
EXCEPTION WHEN others THEN RETURN NULL;
END $$;
CREATE FUNCTION rtlab_json(t TEXT) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN t::jsonb; EXCEPTION WHEN others THEN RETURN NULL; END $$;
CREATE FUNCTION rtlab_int(t TEXT) RETURNS BIGINT LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RETURN t::bigint; EXCEPTION WHEN others THEN RETURN NULL; END $$;

CREATE TABLE runs (
    id          TEXT PRIMARY KEY NOT NULL,
    format      TEXT NOT NULL,
    probe       TEXT NOT NULL,
    status      TEXT NOT NULL,
    host        TEXT,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    elapsed_ns  BIGINT NOT NULL,
    command     TEXT NOT NULL,
    config      TEXT NOT NULL,
    environment TEXT NOT NULL,
    warnings    TEXT NOT NULL,
    result      TEXT NOT NULL
);
CREATE INDEX runs_by_start ON runs (started_at);

CREATE TABLE series (
    run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position     BIGINT NOT NULL,
    name         TEXT NOT NULL,
    metric       TEXT NOT NULL,
    cpu          BIGINT,
    interval_ns  BIGINT NOT NULL,
    samples      BIGINT NOT NULL,
    missed       BIGINT NOT NULL,
    dropped      BIGINT NOT NULL,
    min_ns       BIGINT NOT NULL,
    max_ns       BIGINT NOT NULL,
    mean_ns      DOUBLE PRECISION,
    stdev_ns     DOUBLE PRECISION,
    p50_ns       BIGINT NOT NULL,
    p90_ns       BIGINT NOT NULL,
    p99_ns       BIGINT NOT NULL,
    p99_9_ns     BIGINT NOT NULL,
    p99_99_ns    BIGINT NOT NULL,
    max_at_ns    BIGINT,
    max_sample   BIGINT,
    histogram_ns TEXT NOT NULL,
    histogram_us TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
"#,
    },
    Migration {
        version: 2,
        description: "campaign place, loads and spikes of a run",
        sqlite: r#"
ALTER TABLE runs ADD COLUMN campaign TEXT;
ALTER TABLE runs ADD COLUMN execution TEXT;
ALTER TABLE runs ADD COLUMN plan_index INTEGER;
ALTER TABLE runs ADD COLUMN plan_total INTEGER;
ALTER TABLE runs ADD COLUMN configuration TEXT;
ALTER TABLE runs ADD COLUMN load TEXT;
ALTER TABLE runs ADD COLUMN repeat INTEGER;
ALTER TABLE runs ADD COLUMN loads TEXT NOT NULL DEFAULT '[]';

UPDATE runs SET
    campaign      = json_extract(result, '$.campaign.name'),
    execution     = json_extract(result, '$.campaign.execution'),
    plan_index    = json_extract(result, '$.campaign.index'),
    plan_total    = json_extract(result, '$.campaign.total'),
    configuration = json_extract(result, '$.campaign.configuration'),
    load          = json_extract(result, '$.campaign.load'),
    repeat        = json_extract(result, '$.campaign.repeat'),
    loads         = coalesce(json_extract(result, '$.loads'), '[]')
WHERE json_valid(result);

CREATE INDEX runs_by_execution ON runs (execution, plan_index);
CREATE INDEX runs_by_campaign ON runs (campaign, started_at);
CREATE INDEX runs_by_host ON runs (host, started_at);

CREATE TABLE spikes (
    run_id       TEXT NOT NULL,
    series_index INTEGER NOT NULL,          -- series.position
    series       TEXT NOT NULL,             -- series.name
    rank         INTEGER NOT NULL,          -- 0 = the largest sample of the series
    sample       INTEGER NOT NULL,
    at_ns        INTEGER NOT NULL,          -- since the run's first deadline
    latency_ns   INTEGER NOT NULL,
    PRIMARY KEY (run_id, series_index, rank),
    FOREIGN KEY (run_id, series_index) REFERENCES series (run_id, position) ON DELETE CASCADE
);

INSERT INTO spikes (run_id, series_index, series, rank, sample, at_ns, latency_ns)
SELECT r.id, s.key, json_extract(s.value, '$.name'), t.key,
       json_extract(t.value, '$.sample'),
       json_extract(t.value, '$.at_ns'),
       json_extract(t.value, '$.latency_ns')
FROM runs AS r,
     json_each(CASE WHEN json_valid(r.result) THEN r.result ELSE '{}' END, '$.series') AS s,
     json_each(s.value, '$.top') AS t
WHERE EXISTS (SELECT 1 FROM series WHERE series.run_id = r.id AND series.position = s.key);
"#,
        postgres: r#"
ALTER TABLE runs
    ADD COLUMN campaign TEXT,
    ADD COLUMN execution TEXT,
    ADD COLUMN plan_index BIGINT,
    ADD COLUMN plan_total BIGINT,
    ADD COLUMN configuration TEXT,
    ADD COLUMN load TEXT,
    ADD COLUMN repeat BIGINT,
    ADD COLUMN loads TEXT NOT NULL DEFAULT '[]';

UPDATE runs AS r SET
    campaign      = j.doc #>> '{campaign,name}',
    execution     = j.doc #>> '{campaign,execution}',
    plan_index    = rtlab_int(j.doc #>> '{campaign,index}'),
    plan_total    = rtlab_int(j.doc #>> '{campaign,total}'),
    configuration = j.doc #>> '{campaign,configuration}',
    load          = j.doc #>> '{campaign,load}',
    repeat        = rtlab_int(j.doc #>> '{campaign,repeat}'),
    loads         = coalesce((j.doc -> 'loads')::text, '[]')
FROM (SELECT id, rtlab_json(result) AS doc FROM runs) AS j
WHERE j.id = r.id AND j.doc IS NOT NULL;

CREATE INDEX runs_by_execution ON runs (execution, plan_index);
CREATE INDEX runs_by_campaign ON runs (campaign, started_at);
CREATE INDEX runs_by_host ON runs (host, started_at);

CREATE TABLE spikes (
    run_id       TEXT NOT NULL,
    series_index BIGINT NOT NULL,
    series       TEXT NOT NULL,
    rank         BIGINT NOT NULL,
    sample       BIGINT NOT NULL,
    at_ns        BIGINT NOT NULL,
    latency_ns   BIGINT NOT NULL,
    PRIMARY KEY (run_id, series_index, rank),
    FOREIGN KEY (run_id, series_index) REFERENCES series (run_id, position) ON DELETE CASCADE
);

INSERT INTO spikes (run_id, series_index, series, rank, sample, at_ns, latency_ns)
SELECT r.id, s.ord - 1, s.value ->> 'name', t.ord - 1,
       rtlab_int(t.value ->> 'sample'),
       rtlab_int(t.value ->> 'at_ns'),
       rtlab_int(t.value ->> 'latency_ns')
FROM (SELECT id, rtlab_json(result) AS doc FROM runs) AS r
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(r.doc -> 'series') = 'array'
    THEN r.doc -> 'series' ELSE '[]'::jsonb END) WITH ORDINALITY AS s (value, ord)
CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(s.value -> 'top') = 'array'
    THEN s.value -> 'top' ELSE '[]'::jsonb END) WITH ORDINALITY AS t (value, ord)
WHERE EXISTS (SELECT 1 FROM series WHERE series.run_id = r.id AND series.position = s.ord - 1);
"#,
    },
    Migration {
        version: 3,
        description: "tags of runs",
        sqlite: r#"
CREATE TABLE tags (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tag    TEXT NOT NULL,                   -- [A-Za-z0-9._-], 1 to 64 characters
    PRIMARY KEY (run_id, tag)
);
CREATE INDEX tags_by_tag ON tags (tag);
"#,
        postgres: r#"
CREATE TABLE tags (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tag    TEXT NOT NULL,
    PRIMARY KEY (run_id, tag)
);
CREATE INDEX tags_by_tag ON tags (tag);
"#,
    },
    Migration {
        version: 4,
        description: "kernel and preemption model of a run",
        sqlite: r#"
ALTER TABLE runs ADD COLUMN kernel TEXT;      -- environment.kernel_release
ALTER TABLE runs ADD COLUMN preemption TEXT;  -- environment.preempt_model

UPDATE runs SET
    kernel     = json_extract(environment, '$.kernel_release'),
    preemption = json_extract(environment, '$.preempt_model')
WHERE json_valid(environment);

CREATE INDEX runs_by_kernel ON runs (kernel, preemption, started_at);
"#,
        postgres: r#"
ALTER TABLE runs ADD COLUMN kernel TEXT, ADD COLUMN preemption TEXT;

UPDATE runs AS r SET
    kernel     = j.doc ->> 'kernel_release',
    preemption = j.doc ->> 'preempt_model'
FROM (SELECT id, rtlab_json(environment) AS doc FROM runs) AS j
WHERE j.id = r.id AND jsonb_typeof(j.doc) = 'object';

CREATE INDEX runs_by_kernel ON runs (kernel, preemption, started_at);
"#,
    },
];

/// Runs the migrations after version `from` up to `target`, in order,
/// each with `step` (its SQL, then the version recorded), inside the
/// caller's transaction; the first that fails is
/// [`StoreError::Migration`] naming it.
pub(crate) fn run_steps<E: std::fmt::Display>(
    path: &Path,
    from: u32,
    target: u32,
    mut step: impl FnMut(&Migration) -> Result<(), E>,
) -> Result<(), StoreError> {
    for migration in &MIGRATIONS[from as usize..target as usize] {
        step(migration)
            .map_err(|cause| failed(path, from, migration.version, migration.description, cause))?;
    }
    Ok(())
}

/// A migration from `from` that failed at version `to`.
pub(crate) fn failed(
    path: &Path,
    from: u32,
    to: u32,
    description: &'static str,
    cause: impl std::fmt::Display,
) -> StoreError {
    StoreError::Migration {
        path: path.to_path_buf(),
        from,
        to,
        description,
        cause: cause.to_string(),
    }
}

/// The newest schema version this rtlab knows.
pub const LATEST: u32 = MIGRATIONS[MIGRATIONS.len() - 1].version;
