"""KaLMA: knowledge-aware language model attribution.

`kalma` is the shared vocabulary of the suite: records, citation markup, knowledge-graph
sources, model backends, the call cache and the command line. The stages
(`dataset_builder`, `baselines`, `evaluation`, `bench`) build on it and never on each other
backwards.
"""

__version__ = "0.1.0"
