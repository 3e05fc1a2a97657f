"""The plugin manager: built-ins are default plugins, third parties come through entry points.

Third-party distributions declare, in their pyproject::

    [project.entry-points.radmetrics]
    mrscore = "radmetrics_mrscore"

and implement ``register_scoring_systems`` / ``register_judge_backends`` with ``radmetrics.hookimpl``.
"""
from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pluggy

import radmetrics.judge as _judge_package
from radmetrics import hookspecs
from radmetrics.errors import RadmetricsError, UnknownNameError
from radmetrics.scoring import ScoringSystem

# Modules that ship the built-ins; each has hookimpls, registered exactly like third-party plugins.
DEFAULT_PLUGINS = (
    "radmetrics.judge.builtin",
    "radmetrics.green.plugin",
    "radmetrics.vert.plugin",
    "radmetrics.finerad_score.plugin",
    "radmetrics.radcliq_rubric.plugin",
)

_lock = threading.RLock()
_pm: pluggy.PluginManager | None = None


def get_plugin_manager() -> pluggy.PluginManager:
    global _pm
    with _lock:
        if _pm is None:
            pm = pluggy.PluginManager("radmetrics")
            pm.add_hookspecs(hookspecs)
            for name in DEFAULT_PLUGINS:
                pm.register(importlib.import_module(name), name=name)
            pm.load_setuptools_entrypoints("radmetrics")
            _pm = pm
        return _pm


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Register a plugin object or module at run time (tests, notebooks)."""
    get_plugin_manager().register(plugin, name=name)


def unregister_plugin(plugin: object = None, name: str | None = None) -> None:
    get_plugin_manager().unregister(plugin, name=name)


def _collect(hook_name: str, pairs: bool) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def register_one(name_or_obj, factory=None):
        name = name_or_obj if pairs else getattr(name_or_obj, "name", None)
        if not isinstance(name, str) or not name:
            raise RadmetricsError(f"A plugin registered a {hook_name} entry without a name: {name_or_obj!r}")
        if not pairs and not isinstance(name_or_obj, ScoringSystem):
            raise RadmetricsError(f"Scoring system '{name}' ({type(name_or_obj).__name__}) must subclass "
                                  "radmetrics.scoring.ScoringSystem, the contract the runner calls.")
        found[name] = factory if pairs else name_or_obj

    getattr(get_plugin_manager().hook, hook_name)(register=register_one)
    return found


def scoring_systems() -> dict[str, Any]:
    return _collect("register_scoring_systems", pairs=False)


def judge_backends() -> dict[str, Callable[..., Any]]:
    return _collect("register_judge_backends", pairs=True)


def list_scoring_systems() -> list[str]:
    """Names of every scoring system, built-ins and plugins alike."""
    return sorted(scoring_systems())


#: old name -> new name; the old names keep working, with a DeprecationWarning
DEPRECATED_NAMES = {
    # "radcliq" is RadCliQ-v1 (BLEU + BERTScore + CheXbert + RadGraph) in RadEval and the literature
    "radcliq": "radcliq_rubric",
}


#: scoring systems that come from plugins this repository ships (not installed by default) -> how to install them
KNOWN_PLUGINS = {
    "mrscore": "pip install ./plugins/radmetrics-mrscore (a folder of the radmetrics repository)",
}


def plugin_install_hint(name: str) -> str | None:
    """For a name a known, not-installed plugin provides: the sentence that says how to install it."""
    how = KNOWN_PLUGINS.get(name)
    return f"'{name}' comes from a plugin that is not installed: {how}." if how else None


def get_scoring_system(name: str, **options: Any):
    """The scoring system called `name`; options (e.g. ``max_words``) configure a fresh instance."""
    systems = scoring_systems()
    if name in DEPRECATED_NAMES and name not in systems:
        warnings.warn(f"Scoring system '{name}' is now called '{DEPRECATED_NAMES[name]}'; the old name will go.",
                      DeprecationWarning, stacklevel=2)
        name = DEPRECATED_NAMES[name]
    if name not in systems:
        raise UnknownNameError("scoring system", name, systems, plugin_install_hint(name))
    system = systems[name]
    return system.configure(**options) if options else system


def list_judge_backends() -> list[str]:
    return sorted(judge_backends())


# radmetrics.judge.get_judge finds backends here; the judge package does not import the registry.
_judge_package.backend_factories = judge_backends
