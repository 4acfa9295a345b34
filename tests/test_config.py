"""The settings tree: unknown NEXUS_* variables are reported, not silently ignored."""

import logging

from nexus import config
from nexus.config import Settings


def test_unknown_variable_is_warned_once_with_the_nearest_setting(monkeypatch, caplog):
    monkeypatch.setattr(config, "_WARNED", set())
    monkeypatch.setenv("NEXUS_TOP_K", "5")
    monkeypatch.setenv("NEXUS_GATE_K", "7")
    with caplog.at_level(logging.WARNING, logger="nexus.config"):
        settings = Settings()
        Settings()
    warnings = [r.getMessage() for r in caplog.records if "NEXUS_TOP_K" in r.getMessage()]
    assert warnings == ["NEXUS_TOP_K is not a Nexus setting and is ignored (did you mean NEXUS_GATE_K?)"]
    assert settings.gate.k == 7
    assert not any("NEXUS_GATE_K" in r.getMessage().split(" is not")[0] for r in caplog.records)


def test_every_field_is_a_known_variable():
    known = config.known_variables()
    assert {"NEXUS_KV_BLOCKS", "NEXUS_SERVE_TOKEN", "NEXUS_GATE_MODEL", "NEXUS_LEXICAL_WEIGHT", "NEXUS_N_CTX"} <= known
    assert "NEXUS_SERVE" not in known and "NEXUS_KV" not in known
