//! The formats rtlab imports, told apart by content.

/// A format [`import_file`] can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    CyclictestHistfile,
    CyclictestJson,
    RtlabJson,
}

impl Format {
    /// The name recorded as `config.format` of an imported run.
    pub fn name(self) -> &'static str {
        match self {
            Format::CyclictestHistfile => "cyclictest-histfile",
            Format::CyclictestJson => "cyclictest-json",
            Format::RtlabJson => "rtlab-json",
        }
    }
}

/// Decides the format from the content: a JSON object is rtlab's when it
/// has a top-level `"schema"` key and cyclictest's when it has a
/// `"thread"` key; text is a histfile when it has a `# Histogram` line or its first
/// line that is not a comment is a row of decimal numbers.
pub fn detect(text: &str) -> Option<Format> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') {
        return match serde_json::from_str::<serde_json::Value>(trimmed) {
            Ok(value) if value.get("schema").is_some() => Some(Format::RtlabJson),
            Ok(value) if value.get("thread").is_some() => Some(Format::CyclictestJson),
            Ok(_) => None,
            // Broken JSON: guess from the keys, so that the error comes
            // from the parser of the format it was meant to be.
            Err(_) if trimmed.contains("\"rtlab.run/") => Some(Format::RtlabJson),
            Err(_) if trimmed.contains("\"thread\"") => Some(Format::CyclictestJson),
            Err(_) => None,
        };
    }
    for line in text.lines() {
        let line = line.trim();
        if line == "# Histogram" {
            return Some(Format::CyclictestHistfile);
        }
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let mut fields = first.split_whitespace();
    let all_numeric = first
        .split_whitespace()
        .all(|f| f.bytes().all(|b| b.is_ascii_digit()));
    (fields.next().is_some() && fields.next().is_some() && all_numeric)
        .then_some(Format::CyclictestHistfile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats_by_content() {
        assert_eq!(
            detect("# Histogram\n000000 000001\n"),
            Some(Format::CyclictestHistfile)
        );
        assert_eq!(
            detect("000000 000001\t000002\n"),
            Some(Format::CyclictestHistfile)
        );
        assert_eq!(detect("{\"thread\": {}}"), Some(Format::CyclictestJson));
        assert_eq!(
            detect(" {\"schema\": \"rtlab.run/1\"}"),
            Some(Format::RtlabJson)
        );
        assert_eq!(detect("hello world"), None);
        assert_eq!(detect("{\"a\": 1}"), None);
        assert_eq!(detect(""), None);
    }
}
