//! The system audit behind `rtlab tune check`.
