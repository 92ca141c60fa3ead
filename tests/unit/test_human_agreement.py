"""Agreement statistics on textbook examples, and how annotators' labels are read."""

from __future__ import annotations

import pytest

from evaluation.human import agreement as ag
from evaluation.human.labels import _necessary, _value
from evaluation.human.score import _majority, annotator_agreement
from evaluation.human.units import HumanError


def test_cohens_kappa_of_the_textbook_two_by_two_table():
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15: p_o 0.70, p_e 0.50, kappa 0.40
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert ag.cohen(a, b) == pytest.approx(0.400, abs=5e-4)


def test_fleiss_kappa_of_fleiss_1971_example_as_textbooks_give_it():
    # ten subjects, fourteen raters, five categories (counts per category): kappa 0.210
    counts = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1]]
    counts += [[7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    rows = [[c + 1 for c, k in enumerate(r) for _ in range(k)] for r in counts]
    assert ag.fleiss(rows) == pytest.approx(0.210, abs=5e-4)


def test_krippendorffs_alpha_of_his_own_example_with_missing_values():
    # Krippendorff, "Computing Krippendorff's alpha-reliability" (2011): four coders, twelve units
    n = None
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    assert ag.alpha(data, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert ag.alpha(data, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert ag.alpha(data, "interval") == pytest.approx(0.849, abs=5e-4)


def test_three_annotators_on_eight_units_computed_by_hand():
    # yes counts per unit 3,3,2,2,0,1,3,1 of three: P-bar 2/3, p_yes 15/24, P_e 0.53125 -> kappa 0.289;
    # disagreeing ordered pairs 8 of 24 values, D_e 2*15*9/(24*23) -> alpha 1 - (8/24)/0.48913 = 0.319
    alice, bob, carol = [1, 1, 1, 1, 0, 0, 1, 0], [1, 1, 1, 0, 0, 0, 1, 1], [1, 1, 0, 1, 0, 1, 1, 0]
    by_unit = {f"u{i}": {"alice": a, "bob": b, "carol": c} for i, (a, b, c) in enumerate(zip(alice, bob, carol))}
    found = annotator_agreement(by_unit, list(by_unit))
    assert found["fleiss_kappa"] == pytest.approx(0.289, abs=5e-4) and found["fleiss_units"] == 8
    assert found["krippendorff_alpha"] == pytest.approx(0.319, abs=5e-4)
    assert found["percent"] == 0.5 and "cohen_kappa" not in found
    # two of them: agree on 6 of 8, both say yes 5 of 8 -> p_e 34/64, kappa 0.21875/0.46875 = 0.467
    two = annotator_agreement({u: {k: v[k] for k in ("alice", "bob")} for u, v in by_unit.items()}, list(by_unit))
    assert two["cohen_kappa"] == pytest.approx(0.467, abs=5e-4) and two["percent"] == 0.75


def test_ratings_within_one_and_undefined_statistics_are_none_not_nan():
    assert ag.percent_agreement([[4, 5], [3, 1], [2, 2]], within=1) == pytest.approx(2 / 3)
    assert ag.cohen([1, 1, 1], [1, 1, 1]) is None  # one label throughout: kappa is undefined
    assert ag.alpha([[1, 1], [1, 1]]) is None
    assert ag.bootstrap([[1.0]], lambda x: x.mean(), 0) is None  # one unit: no interval
    assert ag.bootstrap([[1.0, 1.0, 1.0]], lambda x: x.mean(), 0) == (1.0, 1.0)


def test_bootstrap_intervals_are_seeded_and_contain_the_mean():
    x = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1]
    low, high = ag.bootstrap([x], lambda v: v.mean(), 7) or (0, 0)
    assert low < 0.7 < high and ag.bootstrap([x], lambda v: v.mean(), 7) == (low, high)


def test_majority_and_ties():
    assert _majority([1, 1, 0]) == 1 and _majority([0, 0, 1]) == 0 and _majority([1, 0]) is None


@pytest.mark.parametrize(
    ("raw", "field", "want"),
    [("1", "supported", 1), ("no", "supported", 0), ("Yes", "supported", 1), ("1.0", "supported", 1), (4, "naturalness", 4), ("5.0", "significance", 5)],
)
def test_labels_are_read_as_spreadsheets_write_them(raw, field, want):
    task = "alignment" if field == "supported" else "dataset"
    assert _value(task, field, raw, "f.csv:2", 3) == want


@pytest.mark.parametrize(("raw", "field"), [("7", "supported"), ("maybe", "supported"), ("0", "naturalness"), ("4.5", "significance"), ("six", "naturalness")])
def test_labels_outside_their_set_name_file_line_and_field(raw, field):
    task = "alignment" if field == "supported" else "dataset"
    with pytest.raises(HumanError, match=rf"^f\.csv:2: field '{field}': '{raw}' is not one of"):
        _value(task, field, raw, "f.csv:2", 3)


def test_necessary_knowledge_lines():
    assert _necessary("1, 3", "f.csv:2", 3) == [1, 3] and _necessary("none", "f.csv:2", 3) == []
    assert _necessary(["2", "1. Rome"], "f.csv:2", 3) == [1, 2]  # Label Studio's choices, values or texts
    with pytest.raises(HumanError, match="field 'necessary': '4' is not a knowledge line number from 1 to 3"):
        _necessary("1,4", "f.csv:2", 3)


def test_weighted_kappa_steps_on_the_declared_scale_not_the_values_seen():
    """Nobody used 3: a 2 and a 4 are still two steps apart on 1-5. By hand, linear weights
    |i-j|/4: observed disagreement 0.75/4 = 0.1875, expected 0.25, kappa 0.25 (0.333 when the
    scale is taken from the values seen, 2, 4 and 5)."""
    by_unit = {f"u{i}": {"a": x, "b": y} for i, (x, y) in enumerate(zip([2, 4, 4, 5], [4, 4, 5, 5]))}
    full = annotator_agreement(by_unit, list(by_unit), "ordinal", within=1, scale=(1, 2, 3, 4, 5))
    assert full["cohen_kappa"] == pytest.approx(0.25) and ag.cohen([2, 4, 4, 5], [4, 4, 5, 5], "linear") == pytest.approx(1 / 3)
