"""Node power management inside the simulator: the manager interface, the CES manager of
Helios and a reactive idle-timeout baseline, found by name like policies."""
