//! Errors in campaign files: every one names the file, the line and column,
//! and the field it is about.

use serde::Serialize;
use std::fmt;

/// A place in a campaign file, both 1-based; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text` (clamped to the text).
    pub fn of_offset(text: &str, offset: usize) -> Position {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Position {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A campaign that could not be read, checked or planned.
///
/// Displayed as `FILE:LINE:COL: field `PATH`: what is wrong`, e.g.
/// ``campaign.toml:31:12: field `configuration[1].priority`: priority applies
/// only to fifo or rr (policy other)``. Field paths count array entries from
/// 0, as jq does: `configuration[1]` is the second `[[configuration]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignError {
    /// The file path, or `preset NAME` for a built-in campaign.
    pub origin: String,
    /// Where in the file; None when the error is not about one place
    /// (a file that cannot be read).
    pub position: Option<Position>,
    /// The field the error is about, e.g. `load[2].run[0]`; None for TOML
    /// syntax errors and errors about the whole file.
    pub field: Option<String>,
    pub message: String,
}

impl CampaignError {
    /// The line the error is on, if it is about one place.
    pub fn line(&self) -> Option<usize> {
        self.position.map(|p| p.line)
    }
}

impl fmt::Display for CampaignError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(position) = self.position {
            write!(f, ":{position}")?;
        }
        f.write_str(": ")?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for CampaignError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(Position::of_offset(text, 0).to_string(), "1:1");
        assert_eq!(Position::of_offset(text, 6).to_string(), "2:1");
        // "bé" is 3 bytes; the '=' after it is the 4th character.
        assert_eq!(Position::of_offset(text, 10).to_string(), "2:4");
        assert_eq!(Position::of_offset(text, 1000).to_string(), "3:1");
    }

    #[test]
    fn display_names_file_position_and_field() {
        let err = CampaignError {
            origin: "c.toml".into(),
            position: Some(Position {
                line: 3,
                column: 12,
            }),
            field: Some("configuration[1].priority".into()),
            message: "priority applies only to fifo or rr (policy other)".into(),
        };
        assert_eq!(
            err.to_string(),
            "c.toml:3:12: field `configuration[1].priority`: priority applies only to fifo or rr (policy other)"
        );
        let err = CampaignError {
            origin: "c.toml".into(),
            position: None,
            field: None,
            message: "cannot read it".into(),
        };
        assert_eq!(err.to_string(), "c.toml: cannot read it");
    }
}
