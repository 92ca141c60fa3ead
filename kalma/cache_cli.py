"""`kalma cache stats|clear`."""

from __future__ import annotations

import click

from .jsonl import dumps


@click.group("cache")
def cache() -> None:
    """Inspect or clear the on-disk call cache (KALMA_CACHE_DIR, default ~/.cache/kalma)."""


@cache.command("stats")
def stats() -> None:
    """Entries per namespace and size on disk."""
    from .cache import get_cache

    click.echo(dumps(get_cache().stats(), indent=2))


@cache.command("clear")
@click.option("--namespace", help="Only this namespace (e.g. llm, entail, kg).")
def clear(namespace: str | None) -> None:
    """Delete cached entries; a damaged cache file is replaced by an empty one."""
    from .cache import CacheError, default_cache_path, get_cache, remove_cache_files

    try:
        click.echo(f"removed {get_cache().clear(namespace)} entries")
    except CacheError as exc:
        removed = remove_cache_files(default_cache_path())
        click.echo(f"the cache was damaged ({exc.__str__().split(' (')[0]}); removed {', '.join(map(str, removed))}")
