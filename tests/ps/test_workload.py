"""The PS workload's defaults as the command line names them."""

from __future__ import annotations


def test_the_cli_default_trace_is_the_workload_default() -> None:
    # The command line names it without importing the PS model (for --help).
    from dlsched.cli.ps_cmd import DEFAULT_TRACE as CLI_DEFAULT
    from dlsched.ps.workload import DEFAULT_TRACE

    assert CLI_DEFAULT == DEFAULT_TRACE
