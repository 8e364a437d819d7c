"""Synthetic traces: the Helios-like generator (users, recurring job names, calibrated to the
published Helios statistics; :mod:`dlsched.trace.synth.helios`) and Philly-like arrivals and
run times for scale tests (:mod:`dlsched.trace.synth.philly_like`)."""
