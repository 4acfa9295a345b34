"""Gate fixtures: one tiny real cross-encoder training run per session (the packaged MiniLM, seconds)."""

from __future__ import annotations

import pytest

from nexus.gate.data import PairGroup

PLANTED_QUERY = "what is the zorblax index of my quarterly spreadsheet?"
PLANTED = "zorblax index: Compute the zorblax index of a spreadsheet. Parameters: sheet (the spreadsheet file)"
DISTRACTORS = (
    "get weather: Current weather for a city. Parameters: city (city name)",
    "send email: Send an email to a recipient. Parameters: to (address); body (text)",
    "book flight: Book a flight between two airports. Parameters: origin; destination; date",
    "spreadsheet sum: Sum a column of a spreadsheet. Parameters: sheet; column",
)


def tiny_groups() -> list[PairGroup]:
    """A planted positive among distractors, plus ordinary groups with rotating positives."""
    docs = (PLANTED,) + DISTRACTORS
    groups = [PairGroup(PLANTED_QUERY, docs, (1, 0, 0, 0, 0))]
    asks = ["weather in Paris tomorrow", "email my boss the report", "fly from Boston to Denver on Friday",
            "add up column B of budget.xlsx"]
    for i, ask in enumerate(asks):
        labels = tuple(1 if j == i + 1 else 0 for j in range(len(docs)))
        groups.append(PairGroup(ask, docs, labels))
    groups.append(PairGroup("tell me a joke about penguins", docs, (0, 0, 0, 0, 0), "no_tool"))
    return groups


@pytest.fixture(scope="session", params=["segment-cosine", "cross-encoder", "split-cosine", "split-turn"])
def tiny_trained(request):
    """(scorer, groups, loss before, loss after): 30 steps on the planted groups, for each scorer kind."""
    import torch

    from nexus.gate.scorers import make_scorer
    from nexus.gate.training import TrainConfig, fit_scorer, init_head, mean_loss

    torch.set_num_threads(1)
    groups = tiny_groups()
    config = TrainConfig(max_length=64, groups_per_step=3, max_steps=30, epochs=100, lr=1e-4, head_lr=2e-3, warmup=0.1)
    scorer = make_scorer(request.param, None, max_length=64, seed=0)
    init_head(scorer, groups)
    before = mean_loss(scorer, groups, config.pointwise_weight)
    fit_scorer(scorer, groups, config)
    after = mean_loss(scorer, groups, config.pointwise_weight)
    return scorer, groups, before, after


def uncached_scores(scorer, turns, docs):
    """A split scorer's logits with both segments computed afresh (no cached tool states)."""
    import torch

    scorer.network.eval()
    with torch.inference_mode():
        return scorer.logits(scorer.encode(turns, docs)).float().numpy()
