"""The names a synthetic Helios-like trace is asked for by — which cluster it resembles, and the
day whose VC sizes make its cluster — apart from the published data, so a command's help lists
them without loading NumPy.
"""

from __future__ import annotations

HELIOS_CLUSTERS = ("venus", "earth", "saturn", "uranus")
"""The Helios clusters with published statistics (Hu et al., SC'21)."""
REFERENCE_DAY = "2020-09-10"
"""The day whose VC sizes make a synthetic trace's cluster, by default: the day the Helios
artifact's simulator uses for Venus and Earth (HeliosArtifact, framework/QSSF
Service/data/vc_dict_generator.py)."""
