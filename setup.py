"""Package discovery (the rest of the metadata is in pyproject.toml): every package under radmetrics/ found by
setuptools, plus the top-level hub_cards/ and lm_eval_tasks/ folders shipped inside the package, so that a
wheel carries the card templates and the lm-eval tasks (radmetrics.hub_cards.package_folder finds them)."""
from setuptools import find_namespace_packages, setup

MAPPED = {"radmetrics._hub_cards": "hub_cards", "radmetrics._lm_eval_tasks": "lm_eval_tasks"}

setup(
    packages=find_namespace_packages(include=["radmetrics", "radmetrics.*"], exclude=["*.__pycache__"]) + list(MAPPED),
    package_dir=MAPPED,
)
