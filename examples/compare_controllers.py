"""Compare the topic controllers on a dataset, the way a paper's table does.

    python examples/compare_controllers.py                               # the bundled sample
    python examples/compare_controllers.py newts ../shared/data/newts/NEWTS_test_600.csv
"""

import sys

import ctrlkit

CONTROLLERS = ("none", "prepend", "tag", "prepend+tag")


def main(dataset: str = "sample", data: str | None = None) -> None:
    print(f"{'controller':<12} {'STAS':>7} {'>=0.696':>8} {'ROUGE-1':>8} {'ROUGE-L':>8}")
    for controller in CONTROLLERS:
        result = ctrlkit.run(dataset=dataset, data=data, controller=controller, metrics=["stas", "rouge"],
                             baseline=None)
        stas, rouge = result.metrics["stas"], result.metrics["rouge"]
        print(f"{controller:<12} {stas['stas']:>7.4f} {stas['above_threshold']:>8.4f} "
              f"{rouge['rouge1']:>8.4f} {rouge['rougeL']:>8.4f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
