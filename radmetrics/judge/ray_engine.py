"""Scale-out: shard a run across Ray actors, one judge per actor (per GPU when there are GPUs).

Every actor opens the same response cache file (SQLite in WAL mode is safe across processes), so answers
already judged are never asked again and an interrupted sharded run resumes like a single one.
An actor whose process dies (the OOM killer, a preempted node) is restarted by Ray and its batch asked again
(`RayShardedJudge.actor_restarts`): the new judge reads the dead one's answers from that cache.
`radmetrics score --engine ray --actors N`.

At scale: the actors are created once (weights loaded once each) and kept across calls; each gets batches big
enough to keep its engine's slot table full through continuous batching (an even share of the call's prompts,
up to `max_batch_rows`), not a handful of rows per call; answers stream back batch by batch as actors finish
(`ActorPool.map_unordered`, nothing gathers the whole run) and are handed to ``on_result`` as they arrive. The
CLI calls this per chunk of the input and writes each chunk's rows in input order (`radmetrics.streaming`), so
the driver's memory stays flat whatever the input's length.
"""
from __future__ import annotations

import os
import time
import uuid
from typing import Any

from radmetrics.errors import JudgeError
from radmetrics.types import CutAnswer, GenerationConfig, GenerationFailure


class _JudgeActor:
    """A Ray actor holding one judge (weights loaded once, kept across calls); answers batches of prompts."""

    def __init__(self, backend: str, model: str | None, options: dict[str, Any], cache: Any, cwd: str | None = None):
        from radmetrics.judge import get_judge

        # relative paths (--replay, --judge FOLDER, --cache) as the driver read them: a worker of a cluster started
        # elsewhere (`ray start`) runs in that command's folder, where they named nothing or another file
        if cwd and os.path.isdir(cwd):
            os.chdir(cwd)
        self.judge = get_judge(backend, model=model, cache=cache, **options)

    def judge_batch(self, indices: list[int], prompts: list[str], config: dict[str, Any], anew: list[str] = (),
                    batch: str | None = None, named: bool = False):
        if anew:  # asked again, their cached answers not read (--retry-unscored); ``batch``: the batch's name, the same
            # when Ray gives the batch again to this actor restarted, whose judge then asks again only what the dead one
            # had not (it asked them all a third time, review 42), by what this node's cache recorded under the name
            self.judge.ask_anew(anew, _config(config), batch=batch)
        texts = self.judge.generate(prompts, _config(config), progress=False)
        # ``named``: the caller's name (`RayShardedJudge.ask_anew`), kept until it calls batch_done (a run killed before
        # its rows were written reads it when continued); otherwise the batch's own, of no use once it is answered
        if anew and batch and not named:
            self.judge.batch_done(batch)
        # a cut answer's limit and context go back with it: its reason says which limit it reached
        return indices, [str(t) for t in texts], [t.reason if isinstance(t, GenerationFailure) else "" for t in texts], \
            [(t.limit, t.context) if isinstance(t, CutAnswer) else None for t in texts]

    def forget(self, prompts: list[str], config: dict[str, Any]) -> None:
        self.judge.forget(prompts, _config(config))

    def answered_anew(self, prompts: list[str], config: dict[str, Any], batch: str) -> list[bool]:
        return self.judge.answered_anew(prompts, _config(config), batch)

    def batch_done(self, batch: str) -> None:
        self.judge.batch_done(batch)


def _config(config: dict[str, Any]) -> GenerationConfig:
    """A GenerationConfig from its `to_dict` (the stop strings as the tuple it holds)."""
    config = dict(config)
    config["stop"] = tuple(config.get("stop") or ())
    return GenerationConfig(**config)


class RayShardedJudge:
    """A `Judge` (radmetrics.judge.base) whose work runs on `actors` Ray actors, created on the first call and
    kept for later ones (the CLI calls once per chunk of the input). ``cache``: the response cache file the actors
    share (None: none, or ``default_cache`` for a backend cached by default); ``self.cache`` is the one they got."""

    #: rows per actor call at most (the engine refills its slots within a call; several times its table)
    max_batch_rows = 2048
    #: times Ray restarts an actor whose process died (the OOM killer, a kill -9, a preempted node) and asks its batch
    #: again, in a run: the restarted judge answers from the response cache what the dead one had answered, so a
    #: long run survives a worker lost at any hour; an actor that keeps dying (the same batch over the memory each
    #: time) stops the run once these are spent. A judge that cannot be built is never restarted (Ray's rule).
    actor_restarts = 3
    #: seconds between looks, while no batch ends, at whether the cluster still holds the pool; and how long it may
    #: hold too few (a node lost, none come in its place) before the run ends: Ray waits for ever to place the restart
    #: of an actor whose node is gone when no other node has room, so the run hung without a word (review 42)
    placement_check_s = 5.0
    unplaceable_wait_s = 60.0

    def __init__(self, backend: str, model: str | None = None, cache: Any = None, actors: int = 2,
                 batch_size: int | None = None, gpus_per_actor: float | None = None, default_cache: Any = None,
                 **options: Any):
        from radmetrics.judge import get_judge

        # Built here (weights load lazily, in the actors): a bad option fails now, not in every actor.
        local = get_judge(backend, model=model, cache=None, **options)
        if cache is None and getattr(local.backend, "cache_by_default", True):
            cache = default_cache  # as a local run: the default cache, except for a backend like replay (review 20)
        self.backend_name, self.model, self.cache, self.options = backend, model, cache, options
        self.actors, self.batch_size, self.gpus_per_actor = actors, batch_size, gpus_per_actor
        self._identity = local.identity()
        self._pool: list[Any] | None = None
        self._gpus: float = 0  # each actor's GPUs, once the pool is made
        # prompts the next generate has asked again (`ask_anew`), by whichever actor, each with the caller's name for it
        self._anew: dict[str, str | None] = {}

    def identity(self) -> dict[str, Any]:
        # not the actor count: it changes no answer, and a run resumed on a cluster that grew or shrank would
        # otherwise start over (its fingerprint, and so its part file's identity, changed)
        return {**self._identity, "engine": "ray"}

    def _actors(self) -> list[Any]:
        import ray

        if self._pool is None:
            if not ray.is_initialized():
                _connect_to_ray(ray)
            gpus = self._gpus = self._gpus_per_actor(ray.cluster_resources())
            actor = ray.remote(num_gpus=gpus, num_cpus=0 if gpus else 1, max_restarts=self.actor_restarts,
                               max_task_retries=self.actor_restarts)(_JudgeActor)
            self._pool = [actor.remote(self.backend_name, self.model, self.options,
                                       str(self.cache) if self.cache else False, os.getcwd())
                          for _ in range(self.actors)]
        return self._pool

    def _gpus_per_actor(self, resources: dict[str, float]) -> float:
        """GPUs each actor takes (one per judge when the cluster has GPUs), refusing a pool the cluster cannot
        hold: Ray waits forever for an actor it cannot place, so the run hung without a word."""
        gpus = self.gpus_per_actor
        if gpus is None:
            gpus = 1 if resources.get("GPU", 0) else 0
        short = self._shortfall(gpus, resources)
        if short and gpus:
            raise JudgeError(f"--actors {self.actors} needs {short[0]:g} GPUs (one judge per GPU); the Ray "
                             f"cluster has {short[1]:g}: use --actors {int(short[1] // gpus)} or fewer, or add "
                             "GPU nodes")
        if short:
            raise JudgeError(f"--actors {self.actors} needs {self.actors} CPUs (one judge each, the cluster has no "
                             f"GPUs); the Ray cluster has {short[1]:g}: use --actors {max(1, int(short[1]))} or "
                             "fewer, or add nodes")
        return gpus

    def _shortfall(self, gpus: float, resources: dict[str, float]) -> tuple[float, float] | None:
        """(needed, held) of what the pool takes from the cluster (GPUs when each actor takes some, else a CPU
        each) where the cluster holds too few; None where it holds the pool."""
        need, have = (gpus * self.actors, resources.get("GPU", 0)) if gpus else (self.actors, resources.get("CPU", 0))
        return (need, have) if need > have else None

    def forget(self, prompts, config: GenerationConfig | None = None) -> None:
        """Drop these prompts' cached answers so the next generate asks again (`--retry-unscored`): in every actor,
        as each reads its own node's cache file (one machine: the one file, dropped once per actor)."""
        prompts = list(prompts)
        if prompts:
            self._on_every_actor("forget", prompts, (config or GenerationConfig()).to_dict())

    def ask_anew(self, prompts, config: GenerationConfig | None = None, batch: str | None = None) -> None:
        """The next generate asks these prompts again instead of reading their cached answers, which stay cached until
        the new ones replace them (`--retry-unscored`; `CachedJudge.ask_anew`): told to the actor each one goes to,
        with ``batch`` (the name every actor records them under, in its node's cache file, until `batch_done`) or
        else a name for its batch alone."""
        self._anew.update(dict.fromkeys(prompts, batch))

    def answered_anew(self, prompts, config: GenerationConfig | None, batch: str) -> list[bool]:
        """`CachedJudge.answered_anew`, in every actor's node's cache file: answered again there."""
        prompts = list(prompts)
        if not prompts:
            return []
        found = self._on_every_actor("answered_anew", prompts, (config or GenerationConfig()).to_dict(), batch)
        return [any(again) for again in zip(*found)]

    def batch_done(self, batch: str) -> None:
        """`CachedJudge.batch_done`, in every actor's node's cache file."""
        self._on_every_actor("batch_done", batch)

    def _on_every_actor(self, method: str, *args: Any) -> list[Any]:
        """``method`` called on every actor (each reads its own node's cache file; one machine: the one file, once per
        actor), their results as they end. An actor that died: one line; one whose node left with no room for it: the
        run ends, as in generate (`ray.get` waited for it for ever in forget, review 42)."""
        refs = _Refs([getattr(actor, method).remote(*args) for actor in self._actors()])
        return list(_reraised_in_one_line(self._results(refs), bool(self.cache), self.actor_restarts))

    def generate(self, prompts, config: GenerationConfig | None = None, on_result=None, progress: bool = True):
        from ray.util import ActorPool

        config = config or GenerationConfig()
        prompts = list(prompts)
        # each distinct prompt goes to one actor, its answer to every position that asked it: a repeated row split
        # over two actors was asked twice (with no cache, or a server that does not answer alike twice)
        positions: dict[str, list[int]] = {}
        for i, prompt in enumerate(prompts):
            positions.setdefault(prompt, []).append(i)
        unique = list(positions)
        # an even share per actor keeps every engine's table busy; small calls still use every actor
        size = self.batch_size or max(1, min(self.max_batch_rows, -(-len(unique) // self.actors)))
        batches = [(list(range(k, min(k + size, len(unique)))), unique[k : k + size])
                   for k in range(0, len(unique), size)]
        texts: list[Any] = [None] * len(prompts)
        pool = ActorPool(self._actors())
        config_dict = config.to_dict()
        submitted: list[Any] = []
        # as CachedJudge: each prompt asked anew once, by the call that has it
        anew = {p: self._anew.pop(p) for p in unique if p in self._anew}

        def submit(actor, batch):
            again = [p for p in batch[1] if p in anew]
            names = {anew[p] for p in again}
            # one caller's name for the whole batch: under it the actors record what to ask again until the caller is
            # done with it, so a run killed and continued (other batches, other actors) reads what was asked again
            named = len(names) == 1 and None not in names
            submitted.append(actor.judge_batch.remote(batch[0], batch[1], config_dict, again,
                                                      names.pop() if named else uuid.uuid4().hex if again else None,
                                                      named))
            return submitted[-1]

        # answers come back batch by batch as actors finish (no gathering of the whole run)
        for batch in batches:
            pool.submit(submit, batch)
        results = self._results(pool)
        try:
            for indices, answers, failures, cuts in _reraised_in_one_line(results, bool(self.cache),
                                                                                self.actor_restarts):
                for u, text, failure, cut in zip(indices, answers, failures, cuts):
                    answer = (GenerationFailure(failure) if failure else CutAnswer(text, *cut) if cut else text)
                    for i in positions[unique[u]]:
                        texts[i] = answer
                        if on_result:
                            on_result(i, answer)
        except JudgeError:
            _collect_the_others(submitted)
            raise
        return texts

    def _results(self, pool: Any):
        """The pool's results as its batches end (an `ActorPool`, or `_Refs`: calls made of every actor); while none
        ends, a look every `placement_check_s` at whether the cluster still holds every actor: one whose node was lost
        is restarted by Ray only where there is room, and with none Ray waits for ever, so a cluster short of the pool
        for `unplaceable_wait_s` ends the run."""
        short_since: float | None = None
        while pool.has_next():
            try:
                yield pool.get_next_unordered(timeout=self.placement_check_s)
                short_since = None
            except TimeoutError:
                short = self._short_of_the_pool()
                if not short:
                    short_since = None
                    continue
                if short_since is None:
                    short_since = time.monotonic()
                if time.monotonic() - short_since >= self.unplaceable_wait_s:
                    raise JudgeError(f"a Ray actor failed: its node left the cluster and Ray has no room to start it "
                                     f"again ({short}); " + (
                                         "the answers received are in the response cache: run the same command "
                                         "again with fewer --actors, or once the cluster has its nodes again, to "
                                         "continue (cached answers are not asked again)" if self.cache else
                                         "no response cache is in use (--no-cache), so only rows already written "
                                         "are kept: run the same command again with fewer --actors to continue")
                                     ) from None

    def _short_of_the_pool(self) -> str | None:
        """What the cluster lacks to hold every actor now (after a node was lost), or None."""
        import ray

        short = self._shortfall(self._gpus, ray.cluster_resources())
        if not short:
            return None
        return f"--actors {self.actors} needs {short[0]:g} {'GPUs' if self._gpus else 'CPUs'}; the cluster has " \
               f"{short[1]:g} now"


class _Refs:
    """Ray calls' results read as `RayShardedJudge._results` reads an `ActorPool`'s: each as it ends, and a
    TimeoutError when none ends within ``timeout``."""

    def __init__(self, refs: list[Any]):
        self.pending = list(refs)

    def has_next(self) -> bool:
        return bool(self.pending)

    def get_next_unordered(self, timeout: float | None = None) -> Any:
        import ray

        ready, self.pending = ray.wait(self.pending, num_returns=1, timeout=timeout)
        if not ready:
            raise TimeoutError
        return ray.get(ready[0])


def _collect_the_others(submitted: list[Any], wait_s: float = 2.0) -> None:
    """The run ends with one actor's error line: the other batches that failed too (the same server down, the same
    judge that cannot load) are read here, so that Ray does not print each one as an "Unhandled error" traceback
    below that line. A batch still running after ``wait_s`` is left to end with the run."""
    import ray

    ready, _ = ray.wait(submitted, num_returns=len(submitted), timeout=wait_s)
    for ref in ready:
        try:
            ray.get(ref)
        except Exception:  # its error is the one already said, or another this run no longer waits for
            pass


def _connect_to_ray(ray) -> None:
    """ray.init (the cluster RAY_ADDRESS names, a local one already running, or a new local one); a cluster it cannot
    reach ends the run with one line naming it and what to do, not the network advice of the Hub's errors. Ray's own
    wait before giving up is minutes with nothing listening (20 tries of about 40 s in Ray 2.60; no ray.init argument
    bounds it and its retry settings are internal), so a RAY_ADDRESS of host:port is first tried with one TCP
    connection (5 s): nothing listening there is said at once; a cluster that answers is joined as before."""
    address = os.environ.get("RAY_ADDRESS")
    if address and not _listening(address):
        raise JudgeError(_unreachable_address_line(address))
    try:
        ray.init(include_dashboard=False, log_to_driver=False)
    except ConnectionError as e:  # Ray's "Failed to connect to Ray cluster at HOST:PORT"
        raise JudgeError(_ray_init_failure_line(address, str(e))) from None


def _listening(address: str) -> bool:
    """Does something accept a TCP connection at RAY_ADDRESS's host:port (a GCS or Ray Client server)? True for
    what is no host:port ('auto', 'local'): Ray resolves those itself."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or "://" in host or not port.isdigit():  # another scheme: left to Ray
        return True
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            return True
    except OSError:
        return False


_CHECK_THE_CLUSTER = ("check that it runs (`ray status` on its head node; a cluster with token authentication also "
                      "needs RAY_AUTH_MODE=token and RAY_AUTH_TOKEN here), or unset RAY_ADDRESS to run on a local Ray "
                      "instance")


def _unreachable_address_line(address: str) -> str:
    """The cluster RAY_ADDRESS names cannot be reached: nothing listens there, or ray.init gave up on it."""
    return f"cannot connect to the Ray cluster at {address} (RAY_ADDRESS): {_CHECK_THE_CLUSTER}"


def _ray_init_failure_line(address: str | None, ray_message: str) -> str:
    """ray.init could not connect: the address Ray tried (the end of its message) named with how it was chosen."""
    found = ray_message.rsplit(" at ", 1)[-1] if " at " in ray_message else ray_message
    if address == "auto" and " at " not in ray_message:  # "Could not find any running Ray instance": no address
        return ("RAY_ADDRESS=auto found no running Ray cluster on this machine: start one (`ray start --head`, or "
                "`ray start --address HEAD:6379` to join a cluster), set RAY_ADDRESS to the cluster's address, or "
                "unset RAY_ADDRESS to run on a local Ray instance")
    if address == "auto":
        return f"cannot connect to the Ray cluster at {found} (found by RAY_ADDRESS=auto): {_CHECK_THE_CLUSTER}"
    if address:
        return _unreachable_address_line(address)
    # no RAY_ADDRESS: Ray tried the local cluster it last recorded (one that has since stopped, most likely)
    return (f"cannot connect to the Ray cluster at {found} (the local cluster Ray last recorded): check it with `ray "
            "status`, or run `ray stop` so that the next run starts a local Ray instance")


def _reraised_in_one_line(results, cached: bool = False, restarts: int = 0):
    """The batches' results; an actor that died (its judge could not be built: a judge folder or replay file missing
    on its node, weights that do not fit) ends the run with the actor's own error line, not Ray's traceback of it.
    An actor whose process died while it worked (the OOM killer, a kill -9, a lost node) more often than Ray restarts it
    (`RayShardedJudge.actor_restarts`) ends it saying what became of the work (``cached``: the actors have a response
    cache), as a judge server that went down does: a rerun continues (review 40a: Ray's advice on the OOM killer
    alone)."""
    import ray.exceptions

    try:
        yield from results
    except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as e:
        lines = [line.strip() for line in str(e).splitlines() if line.strip()]
        line = f"a Ray actor failed: {lines[-1] if lines else type(e).__name__}"
        if isinstance(e, ray.exceptions.RayActorError) and not getattr(e, "actor_init_failed", False):
            restarted = f" (Ray restarted it {restarts} time{'s' * (restarts > 1)} in this run)" if restarts else ""
            line = line.rstrip(".") + restarted + (
                "; the answers received are in the response cache: run the same command again to continue (cached "
                "answers are not asked again)" if cached else
                "; no response cache is in use (--no-cache), so only rows already written are kept: run the same "
                "command again to continue")
        raise JudgeError(line) from None
