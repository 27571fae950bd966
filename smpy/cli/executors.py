"""Where the runs of a sweep execute: this machine's threads, or a Dask cluster.

``smpy predict --executor SPEC``:

- ``threads`` (the default): ``--jobs N`` runs at once on this machine;
- ``dask``: a local ``dask.distributed`` cluster, one single-threaded worker process per core
  (or ``--jobs N`` workers);
- ``dask://HOST:PORT`` (or ``tcp://HOST:PORT``): the workers of an existing Dask scheduler, on
  other machines (``dask-jobqueue`` starts such workers from Slurm or PBS jobs).

A run on a worker needs the files its command names, and no shared file system is assumed:
:func:`pack` gathers them once into a *bundle* (a gzipped tar, sent to every worker once), and
:class:`PortableRunner` unpacks it in the worker's temporary directory (once per worker and
bundle, keyed by its SHA-256), rewrites the command's paths into it and runs the job there with
the worker's own Python (smpy must be installed on the workers). The bundle holds the program's
directory (its ``.py`` files and packages: the local modules it imports) and every file the
command names (platforms, hostfile, files given to ``--cfg``). A worker lost during the sweep
is survived: Dask runs its jobs again elsewhere (``retries``).

Real runs (``--real``) measure this node and stay here: they are refused with a Dask executor.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from smpy.cli.sweep import Job, Run, SweepError, run_job

#: files of the program's directory that travel with it (its modules and small inputs)
_PROGRAM_SUFFIXES = (".py", ".yaml", ".yml", ".xml", ".txt", ".csv", ".json", ".ti")
#: a bundle larger than this is refused (a program directory that is a whole home, say)
MAX_BUNDLE_BYTES = 64 * 2**20
_SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".tox", ".mypy_cache"}


@dataclass(frozen=True)
class Bundle:
    """The files of a sweep's runs, for workers that do not share this file system."""

    data: bytes  # tar.gz; members are named <slot>/<relative path>
    #: original path (as the command has it, resolved against the job's cwd) -> member path
    paths: dict[str, str]
    #: the job's cwd maps to this member directory
    cwd_member: str
    digest: str


def parse_executor(spec: str) -> tuple[str, str | None]:
    """``("threads", None)``, ``("dask", None)`` (a local cluster) or ``("dask", address)``."""
    if spec == "threads":
        return "threads", None
    if spec == "dask":
        return "dask", None
    for prefix, scheme in (("dask://", "tcp://"), ("tcp://", "tcp://"), ("tls://", "tls://")):
        if spec.startswith(prefix) and len(spec) > len(prefix):
            return "dask", scheme + spec[len(prefix):]
    raise SweepError(f"--executor {spec!r}: expected threads, dask or dask://HOST:PORT")


def _files_of(job: Job) -> list[Path]:
    """Existing files the command names: arguments, and NAME:FILE values of --cfg."""
    found: list[Path] = []
    for arg in job.command[1:]:
        candidates = [arg]
        if arg.startswith("--cfg="):
            candidates = [arg.split(":", 1)[1]] if ":" in arg else []
        for c in candidates:
            p = Path(job.cwd, c)
            if c and p.is_file():
                found.append(p.resolve())
    return found


def _program_files(script: Path) -> Iterator[Path]:
    """The program's directory: its files of known kinds, and packages (with __init__.py)."""
    root = script.parent
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS
                             and (here / d / "__init__.py").is_file())
        for name in sorted(filenames):
            if name.endswith(_PROGRAM_SUFFIXES):
                yield here / name


def pack(jobs: Sequence[Job]) -> Bundle:
    """Gather the files of ``jobs`` (emulations of one sweep: same cwd and program directory
    for all) into one bundle."""
    if not jobs:
        raise SweepError("nothing to run")
    cwd = Path(jobs[0].cwd).resolve()
    members: dict[Path, str] = {}
    scripts = {_script_of(j) for j in jobs}
    for script in sorted(scripts):
        slot = f"p{len({m.split('/')[0] for m in members.values()})}"
        for f in _program_files(script):
            members.setdefault(f, f"{slot}/{f.relative_to(script.parent).as_posix()}")
    for job in jobs:
        for f in _files_of(job):
            members.setdefault(f, f"f{len(members)}/{f.name}")
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        for f, name in sorted(members.items(), key=lambda kv: kv[1]):
            total += f.stat().st_size
            if total > MAX_BUNDLE_BYTES:
                raise SweepError(f"the files to send to the workers exceed "
                                 f"{MAX_BUNDLE_BYTES // 2**20} MiB (at {f}); move the program to a "
                                 "directory of its own")
            info = tar.gettarinfo(str(f), arcname=name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0  # the same files give the same bundle (and digest)
            with open(f, "rb") as fh:
                tar.addfile(info, fh)
    data = buf.getvalue()
    return Bundle(data, {str(f): name for f, name in members.items()}, _cwd_member(cwd, members),
                  hashlib.sha256(data).hexdigest())


def _script_of(job: Job) -> Path:
    """The program of an emulation command (the first argument after smpyrun's options)."""
    cmd = list(job.command)
    i = cmd.index("smpy.cli.smpyrun") + 1 if "smpy.cli.smpyrun" in cmd else 1
    takes_value = {"-np", "--platform", "--hostfile"}
    while i < len(cmd) and cmd[i].startswith("-"):
        i += 2 if cmd[i] in takes_value else 1
    if i >= len(cmd):
        raise SweepError(f"no program in {' '.join(cmd)}")
    return Path(job.cwd, cmd[i]).resolve()


def _cwd_member(cwd: Path, members: dict[Path, str]) -> str:
    """Run in the program's unpacked directory when the job's cwd is that directory."""
    for f, name in members.items():
        if f.parent == cwd and name.startswith("p"):
            return name.split("/")[0]
    return "."


class PortableRunner:
    """Runs a job from a :class:`Bundle` on a machine that lacks the sweep's files."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle

    def __call__(self, job: Job) -> Run:
        root = _unpacked(self.bundle)
        return run_job(rewrite(job, self.bundle, root))


def rewrite(job: Job, bundle: Bundle, root: Path) -> Job:
    """``job`` with its paths in ``root`` (the unpacked bundle) and this machine's Python."""

    def mapped(value: str) -> str:
        p = str(Path(job.cwd, value).resolve()) if value else value
        return str(root / bundle.paths[p]) if p in bundle.paths else value

    cmd = [sys.executable]
    for arg in job.command[1:]:
        if arg.startswith("--cfg=") and ":" in arg:
            name, value = arg.split(":", 1)
            cmd.append(f"{name}:{mapped(value)}")
        else:
            cmd.append(mapped(arg))
    return replace(job, command=tuple(cmd), cwd=str(root / bundle.cwd_member))


_UNPACKED: dict[str, Path] = {}


def _unpacked(bundle: Bundle) -> Path:
    """Unpack once per process and bundle (a worker runs many jobs of the same sweep)."""
    root = _UNPACKED.get(bundle.digest)
    if root is not None and root.is_dir():
        return root
    root = Path(tempfile.gettempdir()) / f"smpy-bundle-{bundle.digest[:16]}-{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix="smpy-bundle-"))
    with tarfile.open(fileobj=io.BytesIO(bundle.data), mode="r:gz") as tar:
        tar.extractall(tmp, filter="data")  # no absolute paths, links or devices
    if root.exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    _UNPACKED[bundle.digest] = root
    return root


@contextlib.contextmanager
def open_executor(spec: str, jobs: Sequence[Job], workers: int,
                  log: Callable[[str], None] = lambda s: None,
                  ) -> Iterator[tuple[Executor | None, Callable[[Job], Run]]]:
    """The executor for ``spec`` and the function its workers run, closed on exit."""
    kind, address = parse_executor(spec)
    if kind == "threads":
        if workers <= 1:
            yield None, run_job
            return
        with ThreadPoolExecutor(workers) as pool:
            yield pool, run_job
        return
    if any(j.point.is_real for j in jobs):
        raise SweepError("--real runs measure this node: use them with --executor threads")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise SweepError("--executor dask needs dask.distributed: pip install 'dask[distributed]'"
                         ) from None
    bundle = pack(jobs)
    with contextlib.ExitStack() as stack:
        if address is None:
            n = workers if workers > 1 else (os.cpu_count() or 1)
            cluster = stack.enter_context(LocalCluster(n_workers=n, threads_per_worker=1,
                                                       processes=True, dashboard_address=None))
            client = stack.enter_context(Client(cluster))
            log(f"[smpy] dask: local cluster of {n} worker processes")
        else:
            try:
                client = stack.enter_context(Client(address, timeout=30))
            except OSError as exc:
                raise SweepError(f"--executor {spec}: cannot reach the Dask scheduler: {exc}") from None
            log(f"[smpy] dask: scheduler {address}, "
                f"{len(client.scheduler_info().get('workers', {}))} workers")
        log(f"[smpy] dask: {len(bundle.paths)} files ({len(bundle.data) / 1024:.0f} KiB) sent to "
            "the workers")
        yield client.get_executor(pure=False, retries=2), PortableRunner(bundle)
