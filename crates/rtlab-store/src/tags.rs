//! Tags of runs (schema 3): `rtlab runs tag`, `rtlab runs --tag`.

use rtlab_core::result::printable;

use crate::db::Value;
use crate::error::StoreError;
use crate::open::Store;

/// The longest tag accepted.
pub const TAG_MAX_LEN: usize = 64;

/// Checks a tag: 1 to [`TAG_MAX_LEN`] ASCII letters, digits, `-`, `_` or
/// `.`, starting with a letter or digit (the rule of run ids, for the same
/// reasons: tags are printed and typed).
pub fn check_tag(tag: &str) -> Result<(), StoreError> {
    let bad = |why: String| StoreError::Invalid(format!("tag `{}`: {why}", printable(tag, 80)));
    if tag.is_empty() || tag.len() > TAG_MAX_LEN {
        return Err(bad(format!("a tag is 1 to {TAG_MAX_LEN} characters")));
    }
    if !tag
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        || !tag.starts_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err(bad(
            "a tag is ASCII letters, digits, '-', '_' and '.', starting with a letter or digit"
                .into(),
        ));
    }
    Ok(())
}

impl Store {
    /// Adds `tag` to the run `id` stands for (exact, unique prefix or
    /// `last`); returns the run's full id. Tagging twice is no change.
    pub fn tag(&mut self, id: &str, tag: &str) -> Result<String, StoreError> {
        check_tag(tag)?;
        let id = self.resolve(id)?;
        self.read(|db| {
            db.execute(
                "INSERT INTO tags (run_id, tag) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                &[(&id).into(), tag.into()],
            )
        })?;
        Ok(id)
    }

    /// Removes `tag` from the run; returns its full id and whether it had
    /// the tag.
    pub fn untag(&mut self, id: &str, tag: &str) -> Result<(String, bool), StoreError> {
        check_tag(tag)?;
        let id = self.resolve(id)?;
        let removed = self.read(|db| {
            db.execute(
                "DELETE FROM tags WHERE run_id = ?1 AND tag = ?2",
                &[(&id).into(), tag.into()],
            )
        })?;
        Ok((id, removed > 0))
    }

    /// The tags of the run with exactly this id, in order.
    pub fn tags(&self, id: &str) -> Result<Vec<String>, StoreError> {
        if !self.has_table("tags")? {
            return Ok(Vec::new());
        }
        let rows = self.read(|db| {
            db.rows(
                "SELECT tag FROM tags WHERE run_id = ?1 ORDER BY tag",
                &[id.into()],
            )
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|row| row.into_iter().next().and_then(Value::into_text))
            .collect())
    }
}
