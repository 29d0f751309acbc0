"""The data files of simulators/data (TOML catalogues), read once, and the error a bad entry raises.

The lowest module of the catalogues: gpu.py, model.py and catalog.py raise CatalogError, and
catalog.py and the engine profiles (efficiency.py) read their files through data_file.
"""

import tomllib
from functools import cache
from importlib import resources
from typing import Any

DATA = "simulators/data/"  # where the data files are, as an error names them


class CatalogError(ValueError):
    """A catalogue entry, a pasted config.json or a custom GPU is invalid."""


@cache
def data_file(name: str) -> dict[str, Any]:
    """A data file of simulators/data (a TOML catalogue), parsed; read once per process."""
    text = resources.files("simulators").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # its message gives the line and column
        raise CatalogError(f"{DATA}{name}: {e}") from None
