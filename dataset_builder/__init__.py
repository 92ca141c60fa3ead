"""Dataset construction (paper §2.2, Appendix A): person selection, disambiguation, knowledge
pools and evolutionary question generation; plus the bundled demo dataset and statistics."""
