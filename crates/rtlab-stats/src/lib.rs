//! rtlab's statistics, numbers only (rendering is rtlab-report's job): the
//! worst-case estimate by extreme value theory ([`evt`]), quantiles and
//! "within x µs" counts of a histogram ([`quantile`]), and the bootstrap of
//! a p99 difference ([`bootstrap`]).

pub mod bootstrap;
pub mod evt;
pub mod quantile;
