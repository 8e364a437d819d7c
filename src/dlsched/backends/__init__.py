"""Back ends that run the live service's jobs, behind one interface (:mod:`.base`)."""
