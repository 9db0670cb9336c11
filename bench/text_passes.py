"""Time of each pass over text from outside, at n and 8n characters, on the inputs that were
quadratic before round 3 of issue 36 and on a few others built to be slow.

For each pass (``redact`` with a 51-character key, ``scrub_text``, ``escape_markdown``) and each
text, the best of three calls at 128 KiB and at 1 MiB, their ratio (about 8 for a linear pass,
64 for a quadratic one), and a plain ``str.replace`` over the same 1 MiB as a linear yardstick.
Other work on the machine shows in the ratios of the fastest passes (a millisecond at 128 KiB).
``tests/security/test_security_linear_time.py`` checks the same thing on more inputs.

    python bench/text_passes.py
"""

from __future__ import annotations

import time

from ctrlkit.markdown import escape_markdown
from ctrlkit.redaction import redact
from ctrlkit.secrets import scrub_text

KEY = "sk-proj-3f9c0a7b5e1d24680b1c2d3e4f5a6b7cZq9a8b7c6d5e"
TEXTS = {
    "backslashes": "\\",
    "a.a.a.": "a.",
    "the key repeated": KEY,
    "the key spaced out": " ".join(KEY[:7]) + " ",
    "percent codes": "%25",
    "unicode escapes": "\\u0061",
    "the key in UTF-16": KEY[:7].encode("utf-16-le").decode("latin-1") + ".",
}
PASSES = {"redact": lambda text: redact(text, KEY), "scrub_text": scrub_text, "escape_markdown": escape_markdown}


def best(function, text: str, calls: int = 3) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    print(f"{'pass':<16}{'text':<20}{'128 KiB':>10}{'1 MiB':>10}{'ratio':>7}{'replace':>10}")
    for name, function in PASSES.items():
        for label, unit in TEXTS.items():
            small, large = ((unit * (size // len(unit) + 1))[:size] for size in (1 << 17, 1 << 20))
            low, high = best(function, small), best(function, large)
            baseline = best(lambda text: text.replace(text[0], "-"), large)  # a character it holds
            print(f"{name:<16}{label:<20}{low:>9.4f}s{high:>9.4f}s{high / low:>7.1f}{baseline:>9.4f}s")


if __name__ == "__main__":
    main()
