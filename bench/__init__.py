"""The paper's benchmark stage, the top of the one-way layout: the experiments and ablations
(`kalma bench run`), submissions and the leaderboard, the demo, the Inspect tasks and their model
provider's registration, and the judges' sensitivity on a board (`kalma judge sensitivity`). The
suite's own performance benchmarks are `perf/`, outside the installed package."""
