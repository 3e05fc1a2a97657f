"""Pushing datasets to a Hub-compatible server on 127.0.0.1: private by default, gated on request,
PhysioNet-derived data never public; then loaded back from the server with `datasets`."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, PACKAGE, REPO
from hub_server import HubServer, card_metadata_errors


@pytest.fixture
def hub(tmp_path, monkeypatch):
    with HubServer(tmp_path / "hub") as server:
        yield server


def push(hub, *args, command=("data", "push"), cwd=REPO):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_testtoken_SECRET", "HF_HUB_OFFLINE": "0",
           "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(hub.root / "hf_home")}
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", *command, *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, env=env)


def hub_push(hub, *args):
    return push(hub, *args, command=("hub", "push"))


def uploads(hub):
    return [p for method, p, _ in hub.requests if method == "POST" and "/commit/" in p]


@pytest.fixture(scope="module")
def rexval_folder(tmp_path_factory):
    from radmetrics.data import convert

    return convert("rexval", FIXTURES / "rexval", tmp_path_factory.mktemp("ds") / "rexval")


def test_push_is_private_by_default_and_can_be_gated(hub, rexval_folder):
    out = push(hub, rexval_folder, "lab/rexval", "--gated", "manual")
    assert out.returncode == 0, out.stderr[-2000:]
    state = hub.repos[("dataset", "lab/rexval")]
    assert state["private"] is True and state["gated"] == "manual"
    assert "README.md" in hub.files("dataset", "lab/rexval")
    assert any(f.endswith(".arrow") for f in hub.files("dataset", "lab/rexval"))
    assert "hf_testtoken_SECRET" not in out.stdout + out.stderr
    assert "(private, gated manual; visibility read back from the Hub)" in out.stdout


def test_datasets_own_cache_files_are_not_pushed(hub, rexval_folder, tmp_path):
    """Review 24 (M4): lm_eval reading a converted folder left datasets' .map() caches (cache-*.arrow) beside its
    files; pushed, the Hub's loader took them for data and the dataset no longer loaded."""
    import shutil

    from datasets import load_from_disk

    folder = shutil.copytree(rexval_folder, tmp_path / "rexval")
    saved = load_from_disk(str(folder))
    for split in saved.values() if hasattr(saved, "values") else [saved]:
        split.map(lambda row: {"n": len(row["reference"])})  # writes cache-<hash>.arrow beside the split's files
    cached = [p.relative_to(folder).as_posix() for p in folder.rglob("cache-*.arrow")]
    assert cached, "datasets wrote no cache file: the test would prove nothing"
    out = push(hub, folder, "lab/rexval-used")
    assert out.returncode == 0, out.stderr[-2000:]
    files = hub.files("dataset", "lab/rexval-used")
    assert not [f for f in files if "cache-" in f] and any(f.endswith(".arrow") for f in files)
    assert "README.md" in files


@pytest.mark.parametrize("command", [("data", "push"), ("hub", "push", "--type", "dataset"), ("hub", "push")])
def test_physionet_data_is_never_pushed_publicly_by_any_command(hub, rexval_folder, command):
    out = push(hub, rexval_folder, "lab/rexval-public", "--public", command=command)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Refusing to push" in out.stderr and "rexval (PhysioNet credentialed data)" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert ("dataset", "lab/rexval-public") not in hub.repos and not hub.requests


def test_physionet_dataset_dict_and_card_only_provenance_are_refused(hub, rexval_folder, tmp_path):
    import datasets

    splits = datasets.load_from_disk(str(rexval_folder)).train_test_split(test_size=0.5, seed=0)
    splits.save_to_disk(str(tmp_path / "dict"))  # a DatasetDict: once a KeyError
    out = push(hub, tmp_path / "dict", "lab/rexval-dict", "--public")
    assert out.returncode == 2 and "rexval (PhysioNet credentialed data)" in out.stderr, out.stderr[-2000:]
    model = tmp_path / "judge"  # no data at all, but its card says where the training data came from
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "README.md").write_text("Fine-tuned on MIMIC-CXR reports (credentialed access).")
    out = hub_push(hub, model, "lab/judge", "--public")
    assert out.returncode == 2 and "its card (README.md) says 'MIMIC-CXR'" in out.stderr, out.stderr[-2000:]
    assert not hub.requests


def test_compressed_physionet_rows_are_never_pushed_publicly(hub, tmp_path):
    """Review 20 (F4): a train.jsonl.gz of ReXVal rows (the Hub and `datasets` load it as is) was neither read
    nor counted as unreadable, and went public."""
    import gzip

    folder = tmp_path / "gz"
    folder.mkdir()
    row = {"id": "1", "dataset": "rexval", "reference": "r", "candidate": "c"}
    (folder / "train.jsonl.gz").write_bytes(gzip.compress((json.dumps(row) + "\n").encode()))
    out = hub_push(hub, folder, "lab/rexval-gz", "--type", "dataset", "--public")
    assert out.returncode == 2, out.stderr[-2000:]
    assert "its rows come from rexval (PhysioNet credentialed data)" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert ("dataset", "lab/rexval-gz") not in hub.repos and not hub.requests


@pytest.mark.parametrize("command", [("data", "push"), ("hub", "push")])
def test_a_broken_saved_dataset_is_refused_in_one_line(hub, tmp_path, command):
    """Review 21 (M3): a folder with state.json whose Arrow file is corrupt gave datasets' 40-line traceback."""
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "state.json").write_text("{}")
    (folder / "data-00000-of-00001.arrow").write_text("x")
    out = push(hub, folder, "lab/broken", "--public", command=command)
    assert out.returncode == 2, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr[-2000:]
    assert "the saved dataset (save_to_disk) could not be read to check where its rows come from" in out.stderr
    assert ("dataset", "lab/broken") not in hub.repos and not hub.requests


def test_public_repo_is_never_written_without_public(hub, tmp_path):
    import datasets

    folder = tmp_path / "mine"
    datasets.Dataset.from_list([{"dataset": "my_reports", "reference": "a", "candidate": "b"}]).save_to_disk(str(folder))
    assert push(hub, folder, "lab/open", "--public").returncode == 0
    before = hub.files("dataset", "lab/open")
    assert len(uploads(hub)) == 1
    for command in (("data", "push"), ("hub", "push", "--type", "dataset")):
        out = push(hub, folder, "lab/open", command=command)
        assert out.returncode == 2, out.stderr[-2000:]
        assert "lab/open is a public dataset repository on the Hub" in out.stderr and "--public" in out.stderr
    assert len(uploads(hub)) == 1 and hub.files("dataset", "lab/open") == before
    out = push(hub, folder, "lab/open", "--public")
    assert out.returncode == 0 and "(public; visibility read back from the Hub)" in out.stdout


def test_printed_visibility_is_the_repos_real_one(hub, tmp_path):
    import datasets

    folder = tmp_path / "mine"
    datasets.Dataset.from_list([{"dataset": "my_reports", "reference": "a", "candidate": "b"}]).save_to_disk(str(folder))
    assert push(hub, folder, "lab/closed").returncode == 0
    out = push(hub, folder, "lab/closed", "--public")  # exists private: stays private, and says so
    assert out.returncode == 0 and "(private; visibility read back" in out.stdout and "stays private" in out.stdout
    assert hub.repos[("dataset", "lab/closed")]["private"] is True


def test_hand_written_card_is_never_overwritten_unless_asked(hub, rexval_folder, tmp_path):
    assert push(hub, rexval_folder, "lab/rexval").returncode == 0
    card = hub.folder("dataset", "lab/rexval") / "README.md"
    card.write_text("# Our ReXVal copy\nNotes by the lab.\n")  # edited on the Hub
    out = push(hub, rexval_folder, "lab/rexval")
    assert out.returncode == 0 and "kept the README.md on the Hub" in out.stdout
    assert card.read_text() == "# Our ReXVal copy\nNotes by the lab.\n"
    out = push(hub, rexval_folder, "lab/rexval", "--overwrite-card")
    assert out.returncode == 0 and card.read_text() == (rexval_folder / "README.md").read_text()

    model = tmp_path / "judge"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "README.md").write_text("My own card.\n")
    training = tmp_path / "training.json"
    training.write_text(json.dumps({"config": {"recipe": "vert", "base_model": "tiny", "lora_r": 4, "lora_alpha": 8,
                                               "learning_rate": 1e-4}, "losses": [1.0, 0.5]}))
    out = hub_push(hub, model, "lab/judge", "--training", training)
    assert out.returncode == 2 and "--overwrite-card" in out.stderr and not uploads(hub)[3:]
    assert (model / "README.md").read_text() == "My own card.\n"
    assert hub_push(hub, model, "lab/judge", "--training", training, "--overwrite-card").returncode == 0
    rendered = (model / "README.md").read_text()
    assert "VERT recipe" in rendered
    out = hub_push(hub, model, "lab/judge", "--training", training)  # our own unedited card: refreshed freely
    assert out.returncode == 0, out.stderr[-2000:]
    assert (hub.folder("model", "lab/judge") / "README.md").read_text() == rendered


def test_a_judge_pushed_without_a_card_is_said(hub, tmp_path):
    """Review 27, L4: `hub push` of a judge folder without --training uploaded it with no model card, silently; it
    now says so and names the training.json `train judge` wrote beside it."""
    model = tmp_path / "run" / "merged"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (tmp_path / "run" / "training.json").write_text("{}")
    out = hub_push(hub, model, "lab/bare")
    assert out.returncode == 0, out.stderr[-2000:]
    assert (f"Note: {model} has no model card (README.md); pass --training {tmp_path / 'run' / 'training.json'} to "
            "render one") in out.stderr
    (model / "README.md").write_text("My own card.\n")
    assert "no model card" not in hub_push(hub, model, "lab/bare").stderr


def test_public_push_of_other_data(hub, tmp_path):
    import datasets

    folder = tmp_path / "mine"
    datasets.Dataset.from_list([{"dataset": "my_reports", "reference": "a", "candidate": "b"}]).save_to_disk(str(folder))
    out = push(hub, folder, "lab/mine", "--public")
    assert out.returncode == 0, out.stderr[-2000:]
    assert hub.repos[("dataset", "lab/mine")]["private"] is False


def publish(hub, tmp_path, *extra):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_testtoken_SECRET", "HF_HUB_OFFLINE": "0"}
    return subprocess.run([sys.executable, "-m", "radmetrics.cli", "hub", "publish-metrics", "--namespace", "lab",
                           "--workdir", str(tmp_path / "spaces"), *extra], cwd=tmp_path, capture_output=True,
                          text=True, env=env)


def test_publish_metrics_uploads_each_module_as_a_space_that_can_start(hub, tmp_path):
    if PACKAGE.parent != REPO:
        pytest.skip("the default wheel is built from the checkout radmetrics runs from; this one is installed")
    out = publish(hub, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("green", "vert", "finerad_score", "radcliq_rubric", "er2score"):
        files = set(hub.files("space", f"lab/{name}"))
        assert {f"{name}.py", "README.md", "app.py", "requirements.txt"} <= files, (name, files)
        wheels = [f for f in files if f.startswith("radmetrics-") and f.endswith(".whl")]
        assert len(wheels) == 1, files  # the radmetrics that app.py installs: a source that exists
        assert hub.repos[("space", f"lab/{name}")]["private"] is True
        folder = hub.folder("space", f"lab/{name}")
        card = (folder / "README.md").read_text()
        assert card_metadata_errors(card, "space") == []
        assert "sdk: gradio" in card and "sdk_version: 3.19.1" in card and "## Running this Space" in card
        requirements = (folder / "requirements.txt").read_text().splitlines()
        packages = [line for line in requirements if line and not line.startswith("#")]
        assert any(p.startswith("torch") for p in packages) and any(p.startswith("evaluate") for p in packages)
        assert not any(p.split("[")[0].split(">")[0].split("=")[0].strip() in {"radmetrics", "gradio"} for p in packages)
    assert "`StanfordAIMI/GREEN-RadLlama2-7b`" in (hub.folder("space", "lab/green") / "README.md").read_text()
    assert all(repo_type == "space" and errors == [] for repo_type, errors in hub.validated)


@pytest.mark.slow
def test_space_app_loads_its_module_with_the_judge_from_the_space_variables(hub, tmp_path):
    out = publish(hub, tmp_path, "--radmetrics-source", "git+https://github.com/radmetrics/radmetrics@v0.1.0")
    assert out.returncode == 0, out.stderr[-2000:]
    folder = hub.folder("space", "lab/green")
    assert "radmetrics @ git+https://github.com/radmetrics/radmetrics@v0.1.0" in (folder / "requirements.txt").read_text()
    assert not list(folder.glob("*.whl"))
    # app.py as the Space runs it, with the widget launch replaced by a print (gradio 3 is not installed here)
    code = ("import evaluate.utils as u; u.launch_gradio_widget = lambda m: print('LAUNCH', m.name, m.backend, m.judge, "
            "m.judge_options); import runpy; runpy.run_path('app.py', run_name='__main__')")
    env = {**os.environ, "RADMETRICS_BACKEND": "openai", "RADMETRICS_JUDGE": "my-judge",
           "RADMETRICS_BASE_URL": "http://127.0.0.1:9/v1"}
    run = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "LAUNCH green openai my-judge {'base_url': 'http://127.0.0.1:9/v1'}" in run.stdout


def test_publish_metrics_never_adds_to_a_public_space(hub, tmp_path):
    source = "git+https://github.com/radmetrics/radmetrics@v0.1.0"
    out = publish(hub, tmp_path, "--radmetrics-source", source)
    assert out.returncode == 0 and "green: " in out.stdout and "(private)" in out.stdout, out.stderr[-2000:]
    hub.repos[("space", "lab/green")]["private"] = False  # someone made one Space public on the Hub
    out = publish(hub, tmp_path, "--radmetrics-source", source)
    assert out.returncode == 2 and "lab/green is a public space repository" in out.stderr, out.stderr[-2000:]


def test_a_bad_repo_id_or_a_folder_with_no_dataset_is_one_line_and_no_request(hub, rexval_folder, tmp_path):
    """Review findings: an invalid repo id printed the Hub client's 38-line traceback; `data push` of an empty
    folder created an empty private repository and reported success."""
    for command in (("data", "push"), ("hub", "push", "--type", "dataset")):
        out = push(hub, rexval_folder, "bad id!!", command=command)
        assert out.returncode == 2 and "'bad id!!' is not a Hub repository id" in out.stderr, out.stderr[-2000:]
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    empty = tmp_path / "adir"
    empty.mkdir()
    out = push(hub, empty, "lab/x")
    assert out.returncode == 2 and "is not a converted dataset" in out.stderr, out.stderr[-2000:]
    out = hub_push(hub, empty, "lab/x")
    assert out.returncode == 2 and "holds no files" in out.stderr, out.stderr[-2000:]
    assert not hub.requests and not hub.repos


@pytest.mark.parametrize("status", [401, 403, 500])
def test_an_error_the_hub_answers_is_one_line_without_the_token(hub, rexval_folder, tmp_path, status):
    """Review 39b: a token the Hub refused (401), one that may not write to the namespace (403) or a Hub error
    (500) was the Hub client's traceback (exit 1) from `data push` and `hub push` (every push goes through
    push_folder); and where a proxy echoed the request's
    Authorization header in its error, the token was printed. Now one line naming the fix, exit 2, no token."""
    hub.refuse = (status, "Invalid credentials in Authorization header ({auth})")
    judge = tmp_path / "judge"
    judge.mkdir()
    (judge / "config.json").write_text("{}")
    for out in (push(hub, rexval_folder, "lab/rexval"), hub_push(hub, judge, "lab/judge")):
        assert out.returncode == 2, out.stderr[-2000:]
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr[-2000:]
        assert out.stderr.startswith("Error: The Hub refused the push to lab/"), out.stderr
        assert {401: "set HF_TOKEN", 403: "may not write to lab", 500: "try again later"}[status] in out.stderr
        assert "SECRET" not in out.stdout + out.stderr
    assert any("Bearer hf_testtoken_SECRET" in str(headers) for _, _, headers in hub.requests)  # it was sent
    assert not hub.repos


def test_a_second_push_leaves_no_weights_of_the_first(hub, tmp_path):
    """Review 27 (H1): upload_folder only adds, so a judge pushed again in shards kept the first push's
    model.safetensors, which transformers loads before the new index: the old judge scored under the new card.
    An adapter pushed over a merged judge likewise left both. A file added on the Hub by hand stays."""
    single, sharded, adapter = tmp_path / "single", tmp_path / "sharded", tmp_path / "adapter"
    for folder, names in ((single, ["model.safetensors"]),
                          (sharded, ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                     "model.safetensors.index.json"]),
                          (adapter, ["adapter_model.safetensors", "adapter_config.json"])):
        folder.mkdir()
        for name in names + ["config.json"] * (folder != adapter):
            (folder / name).write_text("{}")
    assert hub_push(hub, single, "lab/judge").returncode == 0
    (hub.folder("model", "lab/judge") / "notes.md").write_text("added on the Hub")
    out = hub_push(hub, sharded, "lab/judge")
    assert out.returncode == 0, out.stderr[-2000:]
    assert sorted(hub.files("model", "lab/judge")) == sorted(
        ["config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
         "model.safetensors.index.json", "notes.md"])
    assert hub_push(hub, adapter, "lab/judge").returncode == 0
    assert sorted(hub.files("model", "lab/judge")) == ["adapter_config.json", "adapter_model.safetensors", "notes.md"]


def _hub_env(hub):
    return {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_TOKEN": "hf_testtoken_SECRET", "HF_HUB_OFFLINE": "0",
            "TRANSFORMERS_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(hub.root / "hf_home")}


def test_a_model_trained_on_a_local_base_is_pushed_naming_the_bases_hub_id_and_loads_from_the_hub(hub, tmp_path):
    """Session 37: training on a local copy of the base records it by its path (peft's adapter_config.json, ER²Score's
    er2score_config.json), and `hub push` uploaded those files as they were: the pusher's folders went to the Hub, and
    the model loaded nowhere else ("/home/me/models/base" is not on the other machine). The pushed files now name the
    base by `--base-model` (its Hub id); the folder on disk is not changed."""
    from tiny_judge import build_tiny_base

    from radmetrics.er2score.model import MultiRewardModel
    from radmetrics.er2score.pairs import CRITERIA

    base, model = build_tiny_base(tmp_path / "base"), tmp_path / "er2"
    MultiRewardModel.new(str(base), CRITERIA["radcliq"]).save(model)
    refs, cands = ["Heart size normal. No effusion."], ["Heart enlarged. Small left effusion."]
    local_scores = MultiRewardModel.load(model).score(refs, cands)
    recorded = {name: json.loads((model / name).read_text()) for name in ("er2score_config.json",
                                                                          "adapter_config.json")}
    assert recorded["er2score_config.json"]["base_model"] == str(base.resolve())
    assert recorded["adapter_config.json"]["base_model_name_or_path"] == str(base.resolve())

    assert hub_push(hub, base, "lab/tiny-base").returncode == 0
    out = hub_push(hub, model, "lab/er2", "--base-model", "lab/tiny-base")
    assert out.returncode == 0, out.stderr[-2000:]
    for name in ("er2score_config.json", "adapter_config.json"):
        assert (f"Note: {name} named the base model by a path on this machine; pushed naming it 'lab/tiny-base'"
                in out.stdout)
    assert "pass --base-model" not in out.stdout
    pushed = hub.folder("model", "lab/er2")
    # peft's own card named the base by its path in the metadata (the Hub refuses it: the push failed before)
    local_card = (model / "README.md").read_text()
    assert "base_model: /" in local_card
    assert "base_model: lab/tiny-base" in (pushed / "README.md").read_text()
    if "base_model:adapter:" in local_card:  # peft >= 0.11 also tags the card with its base (0.10 does not)
        assert "base_model:adapter:lab/tiny-base" in (pushed / "README.md").read_text()
    for name, field in (("er2score_config.json", "base_model"), ("adapter_config.json", "base_model_name_or_path")):
        on_hub = json.loads((pushed / name).read_text())
        assert on_hub == {**recorded[name], field: "lab/tiny-base"}  # only the base changed
        assert json.loads((model / name).read_text()) == recorded[name]  # the folder on disk is as it was
    assert (pushed / "adapter_model.safetensors").read_bytes() == (model / "adapter_model.safetensors").read_bytes()
    assert not any(str(tmp_path) in p.read_text(errors="replace") for p in pushed.rglob("*") if p.is_file())

    # from another machine: the local base is gone, both come from the Hub
    base.rename(tmp_path / "elsewhere")
    (tmp_path / "other").mkdir()
    code = ("import json; from radmetrics.er2score.model import MultiRewardModel; "
            f"print(json.dumps(MultiRewardModel.load('lab/er2').score({refs!r}, {cands!r})))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "other", capture_output=True, text=True,
                            env=_hub_env(hub))
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    remote_scores = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert remote_scores[0]["rewards"] == pytest.approx(local_scores[0]["rewards"])


@pytest.mark.parametrize("recorded", ["{tmp}/models/llama-base/", "C:\\Users\\me\\models\\llama-base",
                                      "\\\\server\\share\\llama-base", "../llama-base", "~/llama-base"])
def test_without_the_bases_hub_id_a_model_naming_a_local_base_is_refused_before_anything_is_sent(hub, tmp_path,
                                                                                                recorded):
    """Review 46: pushed under its folder's name ("llama-base"), a model whose base is a local folder loaded whatever
    folder of that name the loading machine's working directory had (a size mismatch, or silently another model);
    a Windows path (C:\\..., \\\\server\\...) went up whole. Without --base-model nothing is pushed: one line saying
    which file names which path, and what to pass."""
    adapter = tmp_path / "adapter"
    (adapter / "checkpoint-3").mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_text("{}")
    config = {"peft_type": "LORA", "base_model_name_or_path": "meta/llama", "r": 4}
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    recorded = recorded.format(tmp=tmp_path)
    # a checkpoint's config, too (pushing a training run's whole output)
    (adapter / "checkpoint-3" / "adapter_config.json").write_text(json.dumps({**config,
                                                                              "base_model_name_or_path": recorded}))
    out = hub_push(hub, adapter, "lab/adapter")
    assert out.returncode == 2 and not hub.requests, out.stderr
    assert (f"Error: checkpoint-3/adapter_config.json names the base model by a path on this machine ({recorded}): "
            "pass --base-model with that model's Hub id") in out.stderr
    out = hub_push(hub, adapter, "lab/adapter", "--base-model", "lab/llama")
    assert out.returncode == 0, out.stderr[-2000:]
    assert ("Note: checkpoint-3/adapter_config.json named the base model by a path on this machine; pushed naming "
            "it 'lab/llama'") in out.stdout
    pushed = hub.folder("model", "lab/adapter")
    assert json.loads((pushed / "checkpoint-3" / "adapter_config.json").read_text())["base_model_name_or_path"] == \
        "lab/llama"
    # a base recorded by its Hub id is pushed as it is, without a word, even where a folder of that name is here
    assert json.loads((pushed / "adapter_config.json").read_text()) == config
    assert "Note: adapter_config.json" not in out.stdout


def test_a_push_refused_for_a_local_base_leaves_the_folders_card_as_it_was(hub, tmp_path):
    """Review 47: `hub push ADAPTER --training T` without --base-model wrote the rendered card over the folder's
    README.md (peft's) and only then refused the push ("Nothing was pushed"), so the folder had changed; the base is
    checked before the card is written, as a hand-written card's refusal leaves it."""
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_text("{}")
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4,
                                                             "base_model_name_or_path": str(tmp_path / "base")}))
    peft_card = (f"---\nbase_model: {tmp_path / 'base'}\nlibrary_name: peft\n---\n\n# Model Card for Model ID\n\n"
                 "- **Developed by:** [More Information Needed]\n")  # peft's placeholder: a rendered card replaces it
    (adapter / "README.md").write_text(peft_card)
    training = tmp_path / "training.json"
    training.write_text(json.dumps({"config": {"recipe": "green", "base_model": str(tmp_path / "base"), "lora_r": 4,
                                               "lora_alpha": 8, "learning_rate": 1e-4}, "losses": [1.0, 0.5]}))
    out = hub_push(hub, adapter, "lab/adapter", "--training", training)
    assert out.returncode == 2 and "pass --base-model" in out.stderr and not hub.requests, out.stderr
    assert (adapter / "README.md").read_text() == peft_card
    out = hub_push(hub, adapter, "lab/adapter", "--training", training, "--base-model", "lab/base")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "base_model: lab/base\n" in (hub.folder("model", "lab/adapter") / "README.md").read_text()


def test_a_base_named_by_its_hub_id_stays_whatever_folders_are_here_and_bad_base_model_values_are_refused(
        hub, tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_text("{}")
    config = {"peft_type": "LORA", "base_model_name_or_path": "meta/llama", "r": 4}
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    (tmp_path / "meta" / "llama").mkdir(parents=True)  # hub_push runs in the repository: a folder there too
    out = push(hub, adapter, "lab/adapter", command=("hub", "push"), cwd=tmp_path)
    assert out.returncode == 0 and "Note:" not in out.stdout, out.stdout + out.stderr
    assert json.loads((hub.folder("model", "lab/adapter") / "adapter_config.json").read_text()) == config
    requests = len(hub.requests)
    for args, message in (((
            "--base-model", str(tmp_path / "models" / "llama-base")), "is not a Hub model id"),
            (("--base-model", "lab/llama", "--type", "dataset"), "a dataset push has none")):
        out = hub_push(hub, adapter, "lab/adapter", *args)
        assert out.returncode == 2 and message in out.stderr and len(hub.requests) == requests, out.stderr


def test_pushing_again_with_the_bases_hub_id_replaces_the_card_the_first_push_sent(hub, tmp_path):
    """Review 46: a hand-written card naming a local base went up without it; pushed again with --base-model (as the
    first push's note asks), the Hub's card differed from the one going up and, written by hand, was kept: the
    configs named the base, the card never did, and the output said "README.md ... pushed naming it 'lab/base'"
    beside "kept the README.md on the Hub". The card an earlier push made of the same README.md is replaced; one
    edited on the Hub is still kept, and then no note says the card went up."""
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_text("{}")
    (adapter / "README.md").write_text(f"---\nbase_model: {tmp_path / 'base'}\nlicense: mit\n---\n# My judge\n")
    on_hub = hub.folder("model", "lab/judge") / "README.md"
    assert hub_push(hub, adapter, "lab/judge").returncode == 0
    assert on_hub.read_text() == "---\nlicense: mit\n---\n# My judge\n"
    for base in ("lab/base", "lab/other-base", "lab/base"):
        out = hub_push(hub, adapter, "lab/judge", "--base-model", base)
        assert out.returncode == 0 and "kept the README.md" not in out.stdout, out.stdout
        assert on_hub.read_text() == f"---\nbase_model: {base}\nlicense: mit\n---\n# My judge\n"
        assert f"Note: README.md named the base model by a path on this machine; pushed naming it '{base}'" in out.stdout
    on_hub.write_text("---\nbase_model: lab/base\nlicense: mit\n---\n# My judge, edited on the Hub\n")
    out = hub_push(hub, adapter, "lab/judge", "--base-model", "lab/base")
    assert out.returncode == 0 and "Note: kept the README.md on the Hub (written by hand)" in out.stdout
    assert "# My judge, edited on the Hub" in on_hub.read_text() and "Note: README.md" not in out.stdout


def test_a_base_loaded_from_the_hubs_cache_is_named_in_the_refusal(hub, tmp_path):
    """Review 47's left item: a base trained on offline is often the Hub's own cache folder
    (`.../hub/models--OWNER--NAME/snapshots/REV`); the refusal then gives the flag to copy, with its id."""
    from radmetrics.hub import cached_model_id

    snapshot = tmp_path / "hf" / "hub" / "models--StanfordAIMI--GREEN-RadLlama2-7b" / "snapshots" / "0123abc"
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": str(snapshot)}))
    out = hub_push(hub, adapter, "lab/adapter")
    assert out.returncode == 2 and not hub.requests
    assert "pass --base-model StanfordAIMI/GREEN-RadLlama2-7b (the Hub's cache holds that model there)" in out.stderr
    assert cached_model_id("C:\\hf\\models--meta-llama--Llama-2-7b-hf\\snapshots\\1\\") == "meta-llama/Llama-2-7b-hf"
    assert cached_model_id("/cache/models--gpt2/snapshots/1") == "gpt2"
    for elsewhere in ("/home/me/models/base", "/x/models--a--b--c/snapshots/1", "/x/models--a--b/refs/main"):
        assert cached_model_id(elsewhere) is None
