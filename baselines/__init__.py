"""The KaLMA baseline (paper §3): NER → retrieve → rerank → generate attributed answers."""
