"""How many modules a controller option passes through from the command line to the controller.

Runs ``ctrlkit run --controller tag --set tag.top_n=50`` in this process with a tracer that, at
each call into a ctrlkit module, looks at the call's arguments for the option (the text
``tag.top_n=50``, a mapping holding ``top_n: 50`` at any depth, or an object whose ``options``
holds it). It prints the modules in the order the option reaches them, up to the controller's first ``apply`` (where the
option shapes the backbone's input), how many distinct modules that is, how many calls carry it, and how often it crosses from one module to another.

    python scripts/option_path.py
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping

OPTION, VALUE = "top_n", 50


def carries(value, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(value, str):
        return value == f"tag.{OPTION}={VALUE}"
    if isinstance(value, Mapping):
        if value.get(OPTION) in (VALUE, str(VALUE)):  # as typed, then as the option made it
            return True
        return any(carries(item, depth + 1) for item in list(value.values())[:50])
    if isinstance(value, (list, tuple)):
        return any(carries(item, depth + 1) for item in value[:50])
    options = getattr(value, "options", None) if type(value).__module__.startswith("ctrlkit") else None
    return options is not None and options is not value and carries(options, depth + 1)


def main() -> None:
    from click.testing import CliRunner

    from ctrlkit.cli import cli

    calls: list[str] = []
    reached: list[bool] = []

    def tracer(frame, event, arg):
        if event != "call":
            return None
        module = frame.f_globals.get("__name__", "")
        if not (module.startswith("ctrlkit") or module.startswith("ctrlkit_")):
            return None
        code = frame.f_code
        arguments = [frame.f_locals.get(name) for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]]
        if code.co_flags & 0x08:  # **kwargs
            arguments.append(frame.f_locals.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount
                                                                  + bool(code.co_flags & 0x04)]))
        if not reached and any(carries(value) for value in arguments):
            calls.append(f"{module}:{code.co_name}")
            if module.startswith("ctrlkit_controllers") and code.co_name == "apply":
                reached.append(True)  # the option is read where it steers the backbone's input
        return None

    with tempfile.TemporaryDirectory() as folder:
        sys.setprofile(None)
        sys.settrace(tracer)
        try:
            result = CliRunner().invoke(cli, ["run", "--controller", "tag", "--metric", "stas", "--set",
                                              f"tag.{OPTION}={VALUE}", "--limit", "2", "--bootstrap", "0",
                                              "--no-cache", "-o", f"{folder}/run"])
        finally:
            sys.settrace(None)
    if result.exit_code != 0:
        raise SystemExit(result.output)
    modules = [call.split(":")[0] for call in calls]
    crossings = sum(a != b for a, b in zip(modules, modules[1:]))
    print("calls carrying the option, in order:")
    for call in calls:
        print("  " + call)
    print(f"modules: {len(dict.fromkeys(modules))}; calls: {len(calls)}; module crossings: {crossings}")


if __name__ == "__main__":
    main()
