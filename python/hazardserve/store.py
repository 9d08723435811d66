"""Runs and results from Python: a store, its named queries and SQL, replays and sweeps, each
answer a DataFrame read through Arrow (the command line writes Parquet, ``pyarrow`` reads it;
no JSON round trip).

The store and the simulator live in the ``hazardserve`` binary (it links DuckDB, which this
package does not): :class:`Store` runs it, shows its progress lines as they come, and reads
what it wrote. Install the binary with ``cargo install --path .`` from a checkout, or point
``HAZARDSERVE_BIN`` (or ``binary=``) at it.

>>> store = Store("hazardserve-store")                                  # doctest: +SKIP
>>> run = store.replay(source="sample-spot", workload="sample-requests",
...                    policies=["hazard", "fastest"], windows=4)       # doctest: +SKIP
>>> run.comparison[["policy", "mean_completion_s", "vs_fastest_mean_completion_s"]]  # doctest: +SKIP
>>> run.requests().groupby("policy")["completion_s"].mean()              # doctest: +SKIP
>>> store.query("availability", source="cbl-preemption-4node", k=2)     # doctest: +SKIP
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Union

__all__ = ["HazardserveError", "Run", "Store", "find_binary"]

Progress = Union[bool, Callable[[str], None]]


class HazardserveError(RuntimeError):
    """The ``hazardserve`` binary failed: its error message, and the command."""

    def __init__(self, message: str, command: List[str]):
        super().__init__(message)
        self.command = command


def find_binary(binary: Optional[Union[str, Path]] = None) -> str:
    """The ``hazardserve`` binary: ``binary``, else ``$HAZARDSERVE_BIN``, else the one on the
    ``PATH`` (``FileNotFoundError`` saying how to get one otherwise)."""
    for name, candidate in (("binary", binary), ("HAZARDSERVE_BIN", os.environ.get("HAZARDSERVE_BIN"))):
        if candidate:
            if Path(candidate).is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
            raise FileNotFoundError(f"{name}: {candidate} is not an executable file")
    found = shutil.which("hazardserve")
    if found:
        return found
    raise FileNotFoundError(
        "no hazardserve binary: install it with `cargo install --path .` from a checkout, or "
        "set HAZARDSERVE_BIN (or pass binary=) to its path"
    )


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _flags(options: Dict[str, Any]) -> List[str]:
    """Keyword arguments as command-line flags: ``rate_scale=0.1`` is ``--rate-scale 0.1``,
    ``True`` a bare flag, ``False``/``None`` nothing, a list comma-joined."""
    out: List[str] = []
    for k, v in options.items():
        if v is None or v is False:
            continue
        if v is True:
            out.append(_flag(k))
        elif isinstance(v, (list, tuple)):
            out += [_flag(k), ",".join(str(x) for x in v)]
        else:
            out += [_flag(k), str(v)]
    return out


def _frame(path: Path, output: str):
    """The Parquet file at ``path`` as a pandas (default) or polars DataFrame, or an Arrow
    table."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "hazardserve.store reads Parquet with pyarrow: pip install pyarrow "
            "(or pip install './python[store]')"
        ) from None

    table = pq.read_table(path)
    if output == "pandas":
        return table.to_pandas()
    if output == "polars":
        import polars as pl

        return pl.from_arrow(table)
    if output == "arrow":
        return table
    raise ValueError(f"output: expected pandas, polars or arrow, got {output!r}")


class Store:
    """A hazardserve store (the directory ``--store`` names), driven through the binary.

    ``progress``: ``True`` prints the binary's progress lines to standard error as they come,
    ``False`` drops them, a callable receives each line. ``output``: what tables come back as,
    ``pandas`` (default), ``polars`` or ``arrow``.
    """

    def __init__(
        self,
        path: Union[str, Path] = "hazardserve-store",
        *,
        binary: Optional[Union[str, Path]] = None,
        progress: Progress = True,
        output: str = "pandas",
    ) -> None:
        self.path = Path(path)
        self.binary = find_binary(binary)
        self.progress = progress
        if output not in ("pandas", "polars", "arrow"):
            raise ValueError(f"output: expected pandas, polars or arrow, got {output!r}")
        self.output = output

    def __repr__(self) -> str:
        return f"<hazardserve.store.Store {str(self.path)!r}>"

    # -- running the binary ---------------------------------------------------------------

    def _say(self, line: str, progress: Optional[Progress]) -> None:
        p = self.progress if progress is None else progress
        if p is True:
            print(line, file=sys.stderr, flush=True)
        elif callable(p):
            p(line)

    def _run(
        self, args: List[str], progress: Optional[Progress] = None, quiet: str = "\0"
    ) -> List[str]:
        """Runs the binary on the store; streams its standard error lines to the progress
        sink (but those naming ``quiet``) and returns them. A failure raises
        :class:`HazardserveError` (``ValueError`` for a usage error: an unknown flag or
        value) with the binary's message."""
        command = [self.binary, "--store", str(self.path), *args]
        env = dict(os.environ)
        env.pop("HAZARDSERVE_STORE", None)
        proc = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        lines: List[str] = []
        try:
            assert proc.stderr is not None
            for raw in proc.stderr:
                line = raw.rstrip("\n")
                lines.append(line)
                # Errors go into the exception; lines about our own temporary files are noise.
                if not line.startswith("error") and quiet not in line:
                    self._say(line, progress)
        except BaseException:
            # A progress sink that raised, or an interrupt: the run stops with it.
            proc.terminate()
            proc.wait()
            raise
        finally:
            if proc.stderr is not None:
                proc.stderr.close()
        code = proc.wait()
        if code != 0:
            message = "\n".join(l for l in lines if l.strip()) or f"exit code {code}"
            if code == 2:
                raise ValueError(message)
            raise HazardserveError(message, command)
        return lines

    def _table(self, args: List[str], output: Optional[str] = None, progress=None):
        """Runs a command that prints a table, with ``--format parquet``, and reads it."""
        with tempfile.TemporaryDirectory(prefix="hazardserve-") as tmp:
            out = Path(tmp) / "table.parquet"
            self._run([*args, "--format", "parquet", "--out", str(out)], progress, quiet=tmp)
            return _frame(out, output or self.output)

    # -- the store --------------------------------------------------------------------------

    def sources(self, output: Optional[str] = None):
        """Every source in the store with its counts (``hazardserve sources``)."""
        return self._table(["sources"], output)

    def sql(self, query: str, output: Optional[str] = None):
        """A SQL query over the store's tables (``hazardserve sql``)."""
        return self._table(["sql", query], output)

    def queries(self, output: Optional[str] = None):
        """The named queries of ``queries/``: name, parameters, purpose, columns."""
        return self._table(["query", "--list"], output)

    def query(self, name: str, output: Optional[str] = None, **params):
        """The named query ``name`` with its parameters bound (``hazardserve query``)."""
        args = ["query", name]
        for k, v in params.items():
            args += ["--param", f"{k}={v}"]
        return self._table(args, output)

    def ingest(self, paths, *, format: str, source: str, progress: Optional[Progress] = None,
               **options) -> None:
        """Ingests files, directories or globs as one source (``hazardserve ingest``)."""
        paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
        self._run(["ingest", "--format", format, "--source", source, *_flags(options),
                   *map(str, paths)], progress)

    def ingest_public(self, directory, *, only: Optional[List[str]] = None,
                      progress: Optional[Progress] = None) -> None:
        """Ingests every known public trace under ``directory`` (``hazardserve
        ingest-public``), or those named in ``only``."""
        self._run(["ingest-public", str(directory), *_flags({"only": only})], progress)

    # -- replays ----------------------------------------------------------------------------

    def replay(
        self,
        config: Optional[Union[str, Path]] = None,
        *,
        save: bool = True,
        progress: Optional[Progress] = None,
        **flags,
    ) -> "Run":
        """Replays a scenario (``config``: a scenario file; ``flags``: any of ``hazardserve
        replay``'s flags as keywords, ``policies=["hazard", "fastest"]``, ``windows=4``,
        ``load=0.6``, ...) and returns the :class:`Run` with its comparison. With ``save`` the
        run is stored, and its per-request records can be read (:meth:`Run.requests`)."""
        args = ["replay"]
        if config is not None:
            args += ["--config", str(config)]
        if not save:
            flags = {**flags, "no_save": True}
        args += _flags(flags)
        with tempfile.TemporaryDirectory(prefix="hazardserve-") as tmp:
            out = Path(tmp) / "comparison.parquet"
            lines = self._run(
                [*args, "--format", "parquet", "--out", str(out)], progress, quiet=tmp
            )
            comparison = _frame(out, self.output)
        run_id = None
        for line in lines:
            m = re.search(r"stored as (\S+)", line)
            if m:
                run_id = m.group(1)
        return Run(self, run_id, comparison)

    def run(self, run_id: Optional[str] = None) -> "Run":
        """A stored run (default: the latest), with its comparison (``hazardserve compare``)."""
        args = ["compare"] + ([run_id] if run_id else [])
        lines: List[str] = []
        comparison = self._table(args, progress=lines.append)
        if run_id is None:
            for line in lines:
                m = re.match(r"run (\S+)", line)
                if m:
                    run_id = m.group(1)
        return Run(self, run_id, comparison)

    def runs(self, output: Optional[str] = None):
        """Every stored run: id, sources, windows, seeds, training cut, when."""
        return self.sql("select * from runs order by run_id", output)

    # -- sweeps -----------------------------------------------------------------------------

    def sweep(
        self,
        grid: Union[str, Path],
        *,
        id: Optional[str] = None,
        where: Optional[Dict[str, Any]] = None,
        jobs: int = 0,
        progress: Optional[Progress] = None,
    ):
        """Runs a sweep grid (``hazardserve sweep --grid``; ``where``: only the cells whose
        axes have these values) and returns its summary (:meth:`sweep_summary`)."""
        if id is None:
            import datetime

            id = "sweep-py-" + datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y%m%dT%H%M%S%f"
            )
        args = ["sweep", "--grid", str(grid), "--id", id, "--jobs", str(jobs)]
        for k, v in (where or {}).items():
            args += ["--where", f"{k}={v}"]
        self._run(args, progress)
        return self.sweep_summary(id)

    def sweep_summary(self, sweep_id: Optional[str] = None, output: Optional[str] = None):
        """The regime map of a stored sweep (default: the latest): per cell, ``hazard`` minus
        its hazard-blind twin with its interval, the verdict and the q-value
        (``hazardserve sweep summary``)."""
        return self._table(["sweep", "summary", *([sweep_id] if sweep_id else [])], output)

    def sweeps(self, output: Optional[str] = None):
        """Every stored sweep (``hazardserve sweep list``)."""
        return self._table(["sweep", "list"], output)


class Run:
    """A replay run: ``run_id`` (``None`` when it was not stored), ``comparison`` (one row per
    policy: each metric with its interval, the paired difference to ``fastest``, the gap
    closed and the forecast's calibration), and the per-request records of a stored run."""

    def __init__(self, store: Store, run_id: Optional[str], comparison) -> None:
        self.store = store
        self.run_id = run_id
        self.comparison = comparison

    @property
    def calibration(self):
        """The forecast's calibration per policy: the predicted-over-served completion ratio
        and the interruption forecast's Brier score (columns ``forecast_*``)."""
        table = self.comparison
        names = table.column_names if hasattr(table, "column_names") else list(table.columns)
        cols = [c for c in names if c == "policy" or c.startswith("forecast_")]
        return table.select(cols) if hasattr(table, "select") else table[cols]

    def requests(self, output: Optional[str] = None):
        """Every request of every policy, window and seed of the run (the store's
        ``replay_requests``)."""
        if self.run_id is None:
            raise ValueError("this run was not stored (replay(save=True) stores it)")
        quoted = self.run_id.replace("'", "''")
        return self.store.sql(f"select * from replay_requests where run_id = '{quoted}'", output)

    def __repr__(self) -> str:
        return f"<hazardserve.store.Run {self.run_id or '(not stored)'}: {len(self.comparison)} policies>"
