"""Every metric of the benchmark, one module each (see `METRICS` in `evaluation.base`).

Run them with `evaluation.runner.evaluate` or `kalma evaluate`.
"""
