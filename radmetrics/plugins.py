"""The plugin manager: built-ins are default plugins, third parties come through entry points.

Third-party distributions declare, in their pyproject::

    [project.entry-points.radmetrics]
    mrscore = "radmetrics_mrscore"

and implement ``register_scoring_systems`` / ``register_judge_backends`` with ``radmetrics.hookimpl``.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import logging
import threading
import types
import warnings
from collections.abc import Callable
from typing import Any

import pluggy

import radmetrics.judge as _judge_package
from radmetrics import hookspecs
from radmetrics.errors import RadmetricsError, UnknownNameError
from radmetrics.scoring import ScoringSystem

log = logging.getLogger(__name__)

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
            _load_entry_points(pm)
            _pm = pm
        return _pm


#: plugin name -> how messages name it ("plugin 'x' (distribution x-pkg 0.1.0)")
_labels: dict[str, str] = {}
#: names pluggy gave plugins registered at run time without one (their object ids)
_unnamed: set[str] = set()
#: problems already said in this process (the registry is read at every lookup; each is said once)
_said: set[str] = set()


def _say(message: str) -> None:
    if message not in _said:
        _said.add(message)
        log.warning("%s", message)


def _label(plugin_name: str | None) -> str:
    return _labels.get(plugin_name or "", f"plugin '{plugin_name}'")


def _dist_name(dist: importlib.metadata.Distribution) -> str:
    return (dist.metadata["Name"] or "?").lower().replace("_", "-")


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    """Each `radmetrics` entry point of the installed distributions, one at a time: a plugin that cannot be loaded
    (a missing dependency, a hook with the wrong arguments), a second install of one distribution, or a second
    plugin under one entry-point name is one warning naming it, and the built-ins and the other plugins keep
    working (pluggy's own loader stopped at the first failure, so one broken plugin stopped every command, and
    it skipped a second plugin under a taken name without a word)."""
    where: dict[str, importlib.metadata.Distribution] = {}  # distribution name -> the install in use
    for dist in importlib.metadata.distributions():
        eps = [ep for ep in dist.entry_points if ep.group == "radmetrics"]
        if not eps:
            continue
        dist_name, version = _dist_name(dist), dist.version
        if dist_name in where:
            first = where[dist_name]
            # the same version seen again is one install found twice, not two: pip's metadata left in the plugin's
            # source folder (`pip install ./plugins/radmetrics-mrscore` writes radmetrics_mrscore.egg-info there)
            # read while Python runs in that folder; uninstalling as the line advised removed the only install
            if first.version != version:
                _say(f"radmetrics plugin distribution {dist_name} is installed twice ({first.version} and {version}): "
                     f"the first on the path, {first.version}, is used; pip uninstall {dist_name} until one is left")
            continue
        where[dist_name] = dist
        for ep in eps:
            label = f"plugin '{ep.name}' (distribution {dist_name} {version})"
            if pm.get_plugin(ep.name) is not None or ep.name in _labels:
                _say(f"radmetrics {label} is not loaded: {_label(ep.name)} has that entry-point name; "
                     "rename one of them")
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as e:  # a broken plugin must not stop the built-ins and the other plugins
                _say(f"radmetrics {label} could not be loaded, its scoring systems and backends are left out: "
                     f"{type(e).__name__}: {e}" + (f" (pip install the missing package, or pip uninstall {dist_name})"
                                                   if isinstance(e, ImportError) else ""))
                continue
            _labels[ep.name] = label
            for caller in pm.get_hookcallers(plugin) or []:
                if not caller.has_spec():
                    _say(f"radmetrics {label} implements {caller.name}, which is no radmetrics hook (they are "
                         "register_scoring_systems and register_judge_backends): it is never called")


def register_plugin(plugin: object, name: str | None = None) -> None:
    """Register a plugin object or module at run time (tests, notebooks)."""
    registered = get_plugin_manager().register(plugin, name=name)
    if name is None and registered:
        # pluggy names an unnamed plugin by its object id: messages name its module or class instead
        _labels[registered] = f"plugin {_described(plugin)}"
        _unnamed.add(registered)


def _described(plugin: object) -> str:
    """A plugin registered without a name, as a user would recognise it: its module, class or object's class."""
    if isinstance(plugin, types.ModuleType):
        return f"module '{plugin.__name__}'"
    cls = plugin if isinstance(plugin, type) else type(plugin)
    what = "class" if plugin is cls else "object of class"
    return f"{what} '{cls.__module__}.{cls.__qualname__}' (registered without a name)"


def unregister_plugin(plugin: object = None, name: str | None = None) -> None:
    pm = get_plugin_manager()
    registered = name or (pm.get_name(plugin) if plugin is not None else None)
    pm.unregister(plugin, name=name)
    if registered in _unnamed:  # its object id may be another plugin's later
        _unnamed.discard(registered)
        _labels.pop(registered, None)


#: hook -> names several plugins registered -> the message: refused when asked for, so that no plugin's numbers are
#: reported under a name another also claims
_ambiguous: dict[str, dict[str, str]] = {}


def _collect(hook_name: str, pairs: bool) -> dict[str, Any]:
    """Every plugin's registrations for one hook, each plugin's hook called on its own so that a problem is said
    naming the plugin and costs only that plugin's entries: a hook that raises, an entry without a name or outside
    the contract, a name a built-in has (the built-in is kept) or another plugin has (neither is used)."""
    claims: dict[str, list[tuple[str, Any]]] = {}  # name -> (plugin, entry) in order, built-ins first
    kind = "judge backend" if pairs else "scoring system"
    pm = get_plugin_manager()
    plugins = dict(pm.list_name_plugin())
    # each plugin with this hook once, built-ins first, whatever order pluggy calls them in (tryfirst / trylast)
    names = sorted(dict.fromkeys(impl.plugin_name for impl in getattr(pm.hook, hook_name).get_hookimpls()),
                   key=lambda plugin_name: plugin_name not in DEFAULT_PLUGINS)
    for plugin_name in names:
        builtin = plugin_name in DEFAULT_PLUGINS
        label = _label(plugin_name)
        mine: dict[str, Any] = {}

        def register_one(name_or_obj=None, factory=None, *, mine=mine, label=label, **named):
            # by keyword too, as the hookspecs name the arguments: register(name=..., factory=...), register(system=...)
            if name_or_obj is None:
                name_or_obj = named.pop("name" if pairs else "system", None)
            if named:
                raise RadmetricsError(f"radmetrics {label} called register with {', '.join(map(repr, named))}: "
                                      + ("register(name, factory)" if pairs else "register(system)"))
            name = name_or_obj if pairs else getattr(name_or_obj, "name", None)
            if not isinstance(name, str) or not name:
                raise RadmetricsError(f"radmetrics {label} registered a {kind} without a name: {name_or_obj!r}")
            if pairs and not callable(factory):
                raise RadmetricsError(f"radmetrics {label} registered judge backend '{name}' with {factory!r}, "
                                      "not a factory: register(name, factory), factory(model=..., **options) "
                                      "returning a judge")
            if not pairs and not isinstance(name_or_obj, ScoringSystem):
                raise RadmetricsError(f"radmetrics {label}: scoring system '{name}' ({type(name_or_obj).__name__}) "
                                      "must subclass radmetrics.scoring.ScoringSystem, the contract the runner calls")
            mine[name] = factory if pairs else name_or_obj

        def checked(*args, register_one=register_one, builtin=builtin, **kwargs):
            try:
                register_one(*args, **kwargs)
            except RadmetricsError as e:
                if builtin:
                    raise
                _say(f"{e}; left out")

        # this plugin's hook alone, called by pluggy as it calls every hook (a wrapper run through its yield: review 42)
        alone = pm.subset_hook_caller(hook_name, remove_plugins=[p for n, p in plugins.items() if n != plugin_name])
        try:
            returned = [value for value in alone(register=checked) if value is not None]
        except Exception as e:
            if builtin:
                raise
            _say(f"radmetrics {label}: its {hook_name} raised {type(e).__name__}: {e}; its {kind}s are left out")
            continue
        if returned and not builtin:
            _say(f"radmetrics {label}: its {hook_name} returned {type(returned[0]).__name__}, which is ignored: "
                 f"call register(...) for each {kind}")
        for name, value in mine.items():
            claims.setdefault(name, []).append((plugin_name, value))
    found: dict[str, Any] = {}
    ambiguous: dict[str, str] = {}
    for name, claimants in claims.items():
        owners = [owner for owner, _ in claimants]
        if owners[0] in DEFAULT_PLUGINS:
            for owner in owners[1:]:
                _say(f"radmetrics {_label(owner)} registers {kind} '{name}', a built-in's name: the built-in is "
                     "used; rename the plugin's")
        elif len(claimants) > 1:
            ambiguous[name] = (f"{kind.capitalize()} '{name}' is registered by {len(owners)} plugins, "
                               f"{' and '.join(_label(owner) for owner in owners)}: none is used, so that no result "
                               "is another's; uninstall or rename all but one")
            _say(ambiguous[name])
            continue
        found[name] = claimants[0][1]
    _ambiguous[hook_name] = ambiguous
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
        if name in _ambiguous.get("register_scoring_systems", {}):
            raise RadmetricsError(_ambiguous["register_scoring_systems"][name])
        raise UnknownNameError("scoring system", name, systems, plugin_install_hint(name))
    system = systems[name]
    return system.configure(**options) if options else system


def list_judge_backends() -> list[str]:
    return sorted(judge_backends())


def _backends_for_judges() -> dict[str, Callable[..., Any]]:
    """The backends, and for a name several plugins registered a factory that says so (not "unknown backend")."""
    found = judge_backends()

    def refuse(message: str) -> Callable[..., Any]:
        def factory(**_: Any) -> Any:
            raise RadmetricsError(message)
        return factory

    return {**{name: refuse(message) for name, message in _ambiguous.get("register_judge_backends", {}).items()},
            **found}


# radmetrics.judge.get_judge finds backends here; the judge package does not import the registry.
_judge_package.backend_factories = _backends_for_judges
