"""Property tests over random valid mechanisms and random counts (hypothesis)."""

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from survey.privacy import GeneralizedRR, Mechanism, epsilon_of_matrix, estimate

PRIVACY = Path(__file__).resolve().parents[1] / "survey" / "privacy"


@st.composite
def mechanisms(draw):
    k = draw(st.integers(2, 6))
    if draw(st.booleans()):
        eps = draw(st.floats(0.05, 8.0))
        return GeneralizedRR(k, epsilon=eps)
    weights = draw(st.lists(st.lists(st.floats(0.01, 1.0), min_size=k, max_size=k), min_size=k, max_size=k))
    columns = np.array(weights).T
    matrix = columns / columns.sum(axis=0)
    # lean on the diagonal so that most draws are invertible
    matrix = 0.5 * matrix + 0.5 * np.eye(k)
    assume(np.linalg.cond(matrix) < 1e6)
    return Mechanism(matrix)


@st.composite
def mechanism_and_counts(draw):
    mech = draw(mechanisms())
    counts = draw(st.lists(st.integers(0, 500), min_size=mech.k, max_size=mech.k))
    assume(sum(counts) > 0)
    return mech, np.array(counts)


@settings(max_examples=150, deadline=None)
@given(mechanisms())
def test_epsilon_is_the_worst_row_log_ratio(mech):
    q = mech.matrix
    expected = max(math.log(row.max() / row.min()) for row in q)
    assert mech.epsilon == expected == epsilon_of_matrix(q)
    np.testing.assert_allclose(q.sum(axis=0), 1.0)


@settings(max_examples=150, deadline=None)
@given(mechanism_and_counts())
def test_estimates_are_coherent(case):
    mech, counts = case
    result = estimate(mech, counts)
    assert result.n == counts.sum()
    # the unbiased estimate is what it says: the shares whose expected report rates are the observed ones
    np.testing.assert_allclose(mech.matrix @ result.unbiased, counts / counts.sum(), atol=1e-9)
    assert abs(result.unbiased.sum() - 1.0) < 1e-9
    p = result.proportions
    assert np.all(p >= 0) and abs(p.sum() - 1.0) < 1e-12
    if np.all(result.unbiased >= 0):
        np.testing.assert_array_equal(p, result.unbiased)
    # the consistent estimate is at least as likely as the peers' clip-and-rescale
    clipped = np.clip(result.unbiased, 0, None)
    clipped /= clipped.sum()
    seen = counts > 0

    def loglik(pi):
        fitted = mech.matrix @ pi
        return -np.inf if np.any(fitted[seen] <= 0) else counts[seen] @ np.log(fitted[seen])

    assert loglik(p) >= loglik(clipped) - 1e-6
    for simultaneous in (False, True):
        low, high = result.ci(simultaneous=simultaneous)
        assert np.all((0 <= low) & (low <= high) & (high <= 1))
    low, high = result.ci()
    unit = np.clip(result.unbiased, 0, 1)
    for v, method in enumerate(result.interval_methods):
        if method in ("wilson-floor-mapped", "clopper-pearson-mapped"):  # both contain the reported share
            assert low[v] - 1e-12 <= unit[v] <= high[v] + 1e-12


def test_privacy_core_imports_nothing_from_the_app():
    code = (
        "import sys, survey.privacy; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'sqlalchemy', 'werkzeug')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PRIVACY.parents[1])
    for path in PRIVACY.glob("*.py"):
        # the import statements themselves (a docstring line may begin with "from ")
        tree = ast.parse(path.read_text())
        imported = [
            ("." * node.level) + (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (node.names if isinstance(node, ast.Import) else node.names[:1])
        ]
        for module in imported:
            assert module.startswith(".") or module.split(".")[0] in {
                "__future__",
                "functools",
                "itertools",
                "math",
                "collections",
                "dataclasses",
                "typing",
                "numpy",
                "scipy",
            }, f"{path.name} imports {module}"
