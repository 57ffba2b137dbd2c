//! Why an import failed, naming the file and the place in it.

/// Why a file could not be imported. The message names the file, then the
/// line (text formats) or JSON path, then what was expected there.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A cyclictest histogram file that does not read as one.
    #[error("{path}:{line}: {message}")]
    Histfile {
        path: String,
        /// 1-based line number.
        line: usize,
        message: String,
    },
    /// A JSON document that is not what its format requires.
    #[error("{path}: {at}: {message}")]
    Json {
        path: String,
        /// JSON path, e.g. `$.thread["0"].cycles`, or `line L column C`
        /// for a syntax error.
        at: String,
        message: String,
    },
    /// Neither of the formats accepted.
    #[error("{path}: {message}")]
    UnknownFormat { path: String, message: String },
    /// Counts no measurement reaches (see [`MAX_IMPORTED_EVENTS`]).
    #[error("{path}: {message}")]
    Counts { path: String, message: String },
}

pub(crate) fn json_syntax_error(origin: &str, e: &serde_json::Error) -> ImportError {
    ImportError::Json {
        path: origin.to_string(),
        at: format!("line {} column {}", e.line(), e.column()),
        message: if e.is_eof() {
            "the JSON ends early (truncated file?)".to_string()
        } else {
            format!("invalid JSON: {e}")
        },
    }
}
