"""What every benchmark command prints at the end: the result JSON (to `--json FILE`, else stdout) and where its run
folder is (on stderr)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console


def emit_result(result: Any, json_out: Path | None, folder: Path, note: str = "") -> None:
    text = json.dumps(result, indent=2)
    if json_out:
        json_out.write_text(text, encoding="utf-8")
    else:
        print(text)
    Console(stderr=True).print(f"run folder: {folder}{note}")
