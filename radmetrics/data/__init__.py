"""Expert datasets in one schema (radmetrics/data/schema.py): converters, loading, pushing."""
from __future__ import annotations

import re
from pathlib import Path

from radmetrics.errors import InputError

#: name -> (module, function building a datasets.Dataset from the user's downloaded files, card fields)
CONVERTERS = {
    "rexval": ("radmetrics.data.rexval", "rexval_dataset", "CARD"),
    "radeval": ("radmetrics.data.radeval", "radeval_dataset", "CARD"),
    "rate_eval": ("radmetrics.data.rate_eval", "rate_eval_dataset", "CARD"),
    "refisco": ("radmetrics.data.refisco", "refisco_dataset", "CARD"),
}

#: datasets whose terms forbid public redistribution: `radmetrics data push --public` refuses them
PHYSIONET_DERIVED = {"rexval", "radeval", "rate_eval", "refisco"}


def converter(name: str):
    import importlib

    if name not in CONVERTERS:
        from radmetrics.errors import UnknownNameError

        raise UnknownNameError("dataset converter", name, CONVERTERS)
    module_name, function, card = CONVERTERS[name]
    module = importlib.import_module(module_name)
    return getattr(module, function), getattr(module, card)


def is_saved_dataset(path: str | Path) -> bool:
    """A folder written by datasets' save_to_disk (a Dataset or a DatasetDict), as `data convert` writes."""
    path = Path(path)
    return any((path / name).is_file() for name in ("dataset_info.json", "state.json", "dataset_dict.json"))


def load_expert_dataset(name: str, path: str | Path):
    """A dataset written by `radmetrics data convert` (save_to_disk), or the original files (a folder, or the
    file itself for converters that read one file) converted by the same converter `data convert` runs."""
    import datasets

    path = Path(path)
    if is_saved_dataset(path):
        return datasets.load_from_disk(str(path))
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (give the original {name} files, as "
                          f"`radmetrics data convert {name}` takes them, or a converted dataset)")
    build, _ = converter(name)
    return build(path)  # the converter names what is wrong with files it cannot read


#: what a Hub dataset id looks like ("name" or "owner/name")
HUB_DATASET_ID = re.compile(r"(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*")


def open_expert_dataset(name: str, source: str, given_as: str):
    """The expert dataset `source` names: a folder here (converted or original files) or a Hub dataset id, its
    test split. A string that is neither says so in one line (given_as: how the user gave it, e.g. "--dataset X"),
    rather than as the Hub's "couldn't reach" about what was meant as a folder."""
    import os

    path = Path(source).expanduser()
    if path.exists():
        return load_expert_dataset(name, path)
    here = f"no such folder in {os.getcwd()}"
    # Only what can be nothing but a Hub id goes to the Hub: "owner/name" whose owner is no folder here. "data/rexval"
    # with a data/ folder here but no rexval in it is a mistyped path, not a request to download (review 14).
    first = Path(source).parts[0] if Path(source).parts else ""
    if source.startswith((".", "/", "~")) or not HUB_DATASET_ID.fullmatch(source) or Path(first).is_dir():
        raise InputError(f"{given_as}: {here}")
    import datasets

    try:
        loaded = datasets.load_dataset(source)
    except Exception as e:  # datasets raises many types for "not reachable / not found"
        raise InputError(f"{given_as}: {here}, and no Hub dataset '{source}' could be loaded ({type(e).__name__}; "
                         "HF_DATASETS_OFFLINE=1 allows only cached ones). Give a folder written by `radmetrics data "
                         "convert` or the original files' folder, or check the Hub id and your network.") from e
    return loaded["test"] if "test" in loaded else loaded[next(iter(loaded))]


def check_dataset_output(output: str | Path, overwrite: bool, source: str | Path | None = None) -> None:
    """A dataset is written only into a new or empty folder unless `overwrite`: `save_to_disk` and the card
    replace a dataset and a README.md already there (a hand-written one too) without a word."""
    out = Path(output).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--output {output} is a file; a dataset is written as a folder")
    if source is not None and out.exists() and out.resolve() == Path(source).expanduser().resolve():
        raise InputError(f"--output {output} is the input folder; write the new dataset to another folder")
    from radmetrics.io import check_new_folder

    check_new_folder(output, overwrite, "dataset and README.md")


def convert(name: str, source: str | Path, out_dir: str | Path) -> Path:
    from radmetrics import __version__
    from radmetrics.data.schema import save_dataset

    build, card = converter(name)
    dataset = build(source)
    return save_dataset(dataset, out_dir, {**card, "num_rows": str(len(dataset)), "version": __version__})
