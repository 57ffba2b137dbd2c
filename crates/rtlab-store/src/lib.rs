//! The result store (filled in by issue 3).
