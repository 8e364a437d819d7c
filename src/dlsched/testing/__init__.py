"""Infrastructure the tests and benchmarks share: real clusters started on this machine."""
