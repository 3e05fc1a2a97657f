"""Each evaluate module as a Space folder: module file, card, a Gradio app and requirements."""
from __future__ import annotations

import shutil
from pathlib import Path

APP = '''import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("{module}.py")
launch_gradio_widget(module)
'''


def build_space(name: str, module_file: Path, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(module_file, out_dir / module_file.name)
    card = module_file.with_name("README.md")
    if card.exists():
        shutil.copyfile(card, out_dir / "README.md")
    (out_dir / "app.py").write_text(APP.format(module=module_file.stem))
    (out_dir / "requirements.txt").write_text("radmetrics\nevaluate\ngradio\n")
    return out_dir
