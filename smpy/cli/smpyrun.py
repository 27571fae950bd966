"""``smpyrun``: run an unmodified mpi4py program on a simulated platform.

    smpyrun -np 4 app.py arg1 arg2
    smpyrun -np 4 -m package.module arg1      (as python -m; also -m mpi4py app.py)
    smpyrun -np 4 -c "from mpi4py import MPI; print(MPI.COMM_WORLD.rank)"
    smpyrun -np 1024 --platform cluster.yaml --cfg=network/model:SMPI --json out.json app.py
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from smpy.shim.blas import single_thread_blas


def build_parser(prog: str = "smpyrun") -> argparse.ArgumentParser:
    epilog = None
    if prog == "smpy":  # the umbrella command: say what else it does
        epilog = ("other commands: smpy predict (sweeps over rank counts, platforms and parameters, "
                  "against real runs with --real), smpy calibrate {host-speed,network,compute,memory,"
                  "power}, smpy platform {show,convert,route}, smpy plot, smpy replay; "
                  "each with --help")
    p = argparse.ArgumentParser(
        prog=prog, description="Run an unmodified mpi4py program on a simulated cluster and report "
        "its predicted run time.", epilog=epilog, allow_abbrev=False)
    p.add_argument("-np", "-n", "--np", dest="np", type=int, default=None,
                   help="number of MPI ranks (default: one per hostfile entry, else 1)")
    p.add_argument("--platform", "-platform", dest="platform", default=None,
                   help="platform description (YAML or SimGrid XML); default: the bundled 64-host cluster")
    p.add_argument("--hostfile", "-hostfile", "-machinefile", "-f", dest="hostfile", default=None,
                   help="host per rank, one name per line, 'host:n' repeats it n times (round-robin)")
    p.add_argument("--hosts", "-hosts", dest="hosts", default=None, metavar="LIST",
                   help="host per rank as a comma-separated list ('host:n' repeats it n times), as "
                        "mpiexec -hosts; instead of --hostfile")
    p.add_argument("--map", "-map", dest="map", action="store_true", help="print the rank → host placement")
    p.add_argument("--cfg", action="append", default=[], metavar="NAME:VALUE",
                   help="set a configuration item (repeatable); see --help-cfg")
    p.add_argument("--energy", action="store_true", help="load the host energy plugin (same as --cfg=plugin:host_energy)")
    p.add_argument("--power-trace", dest="power_trace", default=None, metavar="FILE.csv",
                   help="write each host's power over simulated time as CSV (time_s,host,power_W); "
                        "implies --energy")
    p.add_argument("--plots", default=None, metavar="DIR",
                   help="record the timeline, the report (and the power trace with --energy) in DIR "
                        "and draw them there: gantt.png, matrix.png, power.png, report.html")
    p.add_argument("--report", default=None, metavar="PREFIX",
                   help="write PREFIX.json and PREFIX.csv (time in computation and per MPI call, per "
                        "rank; load imbalance) and print the table")
    p.add_argument("--trace-ti", dest="trace_ti", default=None, metavar="FILE",
                   help="record a time-independent trace (SMPI's format: FILE indexes FILE_files/"
                        "rank-<r>.txt) for smpy replay or smpirun -replay")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="write a timeline of MPI calls, computation and messages: Chrome/Perfetto "
                        "trace-event JSON, or Paje for ViTE when FILE ends in .paje/.trace")
    p.add_argument("--trace-format", dest="trace_format", default=None, choices=("auto", "chrome", "paje"),
                   help="format of --trace FILE (default auto: by its suffix)")
    p.add_argument("--json", dest="json", default=None, metavar="FILE", help="write the run summary as JSON")
    p.add_argument("--fail", action="append", default=[], metavar="NAME@TIME",
                   help="fail host or link NAME at simulated TIME, e.g. node-3@0.5s (repeatable); "
                        "the job aborts as under Hydra unless --disable-auto-cleanup")
    p.add_argument("--disable-auto-cleanup", "-disable-auto-cleanup", dest="no_cleanup", action="store_true",
                   help="keep the job running when a process fails (ULFM), as mpiexec -disable-auto-cleanup")
    p.add_argument("--timeout", type=_positive, default=None, metavar="SECONDS",
                   help="stop the run after this wall-clock time, as Ctrl-C does (partial summary, "
                        "valid trace and JSON; exit code 124)")
    p.add_argument("--sim-timeout", dest="sim_timeout", type=_positive, default=None, metavar="SECONDS",
                   help="stop the run when the simulated time reaches this (exit code 124)")
    p.add_argument("--restarts", type=int, default=0, metavar="K",
                   help="after a failed attempt (a host or link failed), run the program again, up to K "
                        "times, on the hosts still up; simulated time continues, files persist")
    p.add_argument("--restart-delay", dest="restart_delay", default="60s", metavar="TIME",
                   help="simulated time between a failed attempt and the next (default 60s)")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the summary")
    p.add_argument("--help-cfg", action="store_true", help="list the configuration items and exit")
    p.add_argument("--help-coll", action="store_true", help="list the collective algorithms and selectors and exit")
    p.add_argument("--version", action="store_true", help="print smpy's version and exit")
    p.add_argument("-m", dest="module_help", metavar="MODULE", default=None,
                   help="run a library module as a script (as python -m; the rest are its arguments)")
    p.add_argument("-c", dest="command_help", metavar="COMMAND", default=None,
                   help="run a program passed as a string (as python -c)")
    p.add_argument("script", nargs="?", help="the Python program")
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the program")
    return p


def _help_cfg() -> str:
    import smpy.cli.launch  # noqa: F401 - declares every setting
    from smpy.support.config import all_flags

    lines = ["Configuration items (--cfg=NAME:VALUE):"]
    for f in all_flags():
        choices = f" ({'|'.join(f.choices)})" if f.choices else ""
        default = f"  [default: {f.default}]" if str(f.default) != "" else ""
        lines.append(f"  {f.name}{choices}{default}\n      {f.doc}")
    return "\n".join(lines)


#: smpyrun options that take a value (the token after them is not a program)
_VALUED = {"-np", "-n", "--np", "--platform", "-platform", "--hostfile", "-hostfile", "-machinefile", "-f",
           "--hosts", "-hosts",
           "--cfg", "--trace", "--trace-format", "--json", "--plots", "--report", "--trace-ti",
           "--power-trace", "--timeout", "--sim-timeout", "--fail", "--restarts", "--restart-delay"}


def split_program(argv: list[str]) -> tuple[list[str], str | None, str | None, list[str]]:
    """Split ``argv`` at ``-m MODULE`` or ``-c COMMAND`` as python does: (smpyrun's options,
    module, command, the program's arguments). Everything after the module or command
    belongs to the program, options included."""
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok in _VALUED:
            i += 2
            continue
        if tok == "--" or not tok.startswith("-"):
            break
        if tok in ("-m", "-c") and i + 1 < len(argv):
            value, rest = argv[i + 1], argv[i + 2:]
            return (argv[:i], value, None, rest) if tok == "-m" else (argv[:i], None, value, rest)
        i += 1
    return argv, None, None, []


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _info(ns: argparse.Namespace) -> str | None:
    """The text of --version, --help-cfg or --help-coll, if one was asked for."""
    if ns.version:
        from smpy import __version__
        return f"smpy {__version__}"
    if ns.help_cfg:
        return _help_cfg()
    if ns.help_coll:
        from smpy.colls.dispatch import help_text
        return help_text()
    return None


def build_cfg(ns: argparse.Namespace) -> dict[str, Any]:
    """The configuration items of the command line: every --cfg, then the options that are
    shorthands for one (--report, --trace-ti, --power-trace, --energy, --plots, -q)."""
    from smpy.cli.launch import trace_format
    from smpy.support.config import Config

    cfg: dict[str, Any] = {}
    for item in ns.cfg:
        name, value = Config.parse_cfg_option(item)
        if name == "plugin" and cfg.get("plugin"):  # as in SimGrid, each one loads a plugin
            value = f"{cfg['plugin']},{value}"
        cfg[name] = value
    if ns.trace_format:
        cfg["smpy/trace-format"] = ns.trace_format
    if ns.fail:
        cfg["smpy/fail"] = ",".join(x for x in (str(cfg.get("smpy/fail", "")), *ns.fail) if x)
    if ns.no_cleanup:
        cfg["smpy/auto-cleanup"] = "no"
    if ns.plots:
        if ns.trace and trace_format(ns.trace, ns.trace_format or "auto") == "paje":
            raise ValueError("--plots draws the Chrome trace: give --trace a .json file or leave it out")
        plots = Path(ns.plots)
        ns.trace = ns.trace or str(plots / "trace.json")
        ns.report = ns.report or str(plots / "report")
        if ns.energy and not ns.power_trace:
            cfg["smpy/power-trace"] = str(plots / "power.csv")
    shorthands = {"smpy/report": ns.report, "smpy/trace-ti": ns.trace_ti, "smpy/power-trace": ns.power_trace}
    cfg.update({k: v for k, v in shorthands.items() if v})
    if ns.quiet:
        cfg.setdefault("smpy/progress", "no")
    if ns.energy:
        cfg["plugin"] = ",".join(x for x in (str(cfg.get("plugin", "")), "host_energy") if x)
    return cfg


def check_outputs(ns: argparse.Namespace) -> None:
    """Every file smpyrun writes can be written, and --plots can draw (before the run)."""
    from smpy.cli.outputs import check_dir, check_file

    check_file(ns.json, "--json")
    check_dir(ns.plots, "--plots")
    if ns.plots:
        from smpy.cli.outputs import OutputError
        from smpy.trace.plots import require_matplotlib
        try:
            require_matplotlib()
        except RuntimeError as exc:
            raise OutputError(f"--plots: {exc}") from None
        Path(ns.plots).mkdir(parents=True, exist_ok=True)
    check_file(ns.trace, "--trace")
    check_file(f"{ns.report}.json" if ns.report else None, "--report")
    check_file(ns.trace_ti, "--trace-ti")
    check_file(ns.power_trace, "--power-trace")


def host_setting(ns: argparse.Namespace) -> str | list[str] | None:
    """The job's hosts: the host file's path, the ``-hosts`` list parsed (its entries as a
    hostfile's, ``host:n`` repeated), or None. Both given: Hydra's error."""
    if ns.hosts is None:
        return ns.hostfile
    if ns.hostfile is not None:
        raise ValueError("duplicate host file or host list setting (--hostfile and -hosts)")
    from smpy.platform.hostfile import parse_hostfile_text
    return parse_hostfile_text("\n".join(ns.hosts.split(",")), "-hosts")


def _ranks(ns: argparse.Namespace, hosts: str | list[str] | None) -> int:
    if ns.np is not None:
        return ns.np
    if isinstance(hosts, list):
        return len(hosts)
    if hosts:
        from smpy.platform import parse_hostfile
        return len(parse_hostfile(hosts))
    return 1


def report_outputs(ns: argparse.Namespace, result: Any, cfg: dict[str, Any], np: int, prog: str,
                   attempts: list[Any] | None = None) -> None:
    """The summary (stderr), --json and the --plots figures; ``attempts``: with --restarts."""
    from smpy.cli import restarts

    sys.stdout.flush()
    if not ns.quiet:
        print(result.summary(), file=sys.stderr)
        if attempts is not None:
            print(restarts.summary(attempts), file=sys.stderr)
    if ns.json:
        doc = result.to_json()
        if attempts is not None:
            doc.update(restarts.record(attempts))
        with open(ns.json, "w") as fh:
            json.dump(doc, fh, indent=2)
    if ns.plots:
        from smpy.trace.plots import make_all

        power = cfg.get("smpy/power-trace")
        try:
            files = make_all(Path(ns.plots), Path(ns.trace), Path(power) if power else None,
                             Path(f"{ns.report}.json"), f"smpy: {ns.script} on {np} ranks",
                             summary=result)
            print(f"[smpy] plots: {', '.join(str(f) for f in files)}", file=sys.stderr)
        except RuntimeError as exc:
            print(f"{prog}: plots: {exc}", file=sys.stderr)


def split_colons(argv: list[str]) -> list[list[str]]:
    """The parts of an MPMD command line, split at each ``:`` token (as mpiexec does)."""
    parts: list[list[str]] = [[]]
    for tok in argv:
        if tok == ":":
            parts.append([])
        else:
            parts[-1].append(tok)
    return parts


def _part_parser(prog: str) -> argparse.ArgumentParser:
    """The options of a part after the first (Hydra's local options): its rank count, and
    the job's one host file when the first part did not give it."""
    p = argparse.ArgumentParser(prog=f"{prog} ... :", add_help=False, allow_abbrev=False)
    p.add_argument("-np", "-n", "--np", dest="np", type=int, default=1)
    p.add_argument("--hostfile", "-hostfile", "-machinefile", "-f", dest="hostfile", default=None)
    p.add_argument("--hosts", "-hosts", dest="hosts", default=None)
    p.add_argument("script", nargs="?")
    p.add_argument("args", nargs=argparse.REMAINDER)
    return p


def parse_parts(ns: argparse.Namespace, module: str | None, command: str | None, rest: list[list[str]],
                parser: argparse.ArgumentParser, prog: str) -> list[Any]:
    """The :class:`smpy.cli.launch.App` of each part of ``smpyrun A : B : ...``; the first is
    ``ns``'s program. A part's ``--hostfile`` is the whole job's (Hydra accepts one host file,
    in any part, and refuses a second: 'duplicate host file setting')."""
    from smpy.cli.launch import App

    apps = [App(ns.script, ns.np if ns.np is not None else 1, list(ns.args), module, command)]
    sub = _part_parser(prog)
    for i, tokens in enumerate(rest, start=2):
        own, mod, cmd, prog_args = split_program(tokens)
        pns, unknown = sub.parse_known_args(own)
        if unknown:
            parser.error(f"part {i}: unknown option(s) {' '.join(unknown)} (a part takes -np N, "
                         "--hostfile FILE or -hosts LIST, then its program and arguments)")
        for key in ("hostfile", "hosts"):
            if getattr(pns, key) is not None:
                if ns.hostfile is not None or ns.hosts is not None:
                    parser.error(f"part {i}: duplicate host file or host list setting (one for the whole "
                                 "job, as Hydra)")
                setattr(ns, key, getattr(pns, key))
        if (pns.script is None) == (mod is None and cmd is None):
            parser.error(f"part {i}: give one program: a file, -m MODULE or -c COMMAND")
        if pns.np < 1:
            parser.error(f"part {i}: -np must be at least 1, got {pns.np}")
        apps.append(App(pns.script, pns.np, prog_args if (mod or cmd) else list(pns.args), mod, cmd))
    return apps


def main(argv: list[str] | None = None, prog: str = "smpyrun") -> int:
    parser = build_parser(prog)
    first, *rest = split_colons(list(sys.argv[1:] if argv is None else argv))
    own, module, command, prog_args = split_program(first)
    ns = parser.parse_args(own)
    if module is not None or command is not None:
        if ns.script is not None:
            parser.error("give either a program file or -m MODULE / -c COMMAND, not both")
        ns.args = prog_args
    ns.parts = None
    info = _info(ns)
    if info is not None:
        print(info)
        return 0
    if not ns.script and module is None and command is None:
        parser.error("the program to run is missing (smpyrun -np N program.py [args], -m MODULE or -c COMMAND)")
    if rest:
        ns.parts = parse_parts(ns, module, command, rest, parser, prog)
        ns.np = sum(app.np for app in ns.parts)
    from smpy.cli.stops import StopSignals

    signals = StopSignals().install(ns.timeout)
    try:
        return _run(ns, module, command, prog)
    finally:
        signals.uninstall()


def _run(ns: argparse.Namespace, module: str | None, command: str | None, prog: str) -> int:
    single_thread_blas()
    from smpy.cli.launch import run
    from smpy.cli.restarts import run_attempts
    from smpy.platform import PlatformError
    from smpy.support.config import ConfigError

    try:
        cfg = build_cfg(ns)
        check_outputs(ns)
        hosts = host_setting(ns)
        np = _ranks(ns, hosts)
        if ns.map:
            _print_map(ns.platform, np, hosts)
        program: dict[str, Any] = (dict(script=ns.script, args=ns.args, module=module, command=command)
                                   if ns.parts is None else dict(script=None, parts=ns.parts))
        attempts = run_attempts(run, ns.restarts, _restart_delay(ns), np=np, platform=ns.platform, cfg=cfg,
                                hostfile=hosts, capture=False, echo=True, trace=ns.trace,
                                sim_timeout=ns.sim_timeout, **program)
        result = attempts[-1]
    except (PlatformError, ConfigError, FileNotFoundError, ValueError, LookupError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except SyntaxError as exc:
        print(f"{prog}: error: cannot compile {ns.script}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # a second Ctrl-C before the simulation started
        print(f"{prog}: {getattr(exc, 'message', 'interrupted')}", file=sys.stderr)
        return getattr(exc, "exit_code", 130)
    report_outputs(ns, result, cfg, np, prog, attempts if ns.restarts else None)
    return result.exit_code


def _restart_delay(ns: argparse.Namespace) -> float:
    from smpy.support.units import parse_time

    if ns.restarts < 0:
        raise ValueError(f"--restarts {ns.restarts}: must be 0 or more")
    try:
        delay = parse_time(ns.restart_delay)
    except Exception:  # noqa: BLE001 - any unparsable time
        raise ValueError(f"--restart-delay {ns.restart_delay!r}: expected a time like 60s or 1h") from None
    if not delay >= 0:
        raise ValueError(f"--restart-delay {ns.restart_delay!r}: must be zero or more")
    return delay


def _print_map(platform: str | None, np: int, hostfile: str | list[str] | None) -> None:
    from smpy.platform import default_platform, load_platform, parse_hostfile, place_ranks

    plat = load_platform(platform) if platform else default_platform()
    if isinstance(hostfile, list):
        hosts, source = hostfile, "-hosts"
    else:
        hosts, source = (parse_hostfile(hostfile) if hostfile else None), hostfile or "hostfile"
    for r, h in enumerate(place_ranks(plat, np, hosts, source=source)):
        print(f"[rank {r}] -> {h.name}", file=sys.stderr)


def cli() -> None:
    """Console-script entry point: :func:`main`, then a fast exit (smpy.cli._exit)."""
    from smpy.cli import stops
    from smpy.cli._exit import run

    stops.record_early()
    run(main)


if __name__ == "__main__":
    cli()
