"""A sweep configuration file (TOML or YAML), read as data only and checked setting by setting."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from ..intake import check_nesting
from .settings import check_settings
from .variants import check_variants

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, published as tomli
    import tomli as tomllib

MAX_CONFIG_BYTES = 64 * 1024  # a hand-written configuration is a few hundred bytes; PyYAML reads ~100 KB/s
MAX_YAML_DEPTH = 16  # a configuration nests three deep (options.component.option)


def load_config(path: str | Path) -> dict:
    """A sweep configuration from TOML or YAML (parsed as data only, never executed), each
    setting checked (:mod:`ctrlkit.sweeps.settings`, :mod:`ctrlkit.sweeps.variants`)."""
    checked = check_settings(read_config(path), str(path))
    check_variants(checked, str(path))
    return checked


def read_config(path: str | Path) -> dict:
    """The table of settings a TOML or YAML file holds, unchecked (parsed as data only, never
    executed). YAML aliases are refused: a few lines of nested aliases name billions of values (the
    "billion laughs"), and a configuration needs none."""
    path = Path(path)
    yaml_file = path.suffix in (".yaml", ".yml")
    if yaml_file:
        try:
            import yaml
        except ImportError:
            raise ConfigurationError(f"{path}: YAML needs PyYAML (pip install pyyaml), or use TOML") from None
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigurationError(f"{path}: a sweep configuration must be at most {MAX_CONFIG_BYTES} bytes")
        text = raw.decode("utf-8")
        if yaml_file:
            _refuse_yaml_hazards(yaml, text, path)
        config = yaml.safe_load(text) if yaml_file else tomllib.loads(text)  # safe_load: data, never objects
    except (OSError, UnicodeDecodeError, ValueError, RecursionError, *((yaml.YAMLError,) if yaml_file else ())) \
            as exc:
        raise ConfigurationError(f"{path}: cannot read the sweep configuration ({' '.join(str(exc).split())})") \
            from None
    if not isinstance(config, dict):
        raise ConfigurationError(f"{path}: expected a table of settings")
    return check_nesting(config, str(path), ConfigurationError)


def _refuse_yaml_hazards(yaml, text: str, path: Path) -> None:
    """Refuse aliases (nested ones name billions of values, the "billion laughs") and deep nesting
    (PyYAML's time grows with the square of the depth, then its recursion overflows), reading the
    tokens only as far as the first one."""
    depth = 0
    for token in yaml.scan(text):
        if isinstance(token, yaml.AliasToken):
            raise ConfigurationError(f"{path}, line {token.start_mark.line + 1}: YAML aliases (*{token.value}) are "
                                     f"not accepted in a sweep configuration; write the value out")
        if isinstance(token, (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockSequenceStartToken,
                              yaml.BlockMappingStartToken)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise ConfigurationError(f"{path}, line {token.start_mark.line + 1}: nested more than "
                                         f"{MAX_YAML_DEPTH} deep, more than a sweep configuration needs")
        elif isinstance(token, (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)):
            depth -= 1
