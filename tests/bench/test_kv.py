"""The KV bench's summary on hand-made rows: the table's keys, the phase-drift threshold, the predictor chosen on
the dev cases and reported on the test cases."""

import json

import pytest

from nexus.bench.kv import REPAIRS, plot_kv, summarise


def row(case, drift, repair, kl, top1=True, predictors=None, layout="b"):
    r = {"case": case, "layout": layout, "drift": drift, "repair": repair, "top1": top1, "kl": kl,
         "noise_floor_kl": 1e-3, "latency_ratio": 0.5, "tokens_recomputed": 0}
    if predictors:
        r["predictors"] = predictors
    return r


def test_summary_table_threshold_and_predictor_split(tmp_path, saved_figures):
    rows = []
    for case in ("c0", "c1", "c2", "c3"):
        for drift in (0, 16, 256):
            for repair in REPAIRS:
                kl = 5e-4 if repair in ("all", "policy") or drift == 0 else drift * 1e-5 * (1 + int(case[1]))
                preds = {"drift": float(drift), "good": kl, "bad": -kl} if repair == 0 and drift else None
                rows.append(row(case, drift, repair, kl, predictors=preds))
    result = summarise(rows, dev_cases={"c0", "c2"})
    keys = {"drift", "repair", "top1_agreement", "kl_mean", "kl_p95", "noise_floor_kl", "latency_ratio_vs_reprefill",
            "tokens_recomputed"}
    assert all(keys <= set(t) for t in result["rows"]) and len(result["rows"]) == 3 * len(REPAIRS)
    table = {(t["drift"], t["repair"]): t for t in result["rows"]}
    # unrepaired at drift 16, the four cases' KL is 16e-5 * (1, 2, 3, 4): mean 4e-4; at 256 the p95 interpolates
    # between the third and fourth case: 7.68e-3 + 0.85 * 2.56e-3
    assert table[16, 0]["kl_mean"] == pytest.approx(4e-4) and table[256, 0]["kl_p95"] == pytest.approx(9.856e-3)
    assert table[256, "all"]["kl_mean"] == pytest.approx(5e-4) and table[256, "all"]["n"] == 4
    # unrepaired: drift 16 has KL 1.6e-4..6.4e-4 (within 2x the 1e-3 floor), drift 256 2.6e-3..1e-2 (not)
    assert result["layouts"]["b_history"]["threshold_drift"] == 256
    assert result["layouts"]["b_history"]["policy_meets_target_at_every_drift"]
    rho = result["spearman_rho"]
    assert rho["predictor"] == "good" and rho["test"] == 1.0 and rho["all"]["bad"]["test"] == -1.0
    assert rho["n_test"] == 4

    # the plots draw those rows: mean KL per repair against drift (0 drawn at 1) beside the noise floor, and the
    # latency ratio beside the re-prefill line at 1
    (tmp_path / "result.json").write_text(json.dumps(result))
    assert [p.name for p in plot_kv(tmp_path)] == ["kv_fidelity_vs_drift.png", "kv_latency_vs_drift.png"]
    fidelity = saved_figures.lines("kv_fidelity_vs_drift.png")
    assert set(fidelity) == {f"repair {r}" for r in REPAIRS} | {"noise floor (batch split)"}
    assert fidelity["repair 0"] == ([1, 16, 256], pytest.approx([5e-4, 4e-4, 6.4e-3]))
    assert fidelity["noise floor (batch split)"] == ([1, 16, 256], [1e-3] * 3)
    latency = saved_figures.figure("kv_latency_vs_drift.png").axes[0].get_lines()
    assert [list(line.get_ydata()) for line in latency if line.get_label() == "repair policy"] == [[0.5] * 3]
