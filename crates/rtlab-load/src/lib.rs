//! Load generators (filled in by issue 3).
