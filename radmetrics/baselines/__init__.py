"""The metrics every radiology report generation paper reports, computed by the libraries that define them.

Named as the papers report them; each states its direction and what it computes with (library, key, settings),
and that statement travels in the fingerprint of every result. Nothing is re-implemented: each adapter calls
its library's public scoring function per report pair.

| name | library call | per-pair value |
| --- | --- | --- |
| bleu-2, bleu-4 | sacrebleu `BLEU(max_ngram_order=n, effective_order=True).sentence_score` | BLEU / 100 |
| rouge-l | rouge-score `RougeScorer(["rougeL"]).score(reference, candidate)` | ROUGE-L F-measure |
| meteor | nltk `meteor_score` (needs the WordNet corpus: `nltk.download("wordnet")`) | METEOR |

BERTScore, RadGraph-F1, F1-CheXbert, RaTEScore and RadCliQ-v1 register in `clinical.py`.

An empty candidate (a generator that wrote nothing) is a bad output, not a missing one: it is scored, each library
being given "" and scoring it as its own code scores an empty hypothesis (sacrebleu, rouge-score and nltk's METEOR
give 0; see `clinical.py` for the others). Leaving it out would drop a system's worst outputs from its mean and from
the paired tests. An empty or missing reference, or a missing candidate, is unscored with the reason.

"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from radmetrics.errors import RadmetricsError, UnknownNameError


@dataclass
class Baseline:
    name: str
    higher_is_better: bool
    #: library, call and settings, as a reader of a results file needs them to reproduce the number
    description: dict[str, Any]
    #: (references, candidates, options) -> per-pair scores for non-empty pairs, in order
    score_pairs: Callable[..., list[float | None]]
    #: options the user may set with name:option=value
    options: dict[str, Any] = field(default_factory=dict)
    #: the score of an empty candidate when the library cannot be given one, or a function of the settings that
    #: gives it (None: the library scores "" itself)
    empty_candidate: float | Callable[[dict[str, Any]], float] | None = None
    #: settings -> None; raises RadmetricsError, in about a second and before any judging, when something the scorer
    #: needs is not here (its library, a model or corpus to download): a whole judge run must not come first
    check: Callable[[dict[str, Any]], None] | None = None


_REGISTRY: dict[str, Baseline] = {}


def register_baseline(baseline: Baseline) -> None:
    _REGISTRY[baseline.name] = baseline


def _split(spec: str) -> tuple[str, dict[str, Any]]:
    from radmetrics.meta.runs import EvaluateSpec

    parsed = EvaluateSpec.parse(spec)
    if parsed.higher_is_better is not None:
        raise RadmetricsError(f"baseline '{parsed.module}' has a known direction; higher_is_better is for evaluate "
                              "modules")
    if parsed.key:
        raise RadmetricsError(f"baseline '{parsed.module}' takes options name:option=value, not a key "
                              f"('{parsed.key}')")
    return parsed.module, parsed.options


def _load_all() -> None:
    """Baselines defined in other modules of this package register on first use."""
    if "bertscore" not in _REGISTRY:
        from radmetrics.baselines import clinical  # noqa: F401  (registers on import)


def is_baseline(spec: str) -> bool:
    _load_all()
    return spec.split(":")[0] in _REGISTRY


def list_baselines() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get_baseline(spec: str) -> Baseline:
    _load_all()
    name = spec.split(":")[0]
    if name not in _REGISTRY:
        raise UnknownNameError("baseline", name, _REGISTRY)
    return _REGISTRY[name]


def _settings(spec: str) -> tuple[Baseline, dict[str, Any]]:
    """The baseline a spec names and its settings (defaults, then the spec's options); an unknown option is named."""
    name, options = _split(spec)
    baseline = get_baseline(name)
    unknown = set(options) - set(baseline.options)
    if unknown:
        raise RadmetricsError(f"baseline '{name}' has no option {', '.join(sorted(unknown))}; options: "
                              f"{', '.join(sorted(baseline.options)) or 'none'}")
    return baseline, {**baseline.options, **options}


def check_baseline(spec: str) -> None:
    """What fails in seconds fails now, not after the judge metrics of the same run: an unknown option, a missing
    library, model or corpus (`Baseline.check`). Loads no model."""
    baseline, settings = _settings(spec)
    if baseline.check is not None:
        baseline.check(settings)


def run_baseline(spec: str, references: Sequence[Any], candidates: Sequence[Any]):
    """Per-pair scores of a named baseline. An empty candidate is scored as its library scores an empty hypothesis
    (or `Baseline.empty_candidate`); an empty or missing reference, or a missing candidate, is unscored with the
    reason (meta.runs.score_library_pairs)."""
    from radmetrics.meta.runs import MetricRun, score_library_pairs

    baseline, settings = _settings(spec)
    name = baseline.name

    def call(refs: list[str], cands: list[str]):
        values = baseline.score_pairs(refs, cands, settings)
        # a scorer may also give per-criterion columns (ER²Score's rewards): (scores, {criterion: per-pair values})
        return values if isinstance(values, tuple) else (values, {})

    empty = baseline.empty_candidate
    scores, reasons, extra = score_library_pairs(
        call, references, candidates, (lambda: empty(settings)) if callable(empty) else empty,
        what=str(baseline.description.get("library", name)))
    fingerprint = {"baseline": name, **baseline.description,
                   "settings": {k: v for k, v in settings.items() if isinstance(v, (str, int, float, bool, type(None)))}}
    return MetricRun(spec, scores, baseline.higher_is_better, [None] * len(references), fingerprint, reasons,
                     extra=extra)


# -- n-gram baselines ------------------------------------------------------------------------------------------
def _bleu(order: int):
    def score(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
        from sacrebleu.metrics import BLEU

        # effective_order: sentence-level BLEU without zeroing pairs that lack higher-order n-gram matches
        bleu = BLEU(max_ngram_order=order, effective_order=True, tokenize=options["tokenize"])
        # BLEU is at most 1; sacrebleu's float gives 100.00000000000004 for identical texts (exp of a sum of logs)
        return [min(1.0, bleu.sentence_score(c, [r]).score / 100) for r, c in zip(references, candidates)]

    return score


def _library_check(module: str, baseline: str) -> Callable[[dict[str, Any]], None]:
    """`Baseline.check` for a baseline that downloads nothing: its library is installed (found, not imported). Without
    it, an install lacking the `baselines` extra judged every row of a run's judge metrics before the baseline
    failed on its import (review 43)."""
    def check(options: dict[str, Any]) -> None:
        from radmetrics.errors import require_installed

        require_installed(module, "baselines", f"by the {baseline} baseline")

    return check


for _order in (2, 4):
    register_baseline(Baseline(
        f"bleu-{_order}", True,
        {"library": "sacrebleu", "call": f"BLEU(max_ngram_order={_order}, effective_order=True).sentence_score",
         "value": "sentence BLEU / 100"},
        _bleu(_order), {"tokenize": "13a"}, check=_library_check("sacrebleu", f"bleu-{_order}")))


def _rouge_l(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=options["use_stemmer"])
    return [scorer.score(r, c)["rougeL"].fmeasure for r, c in zip(references, candidates)]


register_baseline(Baseline("rouge-l", True, {"library": "rouge-score", "call": 'RougeScorer(["rougeL"]).score',
                                             "value": "ROUGE-L F-measure"}, _rouge_l, {"use_stemmer": False},
                           check=_library_check("rouge_score", "rouge-l")))


_NO_WORDNET = ("METEOR needs nltk's WordNet corpus, which is not installed here (python -m nltk.downloader wordnet; "
               "or set NLTK_DATA to a folder holding corpora/wordnet)")


def _check_meteor(options: dict[str, Any]) -> None:
    """nltk and its WordNet corpus are findable (nltk.data.find: a lookup on disk, nothing downloaded or loaded)."""
    from radmetrics.errors import require_installed

    require_installed("nltk", "baselines", "by the meteor baseline")
    if options.get("wordnet") is not None:  # a WordNet given from Python
        return
    import nltk.data

    try:
        nltk.data.find("corpora/wordnet")  # the folder, or corpora/wordnet.zip
    except LookupError:
        raise RadmetricsError(_NO_WORDNET) from None


def _meteor(references: list[str], candidates: list[str], options: dict[str, Any]) -> list[float]:
    from nltk.translate.meteor_score import meteor_score

    extra = {"wordnet": options["wordnet"]} if options.get("wordnet") is not None else {}
    if not extra:
        try:
            from nltk.corpus import wordnet

            wordnet.ensure_loaded()
        except LookupError:
            raise RuntimeError(_NO_WORDNET) from None
    # nltk's METEOR takes pre-tokenized text; whitespace tokens as in evaluate's meteor module for nltk >= 3.6.5
    return [meteor_score([r.split()], c.split(), **extra) for r, c in zip(references, candidates)]


register_baseline(Baseline("meteor", True, {"library": "nltk", "call": "nltk.translate.meteor_score.meteor_score",
                                            "value": "METEOR (alpha 0.9, beta 3, gamma 0.5)",
                                            "needs": "the WordNet corpus (nltk.download('wordnet'))"},
                           _meteor, {"wordnet": None}, check=_check_meteor))
