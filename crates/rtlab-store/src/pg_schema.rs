//! The schema version of a PostgreSQL store, and whether the database is
//! rtlab's at all (SQLite's `user_version` and `application_id`).

use std::path::Path;

use crate::error::StoreError;

/// The schema version of the database: `rtlab_schema`'s, or 0 for a
/// database without tables. A database with tables but no such mark, or
/// a mark that is not one row of rtlab's, is another program's.
pub(crate) fn schema_version<C: postgres::GenericClient>(
    client: &mut C,
    path: &Path,
) -> Result<u32, StoreError> {
    let err = |e: postgres::Error| StoreError::postgres(path, &e);
    let foreign = |detail: String| StoreError::Foreign {
        path: path.to_path_buf(),
        detail,
    };
    // One statement, so one snapshot: another rtlab may be creating the
    // store right now.
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM information_schema.tables
                     WHERE table_schema = current_schema()),
                    EXISTS (SELECT 1 FROM information_schema.tables
                     WHERE table_schema = current_schema() AND table_name = 'rtlab_schema')",
            &[],
        )
        .map_err(err)?;
    // try_get, never get: a server sending other types is an error, not a panic.
    let (tables, marked): (i64, bool) =
        (row.try_get(0).map_err(err)?, row.try_get(1).map_err(err)?);
    if !marked {
        return match tables {
            0 => Ok(0),
            n => Err(foreign(format!(
                "its database has {n} tables but no rtlab_schema table: it is another \
                 program's (give rtlab a database of its own)"
            ))),
        };
    }
    let rows = client
        .query(
            "SELECT application::text, version::bigint FROM rtlab_schema",
            &[],
        )
        .map_err(err)?;
    let [row] = rows.as_slice() else {
        return Err(foreign(format!(
            "its rtlab_schema table has {} rows, not one",
            rows.len()
        )));
    };
    let application: Option<String> = row.try_get(0).map_err(err)?;
    let version: Option<i64> = row.try_get(1).map_err(err)?;
    match (application.as_deref(), version) {
        (Some("rtlab"), Some(version)) => {
            u32::try_from(version).map_err(|_| foreign(format!("its schema version is {version}")))
        }
        _ => Err(foreign(
            "its rtlab_schema table does not name rtlab with a version".into(),
        )),
    }
}
