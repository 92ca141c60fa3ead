"""Dataset construction (paper §2.2, Appendix A): person selection, disambiguation, knowledge
pools and evolutionary question generation; plus the bundled demo dataset and statistics."""

# Entries evolved at once, their rounds scored together (`evolve.interleave`); the default is
# measured in perf/builder_window. It does not change what is built (the resume test
# builds in two windows), so the resume fingerprint leaves it out. Here, not in `build`, so that
# `kalma build --help` shows it without loading the builder.
WINDOW = 128
