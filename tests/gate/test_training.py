"""A tiny real training run, persistence round trip, refusal of mismatched or corrupt models."""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import replace

import numpy as np
import pytest

from nexus.gate.cross_encoder import CrossEncoderScorer, default_base_model
from nexus.gate.data import LabelledTurn, pseudo_queries, tool_disjoint
from nexus.gate.model import HEADER_FILE, GateModel, GateModelError
from nexus.gate.probabilities import GateCalibration

from .conftest import DISTRACTORS, PLANTED, PLANTED_QUERY


def test_tiny_training_lowers_the_loss(tiny_trained):
    _, _, before, after = tiny_trained
    assert after < before * 0.7


# requests none of the training groups holds (tests/gate/conftest.py), each with the index of its tool in DOCS
HELD_OUT = {"compute the zorblax index for the budget spreadsheet": 0, "get me the zorblax index of sheet Q3": 0,
            "will it rain in Rome this weekend?": 1, "write an email to Alice about the meeting": 2,
            "I need a plane ticket from Chicago to Miami": 3, "what is the total of column C in sales.xlsx": 4}


def test_tiny_training_ranks_held_out_requests_first(tiny_trained):
    """Measured on requests the run never saw: each one's tool leads by a margin of more than 3 logits (after the
    30 steps: 4.1 to 14.4 over the three scorers; untrained, the cross- and split encoders rank most of them wrong
    and the segment-cosine one leads by at most 1.9)."""
    scorer = tiny_trained[0]
    docs = [PLANTED, *DISTRACTORS]
    for request, gold in HELD_OUT.items():
        scores = scorer.score([request] * len(docs), docs)
        assert scores[gold] - np.delete(scores, gold).max() > 3.0, (request, scores)


def _model(scorer, quantize=False):
    from nexus.gate.model import GateHeader
    from nexus.gate.scorers import scorer_kind

    kind = scorer_kind(scorer)
    header = GateHeader(base_model="all-MiniLM-L6-v2", embedder_id="hash:64", slb_weights={"lexical": 0.3, "name_bonus": 1.0},
                        top_k=10, max_length=scorer.max_length, quantize=quantize, training={"data_hash": "x"}, calibration={},
                        scorer=kind)
    return GateModel(scorer, GateCalibration.identity(), header)


def test_persistence_round_trip(tiny_trained, tmp_path):
    scorer = tiny_trained[0]
    folder = _model(scorer).save(tmp_path / "gate")
    assert (folder / HEADER_FILE).is_file() and not list(tmp_path.glob(".gate.tmp-*"))
    loaded = GateModel.load(folder)
    docs = [PLANTED, *DISTRACTORS]
    assert loaded.scorer.score([PLANTED_QUERY] * 5, docs) == pytest.approx(scorer.score([PLANTED_QUERY] * 5, docs), abs=1e-4)
    assert loaded.header.training["data_hash"] == "x" and loaded.header.format_version == 1
    assert loaded.calibration.thresholds == GateCalibration.identity().thresholds
    # saving again over an existing model replaces it atomically
    _model(scorer).save(folder)
    assert GateModel.load(folder).header.base_model == "all-MiniLM-L6-v2"


def test_quantised_load_keeps_the_ranking(tiny_trained, tmp_path):
    scorer = tiny_trained[0]
    folder = _model(scorer, quantize=True).save(tmp_path / "gate")
    loaded = GateModel.load(folder)
    assert loaded.scorer.quantized
    docs = [PLANTED, *DISTRACTORS]
    for request, gold in HELD_OUT.items():  # INT8 weights still rank each held-out request's tool first
        assert int(np.argmax(loaded.scorer.score([request] * len(docs), docs))) == gold, request


def test_refuses_mismatched_or_corrupt_models(tiny_trained, tmp_path):
    folder = _model(tiny_trained[0]).save(tmp_path / "gate")
    header = json.loads((folder / HEADER_FILE).read_text())

    newer = tmp_path / "newer"
    shutil.copytree(folder, newer)
    (newer / HEADER_FILE).write_text(json.dumps({**header, "format_version": 99}))
    with pytest.raises(GateModelError, match="format version 99"):
        GateModel.load(newer)

    corrupt = tmp_path / "corrupt"
    shutil.copytree(folder, corrupt)
    weights = next(corrupt.glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-10] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(GateModelError, match="checksum"):
        GateModel.load(corrupt)

    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    (broken / HEADER_FILE).write_text("{not json")
    with pytest.raises(GateModelError, match="unreadable header"):
        GateModel.load(broken)

    unknown = tmp_path / "unknown"
    shutil.copytree(folder, unknown)
    (unknown / HEADER_FILE).write_text(json.dumps({**header, "scorer": "magic"}))
    with pytest.raises(GateModelError, match="unknown scorer kind 'magic'"):
        GateModel.load(unknown)

    with pytest.raises(GateModelError, match="not a Nexus gate model"):
        GateModel.load(default_base_model())  # a plain encoder folder has no gate header
    with pytest.raises(GateModelError, match="no gate model"):
        GateModel.load(tmp_path / "missing")


def test_scorer_rejects_a_folder_without_config(tmp_path):
    from nexus.errors import ModelError

    from nexus.gate.scorers import make_scorer

    with pytest.raises(ModelError, match="config.json"):
        CrossEncoderScorer(tmp_path)
    with pytest.raises(ModelError, match="config.json"):
        make_scorer("segment-cosine", tmp_path)
    with pytest.raises(ModelError, match="unknown scorer kind"):
        make_scorer("bm25", tmp_path)


def test_pseudo_queries_are_deterministic_and_drawn_from_the_docs():
    from nexus.registry import Tool

    tool = Tool("get_weather", "Get the current weather for a city. Uses a paid API.",
                {"type": "object", "properties": {"city": {"type": "string", "description": "Name of the city"},
                                                  "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}}, "w")
    a = pseudo_queries(tool, random.Random(1), 4)
    assert a == pseudo_queries(tool, random.Random(1), 4)
    assert len(a) == len(set(a)) == 4
    assert any("weather" in q.lower() for q in a)
    assert all("paid API" not in q for q in a)  # only the first sentence is used


def test_tool_disjoint_drops_names_families_and_descriptions():
    from nexus.registry import Tool

    obj = {"type": "object"}
    pool = [Tool("Movies_1_FindMovies", "Find movies", obj), Tool("get_time", "Current time", obj),
            Tool("clock", "current  TIME", obj), Tool("send_email", "Send mail", obj)]
    exclude = [Tool("Movies_3_FindMovies", "Search films", obj), Tool("time_now", "Current time", obj),
               Tool("send_email", "Other text", obj)]
    assert [t.name for t in tool_disjoint(pool, exclude)] == []
    assert [t.name for t in tool_disjoint(pool, exclude[:1])] == ["get_time", "clock", "send_email"]


def _synthetic_registry():
    from nexus.registry import Registry, Tool

    verbs = ["archive", "translate", "summarise", "encrypt", "print", "share"]
    nouns = ["invoice", "photo", "contract", "playlist"]
    tools = [Tool(f"{v}_{n}", f"{v.capitalize()} a {n} stored in the account.",
                  {"type": "object", "properties": {f"{n}_id": {"type": "string", "description": f"Identifier of the {n}"}}}, "syn")
             for v in verbs for n in nouns]
    reg = Registry()
    reg.set_source("syn", tools)
    turns = []
    for v in verbs:
        for n in nouns:
            for i, ask in enumerate([f"please {v} my {n}", f"can you {v} the {n} from last week", f"I need to {v} this {n} now"]):
                turns.append(LabelledTurn(f"{v}-{n}-{i}", ask, (f"{v}_{n}",)))
    turns += [LabelledTurn(f"none-{i}", q) for i, q in enumerate(
        ["tell me a joke", "what is the meaning of life", "how are you today", "sing a song", "who won the match",
         "recommend a novel", "what is love", "say hello", "explain gravity", "write a haiku", "good morning", "count to ten"])]
    return reg, turns


def test_train_gate_end_to_end_saves_a_loadable_calibrated_model(tmp_path):
    """The whole recipe on a small synthetic registry (hash embedder, a few steps)."""
    import torch

    from nexus.gate import BoundaryGate
    from nexus.gate.training import TrainConfig, train_gate
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer

    torch.set_num_threads(1)
    reg, turns = _synthetic_registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    config = TrainConfig(max_length=48, max_steps=8, groups_per_step=2, negatives=3, hard_pool=8, cal_fraction=0.3, k=6)
    model, report = train_gate(reg, slb, turns, self_supervised=True, config=config, out_dir=tmp_path / "gate")
    assert report.steps == 8 and report.groups["labelled"] > 0 and report.groups["no_tool"] > 0 and report.groups["self"] > 0
    assert report.calibration["n_relevant"] >= 10 and report.calibration["n_no_tool"] >= 1
    # ~20 labelled calibration turns are too few to trust a 1% ROUTE risk: decisions stay SHORTLIST / FALLBACK
    assert model.calibration.thresholds.route == float("inf") and model.calibration.thresholds.no_tool == float("inf")
    assert report.calibration["decisions_disabled"].startswith("only ")
    header = GateModel.read_header(tmp_path / "gate")
    assert header.training["data_hash"] == report.data_hash and header.embedder_id == slb.embedder.id
    assert header.calibration["thresholds"] == model.calibration.thresholds.to_dict()
    loaded = GateModel.load(tmp_path / "gate")
    d = BoundaryGate(slb, reg, loaded, k=6).decide("please encrypt my contract")
    fresh = BoundaryGate(slb, reg, model, k=6).decide("please encrypt my contract")  # the model before saving
    assert [h.key for h in d.candidates] == [h.key for h in fresh.candidates]
    assert (d.p_top1, d.p_no_tool) == pytest.approx((fresh.p_top1, fresh.p_no_tool), abs=1e-4)


def test_self_supervised_only_training_needs_no_labels(tmp_path):
    import torch

    from nexus.gate.training import TrainConfig, train_gate
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer

    torch.set_num_threads(1)
    reg, _ = _synthetic_registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    config = TrainConfig(max_length=48, max_steps=4, groups_per_step=2, negatives=3, hard_pool=8, cal_fraction=0.5,
                         self_per_tool=2, k=6)
    model, report = train_gate(reg, slb, (), self_supervised=True, config=config)
    assert set(report.groups) == {"self", "self_no_tool"}
    assert report.calibration["n_no_tool"] > 0
    # pseudo-queries are no evidence for confident decisions: the gate only reranks and shortlists
    assert model.calibration.thresholds.route == float("inf") and model.calibration.thresholds.no_tool == float("inf")
    assert report.calibration["decisions_disabled"] == "pseudo-queries only"


def test_no_tool_turns_that_restate_a_relevant_turn_are_dropped():
    from nexus.gate.training import drop_contradicting
    from nexus.slb import HashEmbedder

    relevant = [LabelledTurn("r1", "calculate the area of a triangle with base 10 and height 5", ("triangle_area",))]
    no_tool = [LabelledTurn("n1", "calculate the area of a triangle with base 10 and height 5"),
               LabelledTurn("n2", "tell me a joke about penguins")]
    kept = drop_contradicting(no_tool, relevant, HashEmbedder(), 0.75)
    assert [t.id for t in kept] == ["n2"]
    assert [t.id for t in drop_contradicting(no_tool, [], HashEmbedder(), 0.75)] == ["n1", "n2"]


def test_a_ready_cross_encoder_folder_is_calibrated_not_trained(tmp_path):
    """`--steps 0`: a Hugging Face reranker folder (one logit per pair) is wrapped and calibrated as it is."""
    import torch

    from nexus.gate.training import TrainConfig, train_gate
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer

    torch.set_num_threads(1)
    ready = CrossEncoderScorer(default_base_model(), max_length=48, seed=3)  # stands in for a downloaded reranker
    ready.save(tmp_path / "reranker")
    reg, turns = _synthetic_registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    config = TrainConfig(base_model=str(tmp_path / "reranker"), scorer="cross-encoder", max_steps=0, max_length=48,
                         negatives=3, hard_pool=8, cal_fraction=0.3, k=6, quantize=False)
    _, report = train_gate(reg, slb, turns, self_supervised=False, config=config, out_dir=tmp_path / "gate")
    assert report.steps == 0 and report.calibration["n_relevant"] >= 10
    loaded = GateModel.load(tmp_path / "gate")
    pairs = (["please encrypt my contract"] * 2, ["encrypt contract: Encrypt a contract", "print photo: Print a photo"])
    assert np.allclose(loaded.scorer.score(*pairs), ready.score(*pairs), atol=1e-5)


def test_compact_save_rebuilds_the_same_scorer_on_the_packaged_base(tiny_trained, tmp_path):
    """models/gate ships only the tensors training changed (fp16); loading must give the scores that were calibrated."""
    import copy

    import torch

    from nexus.gate.cross_encoder import SegmentCosineScorer
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer
    from nexus.slb.compact import round_half

    trained, groups, _, _ = tiny_trained
    if not isinstance(trained, SegmentCosineScorer):
        # regression: `nexus gate export` of a cross-encoder gate ended in a TypeError (its save() takes no `compact`)
        with pytest.raises(GateModelError, match="compact save .* scorer is 'cross-encoder'"):
            GateModel.from_scorer(trained, SemanticLookasideBuffer(HashEmbedder()), GateCalibration.identity()).save(
                tmp_path / "gate", compact=True)
        assert not (tmp_path / "gate").exists() and not list(tmp_path.iterdir())
        return
    scorer = copy.deepcopy(trained)
    scorer.network.load_state_dict(round_half(scorer.network.state_dict()))   # what train_gate does before calibrating
    slb = SemanticLookasideBuffer(HashEmbedder())
    model = GateModel.from_scorer(scorer, slb, GateCalibration.identity())
    model.save(tmp_path / "gate", compact=True)
    assert not (tmp_path / "gate" / "config.json").exists()
    assert (tmp_path / "gate" / "encoder.safetensors").stat().st_size < 30e6
    loaded = GateModel.load(tmp_path / "gate")
    turns, docs = [g.turn for g in groups for _ in g.docs], [d for g in groups for d in g.docs]
    torch.set_num_threads(1)
    assert loaded.scorer.score(turns, docs) == pytest.approx(scorer.score(turns, docs), abs=1e-4)


def test_the_segment_cosine_gate_can_start_from_a_compact_tuned_embedder(tmp_path):
    """`--base models/embedder` (a compact tuned embedder: `embedder.safetensors` on the packaged MiniLM): the gate's
    encoder starts from those weights, not from the packaged ones (the shipped gate is trained this way)."""
    import torch
    from transformers import AutoModel

    from nexus.gate.cross_encoder import SegmentCosineScorer
    from nexus.slb.compact import save_compact
    from nexus.slb.embedders import COMPACT_FILE

    base = default_base_model()
    tuned = AutoModel.from_pretrained(str(base), local_files_only=True)
    with torch.no_grad():
        tuned.encoder.layer[0].output.dense.bias.add_(0.5)   # a stand-in for tuning
    save_compact(tuned, base, tmp_path / COMPACT_FILE)
    start = SegmentCosineScorer(tmp_path, max_length=32)
    packaged = SegmentCosineScorer(None, max_length=32)
    ours = start.network["encoder"].encoder.layer[0].output.dense.bias
    assert torch.allclose(ours, tuned.encoder.layer[0].output.dense.bias.half().float())
    assert not torch.allclose(ours, packaged.network["encoder"].encoder.layer[0].output.dense.bias)


def _tiny_gate(folder):
    """A two-step gate on the synthetic registry, saved in `folder` (10 calibration turns per class)."""
    import torch

    from nexus.gate.training import TrainConfig, train_gate
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer

    torch.set_num_threads(1)
    reg, turns = _synthetic_registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    config = TrainConfig(max_length=48, max_steps=2, groups_per_step=2, negatives=3, hard_pool=8, cal_fraction=0.3, k=6,
                         max_calibration_turns=10, calibration_sizes=(24,))
    model, _ = train_gate(reg, slb, turns, self_supervised=False, config=config, out_dir=folder)
    return model, reg, slb, turns


def test_recalibrate_rebuilds_the_calibration_split_and_may_score_more_of_it(tmp_path):
    """`nexus gate calibrate`: from the training data and the saved config the same split is rebuilt (same
    calibration); a larger `max_calibration_turns` scores more of it and is recorded in the header."""
    from nexus.gate.training import recalibrate

    model, reg, slb, turns = _tiny_gate(tmp_path / "gate")
    again = recalibrate(tmp_path / "gate", reg, slb, turns)
    assert again.calibration.fusion == pytest.approx(model.calibration.fusion, abs=1e-6)
    assert again.calibration.report["n_relevant"] == model.calibration.report["n_relevant"] == 10
    more = recalibrate(tmp_path / "gate", reg, slb, turns, max_calibration_turns=None)
    assert more.calibration.report["n_relevant"] > 10
    header = GateModel.read_header(tmp_path / "gate")
    assert header.training["config"]["max_calibration_turns"] is None
    assert header.training["n_calibration"] == more.calibration.report["n_turns"]


def test_recalibrate_fits_dev_registries_too_and_fingerprints_them(tmp_path):
    """`nexus gate calibrate --dev D`: every turn of a dev registry is scored and fitted with the calibration split,
    and its tools are fingerprinted, so a benchmark on that registry is refused afterwards."""
    from nexus.gate.bench import OverlapError, check_disjoint
    from nexus.gate.training import DevSet, recalibrate

    model, reg, slb, turns = _tiny_gate(tmp_path / "gate")
    assert check_disjoint(model, reg, allow_overlap=True)  # trained on its own registry: the check sees it
    model.header = replace(model.header, training={**model.header.training, "tools_fingerprint": {}})
    assert check_disjoint(model, reg) == []
    dev = DevSet("dev", slb, reg, turns[:7])
    before = model.calibration.report["n_turns"]
    again = DevSet("again", slb, reg, turns[5:9])  # shares two turns with the first: they are scored once
    refitted = recalibrate(tmp_path / "gate", reg, slb, turns, dev=[dev, again])
    assert refitted.calibration.report["n_turns"] == before + 7 + 2
    record = GateModel.read_header(tmp_path / "gate").training["calibration_dev"]
    assert record["sets"] == {"dev": {"tools": len(reg), "turns": 7}, "again": {"tools": len(reg), "turns": 4}}
    refitted.header = replace(refitted.header, training={**refitted.header.training, "tools_fingerprint": {}})
    with pytest.raises(OverlapError, match="calibration dev registries"):
        check_disjoint(refitted, reg)


def test_calibration_split_caps_the_ambiguous_sources_as_a_class_of_their_own():
    from nexus.gate.training import TrainConfig, calibration_split
    from nexus.registry import Registry, Tool

    registry = Registry()
    for source in ("toolalpaca", "apibench_torchhub"):
        registry.set_source(source, [Tool(f"{source}_tool{i}", f"{source} tool number {i} does thing {i}",
                                          {"type": "object"}, source) for i in range(20)])
    keys = {t.name: k for k, t in registry.items()}
    turns = [LabelledTurn(f"{s}:{i}", f"request {i} for {s}", (keys[f"{s}_tool{i}"],), (), s)
             for s in ("toolalpaca", "apibench_torchhub") for i in range(20)]
    _, _, cal_rel, _, _, _ = calibration_split(registry, turns, [], TrainConfig(cal_fraction=0.5, max_calibration_turns=3))
    by_source = [t.source for t in cal_rel]
    assert by_source.count("toolalpaca") == 3 and by_source.count("apibench_torchhub") == 3


def test_unranked_turns_count_for_no_tool_but_not_for_the_route_certificate():
    from nexus.gate.probabilities import RiskTargets, ScoredTurn, fit_calibration

    rng = np.random.default_rng(0)
    ranked, nt = [], []
    for _ in range(400):
        ce = rng.normal(0, 1, 5)
        ce[0] += 4
        ranked.append(ScoredTurn(ce, np.full(5, 0.5) + 0.1 * (np.arange(5) == 0), np.zeros(5), np.arange(5) == 0, False))
        nt.append(ScoredTurn(rng.normal(-3, 1, 5), np.full(5, 0.3), np.zeros(5), np.zeros(5, bool), True))
    # confident turns whose labelled gold is another candidate (an ambiguous source): as ranked turns they are ROUTE
    # errors; unranked they leave ROUTE alone
    wrong = [ScoredTurn(t.ce, t.dense, t.lexical, np.arange(5) == 1, False, 0, ranked=True) for t in ranked[:60]]
    targets = RiskTargets(route=0.02)
    with_errors = fit_calibration(ranked + nt + wrong, targets)
    unranked = fit_calibration(ranked + nt + [replace(t, ranked=False) for t in wrong], targets)
    clean = fit_calibration(ranked + nt, targets)
    assert unranked.report["n_relevant_unranked"] == 60 and unranked.report["n_relevant"] == 400
    assert unranked.report["top1"] == clean.report["top1"] > with_errors.report["top1"]
    # the no-tool map sees the unranked turns too, so coverage moves a little, not as with errors
    assert abs(unranked.report["coverage"] - clean.report["coverage"]) < 0.01
    assert unranked.report["coverage"] > with_errors.report["coverage"] + 0.05
    assert unranked.no_tool != clean.no_tool   # fitted with the 60 unranked turns among the relevant ones
    assert with_errors.no_tool.mean == pytest.approx(unranked.no_tool.mean)  # the same turns, ranked or not


def test_the_split_point_chosen_for_training_is_the_one_saved_and_loaded(tmp_path):
    """`nexus gate train --scorer split-cosine --joint-from 5`: the saved gate reads five layers per segment."""
    import torch

    from nexus.gate.training import TrainConfig, TrainingError, train_gate
    from nexus.slb import HashEmbedder, SemanticLookasideBuffer

    torch.set_num_threads(1)
    reg, turns = _synthetic_registry()
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    config = TrainConfig(scorer="split-cosine", joint_from=5, max_length=48, max_steps=2, groups_per_step=2, negatives=3,
                         hard_pool=8, cal_fraction=0.3, k=6)
    model, _ = train_gate(reg, slb, turns, self_supervised=False, config=config, out_dir=tmp_path / "gate")
    assert model.scorer.joint_from == 5
    assert GateModel.load(tmp_path / "gate").scorer.joint_from == 5
    assert train_gate(reg, slb, turns, self_supervised=False, config=replace(config, joint_from=None))[0].scorer.joint_from == 4
    with pytest.raises(TrainingError, match="split-cosine scorer only"):
        train_gate(reg, slb, turns, self_supervised=False, config=replace(config, scorer="segment-cosine"))
