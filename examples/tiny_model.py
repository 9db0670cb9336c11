"""Build a tiny BART offline, to try `ctrlkit train` without a model hub (needs `ctrlkit[hf]`).

    python examples/tiny_model.py models/tiny
    ctrlkit train -b hf:models/tiny -c prepend+tag --split test -o models/pt --max-steps 20 --save-every 5
    ctrlkit run -b hf:models/pt -c prepend+tag --limit 10

The tokenizer is trained on the bundled sample's texts and the weights are random until trained
(the same weights every time), so the summaries are not meant to be good: this shows the workflow.
"""

import sys
from pathlib import Path

from ctrlkit.tiny_models import build_bart


def main(out: str) -> None:
    folder = Path(out)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        sys.exit(f"{folder} already exists and is not an empty folder; choose another")
    build_bart(folder)
    print(f"wrote a tiny BART to {folder}; train it with: ctrlkit train -b hf:{folder} ...")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
