//! One way to run SQL on either database: values and rows of our own, the
//! few fragments the two dialects spell differently, and [`Sql`], which
//! the store's logic (validation, duplicate rules, the rows of a run,
//! error mapping) is written against once.
//!
//! Statements are written with SQLite's numbered parameters (`?1`); for
//! PostgreSQL they become `$1`. Every integer column is 64 bits in both
//! (`INTEGER` in SQLite, `BIGINT` in PostgreSQL), reals are doubles and
//! JSON is text, so one [`Value`] type carries every parameter and column.

use std::time::Duration;

use rusqlite::types::{ToSqlOutput, ValueRef};

/// How long a writer waits for another process's transaction to end before
/// giving up with `StoreError::Locked`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A parameter or a column's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

pub(crate) type Row = Vec<Value>;

impl Value {
    pub(crate) fn int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Value::Text(v) => Some(v),
            _ => None,
        }
    }

    pub(crate) fn into_text(self) -> Option<String> {
        match self {
            Value::Text(v) => Some(v),
            _ => None,
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Real(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Text(v.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// Which SQL a statement is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    /// The sum of an integer column that saturates at i64::MAX instead of
    /// failing the query. SQLite's sum() fails the whole query with
    /// 'integer overflow', and counts read from an imported file can be as
    /// large as i64::MAX (a histfile's overflow line): total() sums in
    /// floating point and CAST takes a real beyond i64 to i64::MAX.
    /// PostgreSQL's sum of BIGINT is NUMERIC, exact, capped here.
    pub(crate) fn saturating_sum(self, column: &str) -> String {
        match self {
            Dialect::Sqlite => format!("CAST(total({column}) AS INTEGER)"),
            Dialect::Postgres => {
                format!(
                    "CAST(LEAST(coalesce(sum({column}), 0), {}) AS BIGINT)",
                    i64::MAX
                )
            }
        }
    }

    /// An ORDER BY key of an RFC 3339 text column by the instant it names
    /// (a text that is no time sorts as the earliest), then by the text.
    pub(crate) fn by_time(self, column: &str, descending: bool) -> String {
        let dir = if descending { "DESC" } else { "ASC" };
        match self {
            Dialect::Sqlite => format!("julianday({column}) {dir}, {column} {dir}"),
            // rtlab_time() is schema 1's: NULL for a text that is no time.
            Dialect::Postgres => {
                let nulls = if descending { "LAST" } else { "FIRST" };
                format!("rtlab_time({column}) {dir} NULLS {nulls}, {column} {dir}")
            }
        }
    }

    /// A JSON array (text) of the tags of run `r`, in order.
    pub(crate) fn tags_of_run(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "(SELECT json_group_array(tag) FROM
                     (SELECT tag FROM tags WHERE run_id = r.id ORDER BY tag))"
            }
            Dialect::Postgres => {
                "(SELECT coalesce(json_agg(tag ORDER BY tag)::text, '[]')
                     FROM tags WHERE run_id = r.id)"
            }
        }
    }

    /// A query with one row when the table `?1` exists.
    pub(crate) fn table_exists(self) -> &'static str {
        match self {
            Dialect::Sqlite => "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            Dialect::Postgres => {
                "SELECT 1 FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_name = CAST(?1 AS TEXT)"
            }
        }
    }
}

/// What a statement failed with, before the store names its database.
#[derive(Debug)]
pub(crate) enum DbError {
    Sqlite(rusqlite::Error),
    Postgres(postgres::Error),
    /// A column of a type the store never makes (the server is not to be
    /// trusted to hold only what rtlab wrote).
    Type(String),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> Self {
        DbError::Sqlite(e)
    }
}

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> Self {
        DbError::Postgres(e)
    }
}

/// A connection or a transaction of either database.
pub(crate) trait Sql {
    fn dialect(&self) -> Dialect;
    /// Every row of a query.
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError>;
    /// Runs a statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError>;

    /// The first row of a query, if any.
    fn row(&mut self, sql: &str, params: &[Value]) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }
}

/// An SQLite connection (or a transaction, through Deref).
pub(crate) struct Lite<'a>(pub &'a rusqlite::Connection);

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Owned(rusqlite::types::Value::Null),
            Value::Int(v) => ToSqlOutput::Owned(rusqlite::types::Value::Integer(*v)),
            Value::Real(v) => ToSqlOutput::Owned(rusqlite::types::Value::Real(*v)),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
        })
    }
}

impl Sql for Lite<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let mut statement = self.0.prepare_cached(sql)?;
        let columns = statement.column_count();
        let mut rows = statement.query(rusqlite::params_from_iter(params))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next()? {
            let mut values = Vec::with_capacity(columns);
            for i in 0..columns {
                values.push(match row.get_ref(i)? {
                    ValueRef::Null => Value::Null,
                    ValueRef::Integer(v) => Value::Int(v),
                    ValueRef::Real(v) => Value::Real(v),
                    ValueRef::Text(v) => Value::Text(String::from_utf8_lossy(v).into_owned()),
                    ValueRef::Blob(_) => {
                        return Err(DbError::Type(format!("column {i} holds a blob")))
                    }
                });
            }
            out.push(values);
        }
        Ok(out)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        let changed = self
            .0
            .prepare_cached(sql)?
            .execute(rusqlite::params_from_iter(params))?;
        Ok(changed as u64)
    }
}

/// `?N` parameters as PostgreSQL's `$N` (the store's statements have no
/// `?` elsewhere).
pub(crate) fn postgres_sql(sql: &str) -> String {
    sql.replace('?', "$")
}

/// A parameter for PostgreSQL, typed as the server expects it (a NULL
/// must have the parameter's type too).
fn pg_param(value: &Value, ty: &postgres::types::Type) -> Box<dyn postgres::types::ToSql + Sync> {
    use postgres::types::Type;
    match (value, ty) {
        (Value::Int(v), &Type::INT4) => Box::new(i32::try_from(*v).unwrap_or(i32::MAX)),
        (Value::Int(v), &Type::FLOAT8) => Box::new(*v as f64),
        (Value::Int(v), _) => Box::new(*v),
        (Value::Real(v), _) => Box::new(*v),
        (Value::Text(v), _) => Box::new(v.clone()),
        (Value::Null, &Type::INT8) => Box::new(None::<i64>),
        (Value::Null, &Type::INT4) => Box::new(None::<i32>),
        (Value::Null, &Type::FLOAT8) => Box::new(None::<f64>),
        (Value::Null, _) => Box::new(None::<String>),
    }
}

fn pg_value(row: &postgres::Row, i: usize) -> Result<Value, DbError> {
    use postgres::types::Type;
    let ty = row.columns()[i].type_().clone();
    let value = match ty {
        Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Value::Int),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i)?.map(Value::Real),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)?
            .map(|v| Value::Real(v.into())),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(i)?
            .map(|v| Value::Int(v.into())),
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            row.try_get::<_, Option<String>>(i)?.map(Value::Text)
        }
        other => {
            return Err(DbError::Type(format!(
                "column `{}` has type {other}, which rtlab never stores",
                row.columns()[i].name()
            )))
        }
    };
    Ok(value.unwrap_or(Value::Null))
}

/// Parameters typed as the prepared statement wants them.
type PgParams = Vec<Box<dyn postgres::types::ToSql + Sync>>;

fn prepare<C: postgres::GenericClient>(
    client: &mut C,
    sql: &str,
    params: &[Value],
) -> Result<(postgres::Statement, PgParams), DbError> {
    let statement = client.prepare(&postgres_sql(sql))?;
    let typed = params
        .iter()
        .zip(statement.params())
        .map(|(value, ty)| pg_param(value, ty))
        .collect();
    Ok((statement, typed))
}

fn refs(params: &PgParams) -> Vec<&(dyn postgres::types::ToSql + Sync)> {
    params.iter().map(|p| &**p).collect()
}

/// A PostgreSQL client or one of its transactions.
impl<C: postgres::GenericClient> Sql for C {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        let (statement, typed) = prepare(self, sql, params)?;
        self.query(&statement, &refs(&typed))?
            .iter()
            .map(|row| (0..row.len()).map(|i| pg_value(row, i)).collect())
            .collect()
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        let (statement, typed) = prepare(self, sql, params)?;
        Ok(postgres::GenericClient::execute(
            self,
            &statement,
            &refs(&typed),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_dollars() {
        assert_eq!(
            postgres_sql("SELECT 1 WHERE a = ?1 AND b = ?12"),
            "SELECT 1 WHERE a = $1 AND b = $12"
        );
    }

    #[test]
    fn sqlite_rows_carry_every_kind_of_value() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let rows = Lite(&conn)
            .rows(
                "SELECT ?1, ?2, ?3, NULL",
                &[Value::Int(7), Value::Real(1.5), "x".into()],
            )
            .unwrap();
        assert_eq!(
            rows,
            [vec![
                Value::Int(7),
                Value::Real(1.5),
                Value::Text("x".into()),
                Value::Null
            ]]
        );
    }
}
