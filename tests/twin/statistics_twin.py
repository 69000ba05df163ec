#!/usr/bin/env python3
"""The SciPy twin of experiment/statistics.h: golden values for
tests/experiment/test_statistics.cpp.

Writes tests/data/statistics_golden.json with, for fixed hand-chosen inputs:
  mean_std   numpy mean and std(ddof=1);
  welch      scipy.stats.ttest_ind(a, b, equal_var=False): t and the two-sided
             p; df from the Welch-Satterthwaite equation, computed here in
             numpy from its definition (and checked against SciPy's own df);
  t_sf       scipy.stats.t.sf(t, df) on a grid of t and df, and beside it
             (sf_exact) the same from mpmath at 50 digits, rounded once:
             P(T > t) = I_{df/(df+t^2)}(df/2, 1/2) / 2 for t >= 0, 1 minus that
             below. SciPy's own value is 2.5e-11 off at t = 1e-7, df = 1
             (scipy 1.17.1: 0.49999996818173487 against 1/2 - atan(1e-7)/pi =
             0.49999996816901138), so the exact value is the sharper judge;
  correlation  scipy.stats.pearsonr, spearmanr and kendalltau (its default,
             tau-b) of pairs with and without ties, perfect and anti, n = 2..50;
  correlation_tests  the same statistics' two-sided p-values as ordo takes
             them (experiment/statistics.h): for n <= 10 the exact permutation
             test, kendalltau(method="exact") where nothing ties and else
             scipy.stats.permutation_test(permutation_type="pairings",
             n_resamples=inf) on kendalltau's and spearmanr's statistics
             (vectorised here, checked against SciPy's own statistic on the
             data); for n > 10 kendalltau(method="asymptotic"), spearmanr's
             and pearsonr's own p; pearsonr's p at every n;
  pearson_interval  pearsonr(x, y).confidence_interval at 95% and 80% (Fisher's z);
  welch's ci95  ttest_ind(...).confidence_interval(0.95), and t.isf(0.025, df);
  one_sample scipy.stats.ttest_1samp(values, mu): t, df and the two-sided p
             (checked against mpmath's t_sf), and the mean's interval at 95%
             (its confidence_interval(0.95));
  linear_fit scipy.stats.linregress(x, y): slope, intercept, the slope's
             standard error and two-sided p, and the slope's interval at 95%
             and 80% as linregress's documentation builds it, slope -/+
             t.isf((1 - level) / 2, n - 2) stderr; the "compute" cases regress
             on np.log10(compute) (the trend of a metric with scale over
             (rung, seed) points, experiment/statistics.h's log_compute_trend);
  holm       Holm's adjusted p-values, found by running the step-down
             procedure itself (reject p_(k) while p_(k) <= alpha / (m - k + 1))
             at every candidate alpha, and checked against
             statsmodels.stats.multitest.multipletests(method="holm") where
             statsmodels is installed.
NaN (SciPy's answer for an undefined statistic) is written as null. Floats are
written by Python's repr, the shortest text that reads back as the same double
(at most 17 significant digits), so the file holds SciPy's values to the bit.
CI never runs Python; nothing here is a dependency of ordo. From the
repository root:

    pip install scipy numpy mpmath    # statsmodels too, for the Holm cross-check
    python3 tests/twin/statistics_twin.py
"""
import json
import sys
import warnings

import mpmath
import numpy as np
import scipy
import scipy.stats

GOLDEN = "tests/data/statistics_golden.json"


def value(x):
    x = float(x)
    return None if np.isnan(x) else x


# ---- Welch's t-test: sizes 2..8 ---------------------------------------------

WELCH = [
    ("two and two", [1.0, 2.0], [3.0, 5.0]),
    ("very different variances", [10.1, 10.3, 9.9], [0.0, 50.0, -20.0, 70.0, 15.0]),
    ("equal means: t = 0, p = 1", [1.0, 2.0, 3.0, 4.0], [0.0, 2.5, 2.5, 5.0]),
    ("a has zero variance", [5.0, 5.0, 5.0], [4.0, 6.0, 7.0, 5.5]),
    ("b has zero variance", [0.3, 0.1, 0.7, 0.2, 0.4, 0.9], [0.9, 0.9]),
    ("tiny p", [100.2, 99.5, 101.1, 99.0, 100.4, 100.0, 99.7, 100.6],
     [94.6, 95.7, 94.4, 95.5, 94.3, 94.9, 95.4, 94.8]),
    ("p near 1", [3.1, 4.7, 2.2, 5.9, 3.8, 4.4, 3.3], [4.05, 3.0, 5.1, 2.9, 4.6, 3.7, 4.0, 3.96]),
    ("two against eight, df near 1", [0.0, 11.0], [4.9, 5.0, 5.1, 5.0, 4.95, 5.05, 5.02, 4.98]),
    ("seven and six, negative t", [1.5, 2.5, 1.0, 3.0, 2.0, 2.2, 1.8], [3.5, 4.0, 2.9, 4.4, 3.8, 3.1]),
]


def welch(name, a, b):
    a_, b_ = np.array(a), np.array(b)
    res = scipy.stats.ttest_ind(a_, b_, equal_var=False)
    va, vb = a_.var(ddof=1) / len(a_), b_.var(ddof=1) / len(b_)
    df = (va + vb) ** 2 / (va ** 2 / (len(a_) - 1) + vb ** 2 / (len(b_) - 1))
    assert abs(df - res.df) <= 1e-12 * df, (name, df, res.df)
    exact_p = min(1.0, 2 * t_sf_exact(abs(float(res.statistic)), float(df)))
    assert abs(res.pvalue - exact_p) <= 1e-13 * exact_p, (name, res.pvalue, exact_p)
    ci = res.confidence_interval(0.95)
    return {"name": name, "a": a, "b": b, "t": value(res.statistic), "df": value(df), "p": value(res.pvalue),
            "ci95": [value(ci.low), value(ci.high)], "t_isf_025": value(scipy.stats.t.isf(0.025, df))}


# A scale study's first rung against the paper's value: three and four
# pretraining seeds, far from the value, within reach of it, on it. (Without
# spread SciPy gives t = inf and p = 0; ordo leaves that test undefined, NaN,
# as Welch's: test_statistics.cpp checks it by hand.)
ONE_SAMPLE = [
    ("far above", [0.12, 0.18, 0.13], 0.0208),
    ("within reach", [1.0, 2.0, 4.0], 1.0),
    ("far below, four", [-5.2, -6.1, -3.9, -4.4], 0.4),
    ("on the value", [0.5, 0.7], 0.6),
]


def one_sample(name, values, mu):
    res = scipy.stats.ttest_1samp(np.array(values), mu)
    exact_p = min(1.0, 2 * t_sf_exact(abs(float(res.statistic)), float(res.df)))
    assert abs(res.pvalue - exact_p) <= 1e-13 * max(exact_p, 1e-300), (name, res.pvalue, exact_p)
    ci = res.confidence_interval(0.95)
    return {"name": name, "values": values, "mu": mu, "t": value(res.statistic), "df": value(res.df),
            "p": value(res.pvalue), "ci95": [value(ci.low), value(ci.high)]}


# ---- Student's t survival function ------------------------------------------

T_GRID = [-25.0, -2.5, -0.3, 0.0, 1e-7, 0.3, 1.0, 2.5, 8.0, 25.0]
DF_GRID = [0.5, 1.0, 2.3, 5.0, 30.0, 1e4]


def t_sf_exact(t, df):
    """P(T > t) from the regularised incomplete beta at 50 digits (t and df are exact doubles)."""
    with mpmath.workdps(50):
        t, df = mpmath.mpf(t), mpmath.mpf(df)
        tail = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, df / (df + t * t), regularized=True) / 2
        return float(tail if t >= 0 else 1 - tail)


def t_sf(t, df):
    sf, exact = float(scipy.stats.t.sf(t, df)), t_sf_exact(t, df)
    assert abs(sf - exact) <= 1e-10 * exact, (t, df, sf, exact)
    return {"t": t, "df": df, "sf": sf, "sf_exact": exact}


# ---- correlations ------------------------------------------------------------

def correlation_cases():
    rng = np.random.default_rng(26)
    x50 = np.round(rng.normal(0.0, 1.0, 50), 3)
    y50 = np.round(0.6 * x50 + rng.normal(0.0, 0.8, 50), 3)
    x12 = np.round(rng.uniform(0.0, 1.0, 12), 3)
    return [
        ("n = 2", [1.0, 2.0], [5.0, 3.0]),
        ("n = 3, no ties", [1.0, 2.0, 3.0], [1.0, 3.0, 2.0]),
        ("n = 3, a tie in x", [1.0, 1.0, 2.0], [1.0, 2.0, 3.0]),
        ("n = 12, perfect, nonlinear", x12.tolist(), np.round(np.exp(3 * x12), 6).tolist()),
        ("n = 12, anti", x12.tolist(), (-2.0 * x12 + 1.0).tolist()),
        ("n = 12, ties in both", [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 4.0, 5.0, 6.0, 7.0, 7.0, 8.0],
         [2.0, 1.0, 3.0, 3.0, 5.0, 4.0, 6.0, 6.0, 6.0, 9.0, 8.0, 8.0]),
        ("n = 50, no ties", x50.tolist(), y50.tolist()),
        ("n = 50, many ties", np.round(x50).tolist(), np.round(y50 * 2).tolist()),
        ("constant y", [1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]),
    ]


def correlation(name, x, y):
    assert len(x) == len(y)
    return {"name": name, "x": x, "y": y,
            "pearson": value(scipy.stats.pearsonr(x, y).statistic),
            "spearman": value(scipy.stats.spearmanr(x, y).statistic),
            "kendall_tau_b": value(scipy.stats.kendalltau(x, y).statistic)}


# ---- correlation tests -------------------------------------------------------

EXACT_MAX_N = 10  # experiment/statistics.h's kExactPermutationMaxN


def test_cases():
    rng = np.random.default_rng(66)
    x10 = np.round(rng.uniform(0.0, 1.0, 10), 3)
    y10 = np.round(0.5 * x10 + rng.uniform(0.0, 0.6, 10), 3)
    return [
        ("n = 4, perfect", [1.0, 2.0, 3.0, 4.0], [0.3, 0.5, 0.9, 1.4]),
        ("n = 5, one swap", [1.0, 2.0, 3.0, 4.0, 5.0], [1.0, 3.0, 2.0, 4.0, 5.0]),
        ("n = 6, a tie in x", [0.1, 0.2, 0.2, 0.4, 0.5, 0.9], [3.0, 1.0, 4.0, 1.5, 5.0, 9.0]),
        ("n = 7, ties in both", [1.0, 1.0, 2.0, 3.0, 3.0, 3.0, 4.0], [2.0, 1.0, 2.0, 5.0, 4.0, 5.0, 3.0]),
        ("n = 8, negative", [8.0, 3.0, 6.0, 1.0, 7.0, 2.0, 5.0, 4.0], [1.0, 7.0, 2.0, 8.0, 4.0, 6.0, 5.0, 3.5]),
        ("n = 10, no ties", x10.tolist(), y10.tolist()),
        ("n = 10, ties", np.round(x10 * 4).tolist(), np.round(y10 * 5).tolist()),
        ("n = 11, no ties", [3.1, 0.4, 2.2, 5.9, 1.3, 4.4, 9.1, 7.7, 6.0, 8.2, 0.9],
         [2.0, 1.1, 3.5, 4.1, 0.2, 6.3, 8.8, 5.0, 7.1, 9.9, 1.7]),
    ] + [c for c in correlation_cases() if len(c[1]) > 3 and len(set(c[2])) > 1]


def pairings_p(x, y, statistic, observed):
    """The exact two-sided permutation p of statistic(x permuted, y) by scipy.stats.permutation_test."""
    assert abs(statistic(np.array(x)) - observed) <= 1e-12 * abs(observed), (statistic(np.array(x)), observed)
    res = scipy.stats.permutation_test((np.array(x),), statistic, permutation_type="pairings",
                                       n_resamples=np.inf, vectorized=True, batch=20000,
                                       alternative="two-sided")
    return float(res.pvalue)


def vectorised_tau_b(y):
    y = np.array(y)
    n0 = len(y) * (len(y) - 1) / 2
    sy = np.sign(y[:, None] - y[None, :])

    def statistic(xs, axis=-1):
        xs = np.moveaxis(xs, axis, -1)
        sx = np.sign(xs[..., :, None] - xs[..., None, :])
        tied_x = ((sx == 0).sum(axis=(-1, -2)) - len(y)) / 2
        tied_y = ((sy == 0).sum() - len(y)) / 2
        return (sx * sy).sum(axis=(-1, -2)) / 2 / np.sqrt((n0 - tied_x) * (n0 - tied_y))
    return statistic


def vectorised_rho(y):
    ry = scipy.stats.rankdata(y)
    ry = (ry - ry.mean()) / np.sqrt(((ry - ry.mean()) ** 2).sum())

    def statistic(xs, axis=-1):
        rx = scipy.stats.rankdata(np.moveaxis(xs, axis, -1), axis=-1)
        rx = rx - rx.mean(axis=-1, keepdims=True)
        return (rx * ry).sum(axis=-1) / np.sqrt((rx * rx).sum(axis=-1))
    return statistic


def correlation_test(name, x, y):
    n = len(x)
    tau, rho, r = scipy.stats.kendalltau(x, y), scipy.stats.spearmanr(x, y), scipy.stats.pearsonr(x, y)
    ties = len(set(x)) < n or len(set(y)) < n
    if n <= EXACT_MAX_N:
        if ties:
            tau_p = pairings_p(x, y, vectorised_tau_b(y), tau.statistic)
        else:
            tau_p = float(scipy.stats.kendalltau(x, y, method="exact").pvalue)
            if n <= 8:  # the permutation test agrees where both apply
                assert abs(pairings_p(x, y, vectorised_tau_b(y), tau.statistic) - tau_p) <= 1e-12, name
        rho_p = pairings_p(x, y, vectorised_rho(y), rho.statistic)
        methods = ("exact permutation", "exact permutation")
    else:
        tau_p = float(scipy.stats.kendalltau(x, y, method="asymptotic").pvalue)
        rho_p = float(rho.pvalue)
        methods = ("normal approximation", "t approximation")
    return {"name": name, "x": x, "y": y,
            "kendall": {"value": value(tau.statistic), "p": value(tau_p), "method": methods[0]},
            "spearman": {"value": value(rho.statistic), "p": value(rho_p), "method": methods[1]},
            "pearson": {"value": value(r.statistic), "p": value(r.pvalue), "method": "t distribution"}}


# ---- Holm's correction -------------------------------------------------------

HOLM = [
    [0.01, 0.04, 0.03, 0.005],
    [0.2, 0.01, 0.01, 0.5, 0.04, 0.3],  # a tie; the running maximum lifts 5 x 0.01 to 0.06 and 0.5's 1 x 0.5 to 0.6
    [0.5],
    [0.02, None, 0.9, 0.001],           # None: an untested member, left out of m
    [0.3, 0.6, 0.35, 0.4],              # every adjusted p capped at 1
    [1e-6, 0.012, 0.0125, 0.013, 0.049],
]


def pearson_interval(name, x, y):
    """pearsonr's interval by Fisher's z at 95% and 80% (n >= 4)."""
    res = scipy.stats.pearsonr(np.array(x), np.array(y))
    out = {"name": name, "r": value(res.statistic), "n": len(x)}
    for level in (0.95, 0.8):
        ci = res.confidence_interval(level)
        out["ci%d" % round(level * 100)] = [value(ci.low), value(ci.high)]
    return out


def holm_by_procedure(p):
    """Each hypothesis' adjusted p: the smallest alpha at which Holm's step-down rejects it."""
    tested = [(v, i) for i, v in enumerate(p) if v is not None]
    m = len(tested)
    ordered = sorted(tested)
    candidates = sorted({min(1.0, (m - k) * v) for k, (v, _) in enumerate(ordered)})

    def rejected(alpha):
        out = set()
        for k, (v, i) in enumerate(ordered):
            if v > alpha / (m - k):
                break
            out.add(i)
        return out
    adjusted = [None] * len(p)
    for alpha in candidates:  # ascending: the first alpha that rejects a hypothesis is its adjusted p
        for i in rejected(alpha):
            if adjusted[i] is None:
                adjusted[i] = alpha
    for v, i in tested:  # never rejected below alpha = 1
        if adjusted[i] is None:
            adjusted[i] = 1.0
    try:
        from statsmodels.stats.multitest import multipletests
        sm = multipletests([v for v, _ in tested], method="holm")[1]
        for (v, i), a in zip(tested, sm):
            assert abs(adjusted[i] - a) <= 1e-15, (p, adjusted, sm)
    except ImportError:
        pass
    return {"p": p, "adjusted": adjusted}


# ---- least-squares line and the trend with log compute ----------------------

def ladder_points():
    """Four rungs of a compute ladder, three seeds each: a metric that falls with compute, with seed scatter."""
    rng = np.random.default_rng(67)
    compute = [3.1e14, 1.25e15, 4.4e15, 8.9e15]
    xs, ys = [], []
    for c in compute:
        for _ in range(3):
            xs.append(c)
            ys.append(round(0.9 - 0.12 * np.log10(c / compute[0]) + rng.normal(0.0, 0.05), 4))
    return xs, ys


LADDER_COMPUTE, LADDER_METRIC = ladder_points()

LINEAR_FIT = [
    ("n = 3", {"x": [1.0, 2.0, 4.0], "y": [2.0, 2.5, 5.0]}),
    ("negative, n = 7", {"x": [0.3, 1.1, 1.9, 2.4, 3.3, 4.0, 4.8], "y": [5.2, 4.1, 4.4, 3.0, 2.2, 2.5, 0.9]}),
    ("weak: p near 1", {"x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "y": [3.0, 1.0, 4.0, 1.0, 5.0, 2.0]}),
    ("perfect", {"x": [1.0, 2.0, 3.0, 4.0], "y": [3.0, 5.0, 7.0, 9.0]}),
    ("flat", {"x": [1.0, 2.0, 3.0, 4.0], "y": [2.0, 2.0, 2.0, 2.0]}),
    ("repeated x: three rungs, two seeds", {"x": [1.0, 1.0, 2.0, 2.0, 3.0, 3.0], "y": [0.5, 0.7, 0.9, 0.8, 1.4, 1.1]}),
    ("ladder: four rungs, three seeds, against log10 compute", {"compute": LADDER_COMPUTE, "y": LADDER_METRIC}),
    ("ladder, a flat metric against log10 compute", {"compute": LADDER_COMPUTE,
                                                     "y": [0.3, 0.5, 0.4, 0.45, 0.35, 0.4, 0.5, 0.3, 0.42, 0.38, 0.41, 0.36]}),
]


def linear_fit(name, case):
    x = np.log10(np.array(case["compute"])) if "compute" in case else np.array(case["x"])
    y = np.array(case["y"])
    res = scipy.stats.linregress(x, y)
    df = len(x) - 2
    out = dict(case, name=name, slope=value(res.slope), intercept=value(res.intercept),
               stderr=value(res.stderr), p=value(res.pvalue), df=df)
    for level in (0.95, 0.8):
        half = float(scipy.stats.t.isf((1 - level) / 2, df)) * float(res.stderr)
        out["ci%d" % round(level * 100)] = [value(res.slope - half), value(res.slope + half)]
    return out


MEAN_STD = [[2.5], [1.0, 2.0], [0.1, 0.2, 0.3, 0.4, 0.5], [1e8 + 1, 1e8 + 2, 1e8 + 4]]


def main():
    # The constant samples are deliberate: SciPy's ConstantInputWarning and its
    # "catastrophic cancellation" warning on a zero variance say what we test.
    warnings.simplefilter("ignore", RuntimeWarning)
    warnings.simplefilter("ignore", scipy.stats.ConstantInputWarning)
    golden = {
        "made_by": "tests/twin/statistics_twin.py with Python %s, numpy %s, scipy %s, mpmath %s"
                   % (sys.version.split()[0], np.__version__, scipy.__version__, mpmath.__version__),
        "mean_std": [{"values": v, "mean": value(np.mean(v)),
                      "std": value(np.std(v, ddof=1)) if len(v) > 1 else None} for v in MEAN_STD],
        "welch": [welch(*c) for c in WELCH],
        "one_sample": [one_sample(*c) for c in ONE_SAMPLE],
        "t_sf": [t_sf(t, df) for df in DF_GRID for t in T_GRID],
        "correlation": [correlation(*c) for c in correlation_cases()],
        "correlation_tests": [correlation_test(*c) for c in test_cases()],
        "holm": [holm_by_procedure(p) for p in HOLM],
        "pearson_interval": [pearson_interval(*c) for c in correlation_cases() if len(c[1]) >= 4],
        "linear_fit": [linear_fit(*c) for c in LINEAR_FIT],
    }
    with open(GOLDEN, "w", encoding="utf-8") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", GOLDEN)


if __name__ == "__main__":
    main()
