"""Suite-wide settings.

The services the tests start run their jobs unsandboxed (``DLSCHED_SANDBOX=none``): their job
scripts live in pytest's private temporary directories, which the sandbox users cannot read.
The isolation tests (tests/service/test_isolation.py) ask for ``--sandbox users`` explicitly.
"""

import os

os.environ.setdefault("DLSCHED_SANDBOX", "none")
