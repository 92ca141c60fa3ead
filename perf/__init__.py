"""Performance benchmarks: scripts that compare an optimised path with the naive one in the
same run and report the ratio. Run them with `python -m perf.<name>`; they are not tests."""
