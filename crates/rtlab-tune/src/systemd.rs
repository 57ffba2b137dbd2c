//! systemd drop-ins and the unit for `rtlab tune watch`.
