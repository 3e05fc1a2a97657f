"""Each evaluate module as a Space folder that starts: module file, card (Space metadata pinning the gradio
that evaluate's widget runs on), a Gradio app, requirements that install radmetrics from a source that exists
(the radmetrics wheel shipped inside the Space, or a pip URL the user gives), and the judge it needs."""
from __future__ import annotations

import shutil
from pathlib import Path

from radmetrics.errors import RadmetricsError

#: evaluate.utils.launch_gradio_widget is written for gradio 3 (gr.inputs / Dataframe API); evaluate's own
#: metric Spaces pin this version (e.g. evaluate-metric/bleu's README: sdk_version 3.19.1).
GRADIO_VERSION = "3.19.1"
PYTHON_VERSION = "3.10"

APP = '''"""Gradio widget for the radmetrics {module} metric (evaluate.utils.launch_gradio_widget).

The judge comes from the Space's variables: RADMETRICS_BACKEND (transformers | openai), RADMETRICS_JUDGE (model id),
RADMETRICS_BASE_URL (OpenAI-compatible server) and the secret OPENAI_API_KEY; see README.md."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if importlib.util.find_spec("radmetrics") is None:  # the radmetrics wheel shipped in this Space
    wheels = sorted(HERE.glob("radmetrics-*.whl"))
    if not wheels:
        sys.exit("radmetrics is not installed and no radmetrics wheel is in this Space")
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--no-deps", str(wheels[-1])])

import evaluate  # noqa: E402
from evaluate.utils import launch_gradio_widget  # noqa: E402

options = {{"base_url": os.environ["RADMETRICS_BASE_URL"]}} if os.environ.get("RADMETRICS_BASE_URL") else {{}}
module = evaluate.load(str(HERE / "{module}.py"), backend=os.environ.get("RADMETRICS_BACKEND", "transformers"),
                       judge=os.environ.get("RADMETRICS_JUDGE") or None, judge_options=options)
launch_gradio_widget(module)
'''

JUDGE_SECTION = '''
## Running this Space: the judge it needs
This Space scores with an LLM judge; {default}. Set it in the Space settings (Variables and secrets):
- in process: `RADMETRICS_JUDGE=<model id>` on hardware that fits it (a 7B judge in bf16 needs a GPU with
  about 16 GB; the free CPU hardware is only enough for small judges);
- or a served judge: `RADMETRICS_BACKEND=openai`, `RADMETRICS_BASE_URL=https://<server>/v1`, `RADMETRICS_JUDGE=<model
  name>` and the secret `OPENAI_API_KEY` (any OpenAI-compatible server: vLLM, TGI, hosted APIs).

radmetrics itself is installed {source}.
'''


def _space_requirements(radmetrics_source: str | None, wheel_name: str | None) -> str:
    """Requirements: radmetrics' own dependencies for in-process judging, from this installation's metadata
    (so they match the shipped wheel), plus radmetrics from `radmetrics_source` when one is given."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    lines = []
    for text in requires("radmetrics") or []:
        req = Requirement(text)
        in_extra = req.marker is not None and any(
            req.marker.evaluate({"extra": extra}) for extra in ("transformers", "evaluate"))
        if (req.marker is None or in_extra) and req.name != "radmetrics":
            req.marker = None
            lines.append(str(req))
    if radmetrics_source:
        lines.insert(0, f"radmetrics @ {radmetrics_source}")
    header = (f"# radmetrics: {'from ' + radmetrics_source if radmetrics_source else wheel_name + ' (installed by app.py)'}"
              f"\n# gradio is pinned by sdk_version in README.md ({GRADIO_VERSION}), which evaluate's widget needs\n")
    return header + "\n".join(dict.fromkeys(lines)) + "\n"


def _space_card(card_text: str, module_stem: str, default_judge: str | None, source_line: str) -> str:
    import yaml

    if not card_text.startswith("---\n"):
        raise RadmetricsError(f"The card of {module_stem} has no front matter")
    _, front, body = card_text.split("---\n", 2)
    meta = yaml.safe_load(front) or {}
    meta.update({"sdk": "gradio", "sdk_version": GRADIO_VERSION, "python_version": PYTHON_VERSION,
                 "app_file": "app.py"})
    default = (f"by default `{default_judge}`" if default_judge
               else "it loads its own model (see the card)")
    section = JUDGE_SECTION.format(default=default, source=source_line)
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n{body.rstrip()}\n{section}"


def build_space(name: str, module_file: Path, out_dir: Path, radmetrics_source: str | None = None,
                wheel: Path | None = None, default_judge: str | None = None) -> Path:
    """Write the Space folder for evaluate module `module_file`.

    radmetrics_source: a pip URL for radmetrics (e.g. git+https://github.com/<org>/radmetrics@v0.1.0);
    otherwise `wheel` (a built radmetrics wheel) is shipped in the Space and installed by app.py at start."""
    if not radmetrics_source and not (wheel and Path(wheel).is_file()):
        raise RadmetricsError("A Space needs a radmetrics it can install: give --wheel (a built radmetrics wheel) "
                              "or --radmetrics-source (a pip URL such as git+https://github.com/<org>/radmetrics)")
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(module_file, out_dir / module_file.name)
    wheel_name = None
    if not radmetrics_source:
        wheel_name = Path(wheel).name
        shutil.copyfile(wheel, out_dir / wheel_name)
        source_line = f"by `app.py` from the wheel shipped in this Space (`{wheel_name}`)"
    else:
        source_line = f"from `{radmetrics_source}` (requirements.txt)"
    card = module_file.with_name("README.md")
    if card.exists():
        (out_dir / "README.md").write_text(
            _space_card(card.read_text(encoding="utf-8"), module_file.stem, default_judge, source_line),
            encoding="utf-8")
    (out_dir / "app.py").write_text(APP.format(module=module_file.stem))
    (out_dir / "requirements.txt").write_text(_space_requirements(radmetrics_source, wheel_name))
    return out_dir


def build_wheel(out_dir: Path) -> Path:
    """Build the radmetrics wheel from the checkout this installation runs from (editable installs)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise RadmetricsError("radmetrics is installed from a wheel here, so no wheel can be built for the Spaces: "
                              "give --wheel (a built radmetrics wheel) or --radmetrics-source (a pip URL)")
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           "-w", str(out_dir), str(root)], capture_output=True, text=True)
    wheels = sorted(out_dir.glob("radmetrics-*.whl"))
    if done.returncode != 0 or not wheels:
        raise RadmetricsError(f"Could not build the radmetrics wheel: {done.stderr.strip().splitlines()[-1:]}")
    return wheels[-1]
