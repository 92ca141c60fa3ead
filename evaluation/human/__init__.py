"""The human side of the automatic metrics (KaLMA §5.4 Table 6, §2.3 Table 2, Appendix C).

One module per job, in the order a researcher runs them:

- `units`: what people judge (a unit, a label, the sample file and its digest);
- `sample`: draw exactly the units a metric scores (alignment pairs per model, or entries);
- `export`: a spreadsheet-safe CSV and Label Studio's task import and labelling config, blinded;
- `labels`: annotators' CSVs and Label Studio exports back in, every bad row named;
- `agreement`: kappa, alpha, bootstrap intervals, from scikit-learn, statsmodels, krippendorff, SciPy;
- `score`: the paper's tables beside ours, and the human majority as a `table:` entailment file.

`kalma human sample | export | import | score` runs them (`evaluation.human.cli`).
"""
