"""Folder outputs that never destroy what a user owns.

A command that writes a folder (`kg import`, `dataset publish`, `human export`) writes the new
content beside the old (`.NAME.new`), and swaps it in only once complete: a failure midway leaves
the old folder as it was. An existing folder is replaced only when asked (`--overwrite`) and only
when it holds nothing but what that command writes: a folder with anything else in it (a thesis,
a data file) is refused, in one line naming what is there, and nothing is touched.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ConfigError


def foreign(folder: Path, writes: Collection[str]) -> list[str]:
    """The entries of `folder` that a command writing `writes` (top-level names) did not make."""
    return sorted(p.name for p in folder.iterdir() if p.name not in writes)


def check_replaceable(output: Path, overwrite: bool, writes: Collection[str], what: str) -> None:
    """Refuse, before any work, an output that exists (without `overwrite`), that is not a folder,
    or that holds anything this command does not write."""
    if not os.path.lexists(output):
        return
    if not overwrite:
        raise ConfigError(f"{output} exists; nothing was written (pass --overwrite to replace it)")
    if not output.is_dir() or output.is_symlink():
        raise ConfigError(f"{output} is not a folder {what} wrote; nothing was removed (give a new folder)")
    others = foreign(output, writes)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise ConfigError(f"{output} holds files {what} does not write ({shown}); nothing was removed (give a new folder)")


def staging(output: Path) -> Path:
    """Where `output`'s new content is written before it is swapped in: a hidden sibling, so that
    it is on the same filesystem (an atomic rename) and a rerun finds it."""
    return output.with_name(f".{output.name}.new")


def swap_in(new: Path, output: Path) -> None:
    """`new` becomes `output`; the old `output`, if any, is removed only after."""
    old = output.with_name(f".{output.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if os.path.lexists(output):
        os.replace(output, old)
    os.replace(new, output)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def replacing(output: str | Path, overwrite: bool, writes: Collection[str], what: str) -> Iterator[Path]:
    """`with replacing(OUT, overwrite, names, "kalma X") as tmp:` write into `tmp`; it becomes OUT
    when the block ends without error, else it is removed and OUT is as it was."""
    output = Path(output)
    check_replaceable(output, overwrite, writes, what)
    new = staging(output)
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)
    try:
        yield new
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise
    swap_in(new, output)
