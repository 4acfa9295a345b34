"""The KV bench's summary on hand-made rows: the table's keys, the phase-drift threshold, the predictor chosen on
the dev cases and reported on the test cases."""

from nexus.bench.kv import REPAIRS, summarise


def row(case, drift, repair, kl, top1=True, predictors=None, layout="b"):
    r = {"case": case, "layout": layout, "drift": drift, "repair": repair, "top1": top1, "kl": kl,
         "noise_floor_kl": 1e-3, "latency_ratio": 0.5, "tokens_recomputed": 0}
    if predictors:
        r["predictors"] = predictors
    return r


def test_summary_table_threshold_and_predictor_split():
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
    # unrepaired: drift 16 has KL 1.6e-4..6.4e-4 (within 2x the 1e-3 floor), drift 256 2.6e-3..1e-2 (not)
    assert result["layouts"]["b_history"]["threshold_drift"] == 256
    assert result["layouts"]["b_history"]["policy_meets_target_at_every_drift"]
    rho = result["spearman_rho"]
    assert rho["predictor"] == "good" and rho["test"] == 1.0 and rho["all"]["bad"]["test"] == -1.0
    assert rho["n_test"] == 4
