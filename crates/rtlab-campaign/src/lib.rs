//! Campaigns (filled in by issue 3).
