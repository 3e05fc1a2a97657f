"""Make `evaluate.load("radmetrics/<metric>")` work from any directory, offline.

evaluate resolves "radmetrics/green" as a Hub Space; when the Hub cannot be reached (or HF_HUB_OFFLINE=1)
it falls back to its local module cache, folder `metrics/radmetrics--green/<sha256>/green.py`. We place
each module there once (`radmetrics install-metrics`), so no network is needed afterwards. From the
repository root, "radmetrics/green" is also a local folder and needs no step at all.
"""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path


def evaluate_module_files() -> dict[str, Path]:
    """Metric name -> module file, for every registered scoring system that ships an evaluate module."""
    from radmetrics.plugins import scoring_systems

    return {name: Path(s.evaluate_module) for name, s in sorted(scoring_systems().items())
            if getattr(s, "evaluate_module", None)}


#: evaluate modules that are not judge scoring systems (they load their own model)
EXTRA_MODULES = {"er2score": Path(__file__).resolve().parent / "er2score" / "er2score.py"}


def all_evaluate_modules() -> dict[str, Path]:
    return {**evaluate_module_files(), **EXTRA_MODULES}


def install_evaluate_modules(namespace: str = "radmetrics") -> dict[str, Path]:
    """Copy each module (and its card) into evaluate's module cache; returns name -> installed file."""
    from evaluate.loading import init_dynamic_modules

    root = Path(init_dynamic_modules()) / "metrics"
    root.mkdir(parents=True, exist_ok=True)
    (root / "__init__.py").touch(exist_ok=True)
    installed = {}
    for name, source in all_evaluate_modules().items():
        module_name = source.stem
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        folder = root / f"{namespace}--{module_name}"
        target_dir = folder / digest
        target_dir.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").touch(exist_ok=True)
        (target_dir / "__init__.py").touch(exist_ok=True)
        shutil.copyfile(source, target_dir / source.name)
        card = source.with_name("README.md")
        if card.exists():
            shutil.copyfile(card, target_dir / "README.md")
        (target_dir / source.name).touch()  # newest copy wins: evaluate picks the latest mtime
        installed[name] = target_dir / source.name
    return installed
