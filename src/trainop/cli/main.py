"""``trainop``: the command line (typer + rich). Thin: parse arguments, call the chosen backend through
the one ``JobClient`` (backends/base.py: this machine, or a cluster through a kubeconfig), print.

Exit codes (docs/local-backend.md, README): 0 success (``run``/``wait``: the job Succeeded or the
awaited condition was reached); 1 the job Failed (or finished otherwise than awaited); 2 invalid
input (a manifest's field errors, a bad option); 3 not found or already exists; 4 ``wait`` timed
out; 5 the backend cannot be used (no kubeconfig, the cluster unreachable or refusing, its CRDs
missing); 130 ``run`` interrupted with Ctrl-C (the job was stopped and kept, marked interrupted; 143
for SIGTERM, 129 for SIGHUP).
Never a traceback for bad input.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer
from typer.core import TyperCommand

from trainop.cli.format import DurationError, parse_duration
from trainop.cli.help import install_plain_help

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from trainop.api.common import TrainingJob
    from trainop.backends.base import JobClient
    from trainop.cli.stop_signals import StopSignals
    from trainop.cli.watch import RunView

EXIT_OK, EXIT_FAILED, EXIT_INVALID, EXIT_NOT_FOUND, EXIT_TIMEOUT, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130
EXIT_BACKEND = 5  # the backend cannot be used: no kubeconfig, cluster unreachable or refusing, no CRDs
_T = TypeVar("_T")

app = typer.Typer(
    name="trainop",
    help="Run Kubeflow kubeflow.org/v1 training jobs (PyTorchJob, TFJob, XGBoostJob, MPIJob, PaddleJob, "
    "JAXJob) on this machine, from the same YAML you would send to a cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
install_plain_help()


# `trainop operator` is `python -m trainop.operator`: it parses its own Go-style flags (§6.4), so typer
# only passes them through.
@app.command(
    "operator",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
)
def operator(ctx: typer.Context) -> None:
    """Run the Kubernetes operator (a drop-in for the Kubeflow Training Operator); --help lists its flags."""
    from trainop.operator.__main__ import main

    gc.enable()  # paused during start-up (trainop/cli/__init__.py); the operator runs for long
    raise typer.Exit(main(list(ctx.args)))


# Shell completion: typer's own per-shell classes answer the scripts `trainop completion SHELL`
# prints. They are registered only when a shell asks (typer's add_completion would register them,
# and add --install-completion, on every start; kubectl's habit is a completion command instead).
_COMPLETE_VAR = "_TRAINOP_COMPLETE"
if _COMPLETE_VAR in os.environ:
    from typer._completion_classes import completion_init

    completion_init()

NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the job.")]
_WHERE = "Where jobs run"
BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="local (this machine; the default) or kubernetes (the cluster of the kubeconfig); "
        "default $TRAINOP_BACKEND.",
        rich_help_panel=_WHERE,
        show_default=False,
    ),
]
KubeconfigOpt = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        help="Kubeconfig file (default $KUBECONFIG, ~/.kube/config); implies --backend kubernetes.",
        rich_help_panel=_WHERE,
        show_default=False,
    ),
]
ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="Kubeconfig context (default its current one); implies --backend kubernetes.",
        rich_help_panel=_WHERE,
        show_default=False,
    ),
]
_JobName = Annotated[
    str, typer.Argument(metavar="NAME", autocompletion=lambda ctx, incomplete: _job_names(ctx, incomplete))
]
# pydantic looks for plugins in every installed distribution's entry points when it builds its first
# model: about 20 ms of every command in a virtualenv that also holds torch, TensorFlow, JAX …, on
# the path from `trainop submit` to the replicas running. trainop uses no pydantic plugin; the
# setting is kept out of the environment that jobs record for their replicas (_user_env).
_PYDANTIC_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"
_plugins_setting_is_ours = False


# ---------------------------------------------------------------------------------------------------
# helpers


def _console(stderr: bool = False) -> Console:
    from rich.console import Console

    console = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console.width = max(console.width, 200)  # piped output: no wrapping of table cells
    return console


def _fail(message: str, code: int) -> NoReturn:
    _console(stderr=True).print(f"[bold red]error:[/] {_escape(message)}")
    raise typer.Exit(code)


def _checked(error: type[Exception], fn: Callable[..., _T], *args: Any, prefix: str = "") -> _T:
    """``fn(*args)``, whose ``error`` is bad input: one line (after ``prefix``), exit 2."""
    try:
        return fn(*args)
    except error as exc:
        _fail(prefix + str(exc), EXIT_INVALID)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _fork_spawner(*args: Any) -> None:
    from trainop.backends.local.spawn import spawn_forked

    spawn_forked(*args)


def _user_env() -> dict[str, str]:
    """The environment the user ran trainop in (what a job records for its replicas)."""
    env = dict(os.environ)
    if _plugins_setting_is_ours:
        env.pop(_PYDANTIC_PLUGINS, None)
    return env


_current: JobClient | None = None  # the command's backend (the not-found hint asks it where else to look)


def _backend(name: str | None = None, kubeconfig: str | None = None, context: str | None = None) -> JobClient:
    """The backend the command's --backend/--kubeconfig/--context (or $TRAINOP_BACKEND) choose; a
    choice that cannot be used is one line and exit 2 (a bad option) or 5 (the cluster)."""
    global _current
    import atexit

    from trainop.backends.base import ClusterError
    from trainop.backends.selection import SelectionError, build_selection, open_job_client

    chosen = _checked(SelectionError, build_selection, name, kubeconfig, context, os.environ)
    try:
        backend = open_job_client(chosen, _user_env(), spawner=_fork_spawner)
    except ClusterError as exc:
        _fail(str(exc), EXIT_BACKEND)
    if chosen.backend == "kubernetes":
        atexit.register(backend.close)  # its connections, and the thread its requests run on
    _current = backend
    # Collection was paused during start-up (trainop/cli/__init__.py). What start-up made lives as long
    # as the process: freeze it (no collector pass ever scans it, none is spent on it now), then
    # collect as usual for what long-running commands (run, logs -f) allocate from here on.
    gc.freeze()
    gc.enable()
    return backend


def _invalid(exc: Exception) -> NoReturn:
    from trainop.api.errors import InvalidJobError

    err = _console(stderr=True)
    if (
        isinstance(exc, InvalidJobError)
        and not exc.kind
        and {e.path for e in exc.errors} == {"metadata.namespace"}
    ):
        # A namespace refused with no manifest about (get, logs, delete … -n ../x): it came from -n.
        for e in exc.errors:
            err.print(f"[bold red]error:[/] {_escape('-n/--namespace: ' + e.message)}")
    elif isinstance(exc, InvalidJobError):
        head = f'{exc.kind} "{exc.name}" is invalid' if exc.kind else "the manifest is invalid"
        err.print(f"[bold red]error:[/] {_escape(head)}:")
        for e in exc.errors:
            err.print(f"  * {_escape(str(e))}")
    else:
        err.print(f"[bold red]error:[/] {_escape(str(exc))}")
    raise typer.Exit(EXIT_INVALID)


_stdin_read: tuple[Any, bytes] | None = None


def _read_stdin(limit: int) -> bytes:
    """Standard input, read once per stream: `run -` looks at the manifest twice (is it a TrainJob?
    then the v1 path), and a second read of a consumed pipe would find nothing."""
    global _stdin_read
    stream = sys.stdin.buffer
    if _stdin_read is None or _stdin_read[0] is not stream:
        _stdin_read = (stream, stream.read(limit))
    return _stdin_read[1]


def _read_manifests(file: Path) -> list[dict[str, Any]]:
    from trainop.api.errors import InvalidJobError
    from trainop.api.load import MAX_MANIFEST_BYTES, load_documents, read_manifest

    # Bytes, not text: api/load decodes them as kubectl does (UTF-8, or UTF-16/32 with a byte-order
    # mark) and refuses a file over the API server's limit before reading all of it.
    try:
        try:
            data = _read_stdin(MAX_MANIFEST_BYTES + 1) if str(file) == "-" else read_manifest(file)
        except OSError as exc:
            _fail(f"cannot read {file}: {exc.strerror or exc}", EXIT_INVALID)
        docs = load_documents(data, source=str(file))
    except InvalidJobError as exc:
        _invalid(exc)
    if not docs:
        _fail(f"{file} holds no job", EXIT_INVALID)
    for d in docs:
        if not isinstance(d, dict):
            _fail(f"{file}: expected a Kubernetes object (a mapping), got {type(d).__name__}", EXIT_INVALID)
    return docs


def _base_dir(file: Path) -> Path:
    return Path.cwd() if str(file) == "-" else file.absolute().parent


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a backend call, turning its typed errors into messages and exit codes."""
    from trainop.api.errors import InvalidJobError
    from trainop.backends.base import (
        AlreadyExistsError,
        BackendError,
        LogsUnavailableError,
        NotFoundError,
        NotSupportedError,
        ReplicaNotFoundError,
        WaitTimeoutError,
    )
    from trainop.backends.local.paths import StateDirError, UnsafePathError

    try:
        return fn(*args, **kwargs)
    except InvalidJobError as exc:  # (a cluster that refused the job too)
        _invalid(exc)
    except (StateDirError, UnsafePathError, NotSupportedError) as exc:
        _fail(str(exc), EXIT_INVALID)  # a bad TRAINOP_HOME (or its disk), an option the backend lacks
    except (AlreadyExistsError, ReplicaNotFoundError, LogsUnavailableError) as exc:
        _fail(str(exc), EXIT_NOT_FOUND)  # (LogsUnavailableError: the cluster serves no logs for a pod)
    except NotFoundError as exc:
        _fail(str(exc) + _found_elsewhere(exc.name, exc.namespace, exc.kind or None), EXIT_NOT_FOUND)
    except WaitTimeoutError as exc:
        _fail(str(exc), EXIT_TIMEOUT)
    except BackendError as exc:  # the backend cannot be used
        _fail(str(exc), EXIT_BACKEND)


def _found_elsewhere(name: str, namespace: str, kind: str | None) -> str:
    """Where a job of that name is, when it is not where the command looked (another namespace or
    kind), as a hint to append to the not-found message."""
    if _current is None:
        return ""
    try:
        rows = [j for j in _current.list_jobs(None) if j.name == name]
    except Exception:  # a hint only: never a second error
        return ""
    same_ns = [r for r in rows if r.namespace == namespace and r.kind != kind]
    if same_ns:
        from trainop.api.kinds import KIND_INFO

        r = same_ns[0]
        return f"; it is a {r.kind} (trainop get {KIND_INFO[r.kind].plural} {name})"
    if rows:
        spaces = ", ".join(sorted({r.namespace for r in rows}))
        return f"; there is one in namespace {spaces} (add -n {rows[0].namespace})"
    return ""


def _kind_arg(text: str) -> str | None:
    """``pytorchjobs``, ``pytorchjob``, ``PyTorchJob`` → ``PyTorchJob``; None when not a kind."""
    from trainop.api.kinds import KIND_INFO

    low = text.lower()
    for kind, info in KIND_INFO.items():
        if low in (kind.lower(), info.plural, f"{info.plural}.kubeflow.org", f"{kind.lower()}.kubeflow.org"):
            return kind
    return None


def _dump(objs: Any, output: str) -> None:
    if output == "json":
        typer.echo(json.dumps(objs, indent=2))
        return
    import yaml

    dump = yaml.safe_dump_all if isinstance(objs, list) else yaml.safe_dump
    typer.echo(dump(objs, sort_keys=False), nl=False)


def _check_output(output: str | None, allowed: tuple[str, ...]) -> None:
    if output is not None and output not in allowed:
        _fail(f'unknown output format "{output}"; use one of: {", ".join(allowed)}', EXIT_INVALID)


def _kind_plurals() -> list[str]:
    from trainop.api.kinds import KIND_INFO

    return [info.plural for info in KIND_INFO.values()]


def _job_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of a job name: the jobs of the namespace typed so far (-n)."""
    return _complete(ctx, incomplete, lambda backend, params, ns: backend.known_names(ns))


def _replica_names(ctx: typer.Context, incomplete: str) -> list[str]:
    """Shell completion of a replica (``logs NAME -r <TAB>``): the named job's, as its pods name them
    (``worker-1`` of pod ``NAME-worker-1``). While an option waits for its value click leaves the
    command's arguments unparsed, in ``ctx.args``: the job's name is the first of them."""

    def replicas(backend: JobClient, params: dict[str, Any], namespace: str) -> list[str]:
        words = [w for w in ctx.args if not w.startswith("-")]
        name = str(params.get("name") or (words[0] if words else ""))
        prefix = f"{name}-"
        pods = [str((p.get("metadata") or {}).get("name") or "") for p in backend.pods(name, namespace)]
        return [p.removeprefix(prefix) for p in pods if name and p.startswith(prefix)]

    return _complete(ctx, incomplete, replicas)


def _complete(ctx: typer.Context, incomplete: str, answer: Any) -> list[str]:
    """The words ``answer(backend, params, namespace)`` gives that start with ``incomplete``, on the
    backend the command line chose so far; never an error (a completion that fails prints nothing),
    never a home created for it."""
    try:
        params = ctx.params if ctx else {}
        from trainop.backends.selection import build_selection, open_job_client

        chosen = build_selection(
            params.get("backend") or params.get("backend_name"),
            params.get("kubeconfig"),
            params.get("context"),
            os.environ,
        )
        backend = open_job_client(chosen, os.environ)
        try:
            words: list[str] = answer(backend, params, params.get("namespace") or "default")
        finally:
            backend.close()
        return sorted(w for w in words if w.startswith(incomplete))
    except Exception:
        return []


# ---------------------------------------------------------------------------------------------------
# commands


def _print_version(value: bool) -> None:
    if value:
        from trainop import __version__

        typer.echo(f"trainop {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """Runs before every command, before any API model is loaded."""
    global _plugins_setting_is_ours
    if ctx.invoked_subcommand != "run":  # (run replaces start-up's stop handlers with its own)
        from trainop.cli import restore_stop_signals

        restore_stop_signals()
    if _PYDANTIC_PLUGINS not in os.environ:
        os.environ[_PYDANTIC_PLUGINS] = "__all__"
        _plugins_setting_is_ours = True


_FAIL_FAST_HELP = (
    "Fail the job at its first replica failure, whatever its restart policies say (the failure rule "
    "trainop.dev/failure-policy: FailJob; docs/sdk.md)."
)


def _with_fail_fast(manifest: dict[str, Any], fail_fast: bool) -> dict[str, Any]:
    """The manifest with the fail-fast rule (as the SDK's ``create_job(fail_fast=True)``), unless it
    has failure rules of its own."""
    if not fail_fast or not isinstance(manifest.get("metadata"), dict | None):
        return manifest
    from trainop.api.constants import ANNOTATION_FAILURE_POLICY
    from trainop.sdk.client import FAIL_FAST_POLICY

    meta = dict(manifest.get("metadata") or {})
    meta["annotations"] = {ANNOTATION_FAILURE_POLICY: FAIL_FAST_POLICY, **(meta.get("annotations") or {})}
    return {**manifest, "metadata": meta}


@app.command()
def submit(
    file: Annotated[
        Path, typer.Argument(help="Job manifest (YAML or JSON; several documents allowed; - for stdin).")
    ],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Override metadata.namespace.")
    ] = None,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help=_FAIL_FAST_HELP)] = False,
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Submit job(s) and return at once; each keeps running under its own supervisor (on a cluster:
    the operator's)."""
    target = _backend(backend, kubeconfig, context)
    manifests = [_with_fail_fast(m, fail_fast) for m in _read_manifests(file)]
    if len(manifests) > 1:  # validate all first, so a bad second document does not leave half a submit
        for m in manifests:
            _call(target.prepare, m)
    for m in manifests:  # (submit validates each one itself)
        job = _call(target.submit, m, base_dir=_base_dir(file), namespace=namespace)
        typer.echo(f"{job.kind.lower()}.kubeflow.org/{job.name} created")
        _print_warnings(job)


_SCRIPT = "Run a command without YAML (torchrun and TorchX flags)"


def _script_option(*names: str, help: str) -> Any:
    return typer.Option(*names, help=help, rich_help_panel=_SCRIPT)


class _RunCommand(TyperCommand):
    """``run`` reads its argv as torchrun does (cli/script_job.py ``split_run_argv``): torchrun's
    spellings, its flags run handles itself (kept in ``ctx.meta``), and a script's own options after
    its path."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from trainop.cli.script_job import ScriptJobError, split_run_argv

        options = {
            name: not getattr(p, "is_flag", False)
            for p in self.params
            if getattr(p, "param_type_name", "") == "option"
            for name in (*p.opts, *p.secondary_opts)
        }
        split = _checked(ScriptJobError, split_run_argv, args, options, lambda arg: _is_command([arg]))
        ctx.meta[_TORCHRUN_META] = split
        return super().parse_args(ctx, split.argv)


_TORCHRUN_META = "trainop.torchrun"


@app.command(cls=_RunCommand)
def run(
    ctx: typer.Context,
    args: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="FILE | -- COMMAND",
            help="A job manifest (one job; - for stdin), or a command to run as a PyTorchJob "
            "(train.py …, or after --: python train.py --lr 0.1).",
            show_default=False,
        ),
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Override metadata.namespace.")
    ] = None,
    logs: Annotated[bool, typer.Option("--logs/--no-logs", help="Stream the replicas' output.")] = True,
    nnodes: Annotated[
        str | None,
        _script_option(
            help="Nodes (pods), the Master included, as torchrun counts (N, or MIN:MAX with MIN = MAX)."
        ),
    ] = None,
    workers: Annotated[
        int | None, _script_option(help="Workers besides the Master (PyTorchJob's Worker replicas).")
    ] = None,
    nproc_per_node: Annotated[
        str | None,
        _script_option(
            "--nproc-per-node",
            help="Processes per node (a count, auto, cpu or gpu); over 1, a Python command runs under "
            "torchrun.",
        ),
    ] = None,
    j: Annotated[str | None, _script_option("-j", help="TorchX's NNODESxNPROC_PER_NODE, e.g. 2x4.")] = None,
    name: Annotated[
        str | None, _script_option(help="The job's name (default: the script's, with a random suffix).")
    ] = None,
    image: Annotated[str | None, _script_option(help="Container image, for a cluster (unused here).")] = None,
    env: Annotated[
        list[str] | None, _script_option("--env", "-e", help="NAME=VALUE for every replica (repeatable).")
    ] = None,
    gpu: Annotated[int, _script_option(help="GPUs per node (nvidia.com/gpu limit).")] = 0,
    max_restarts: Annotated[
        int,
        _script_option(
            help="torchrun's: restart the whole job (every node) on any failure, at most this many "
            "times (0: fail at once)."
        ),
    ] = 0,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the job's YAML instead of running it (kubectl apply -f takes it)."
        ),
    ] = False,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help=_FAIL_FAST_HELP)] = False,
    rm: Annotated[
        bool,
        typer.Option(
            "--rm",
            help="Delete the job (its record, state and logs) once it has ended and its output was "
            "printed, as docker run --rm; the exit code stays the job's.",
        ),
    ] = False,
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Submit a job, stream its logs prefixed by replica, show its status; exit 0 on Succeeded, 1 on
    Failed. Ctrl-C, SIGTERM or SIGHUP stops the replicas (SIGTERM, then SIGKILL after the grace
    period; twice: at once) and keeps the job, marked interrupted, with its logs (trainop logs,
    resume, delete); so does run's end by any other way (its supervisor notices).

    Without YAML: trainop run --nnodes 2 --nproc-per-node 2 train.py --lr 0.1 (torchrun's flags and
    spellings; docs/cli.md lists each)."""
    from trainop.cli.stop_signals import Interrupted, StopSignals, compute_exit_code, describe_signal

    # Installed first: from here to the exit a stop signal is never the default (dying on the spot),
    # also while the manifest is read (stdin may be a pipe that has not been written yet).
    signals = StopSignals.install()
    try:
        # a Trainer v2 TrainJob: runs and exits (its run takes a stop signal's KeyboardInterrupt and
        # stops its pods)
        where = (backend, kubeconfig, context)
        _run_trainjob_file(args, namespace, dry_run, where)
        script = (nnodes, workers, nproc_per_node, j, name, image, env, gpu, max_restarts)
        prepared = _prepare_run(_torchrun_meta(ctx), args or [], namespace, dry_run, fail_fast, where, script)
        if prepared is None:
            return  # --dry-run
        target, manifest, base_dir, announce = prepared
        job = _submit_attached(target, signals, manifest, base_dir, namespace)
    except Interrupted as exc:  # before the job existed: nothing to stop
        _say(
            _console(stderr=True),
            f"interrupted by {describe_signal(exc.signum)} before the job was submitted",
        )
        raise typer.Exit(compute_exit_code(exc.signum)) from None
    code = _watch(target, job, stream_logs=logs, signals=signals, announce=announce, keep=not rm)
    if rm:
        _remove(target, job)
    raise typer.Exit(code)


def _remove(backend: JobClient, job: TrainingJob) -> None:
    """run --rm's delete once the job has ended (or was stopped): nothing of it is kept. A failure to
    delete is said, and run's exit code stays the job's."""
    from trainop.backends.base import BackendError, NotFoundError

    try:
        backend.delete(job.name, job.namespace, wait=True)
    except NotFoundError:
        pass  # deleted elsewhere meanwhile
    except BackendError as exc:
        _say(_console(stderr=True), f"--rm: {job.kind} {job.name} was not deleted: {exc}")


@app.command()
def convert(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A kubeflow.org/v1 job manifest (- for stdin).")
    ],
) -> None:
    """Print a PyTorchJob, MPIJob, JAXJob or XGBoostJob as a Kubeflow Trainer v2 TrainJob on the
    matching runtime (torch-, deepspeed-, jax-, xgboost-distributed); what has no TrainJob field is
    listed on stderr. TFJob and PaddleJob have no v2 runtime. docs/v1-to-v2.md has the mapping."""
    from trainop.api.errors import InvalidJobError
    from trainop.cli.trainjob_cmd import convert_file
    from trainop.core.convert import NoTrainJobEquivalentError

    docs = _read_manifests(Path(file))
    try:
        jobs, notes = convert_file(docs)
    except InvalidJobError as exc:
        _invalid(exc)
    except NoTrainJobEquivalentError as exc:
        _fail(str(exc), EXIT_INVALID)
    err = _console(stderr=True)
    for note in notes:
        err.print(f"[yellow]note:[/] {_escape(note)}")
    _dump(jobs if len(jobs) > 1 else jobs[0], "yaml")


def _run_trainjob_file(
    args: list[str] | None, namespace: str | None, dry_run: bool, where: tuple[str | None, ...]
) -> None:
    """A FILE holding a trainer.kubeflow.org TrainJob runs on this machine in the foreground (exit 0
    Complete, 1 Failed; backends/local/trainjob.py), or --dry-run prints the pods and objects it becomes
    on a cluster; the kubernetes backend (--backend, $TRAINOP_BACKEND, --kubeconfig/--context) is
    refused in one line."""
    from trainop.api.trainer_rules import is_trainer_object

    if not args or len(args) != 1 or _is_command(args):
        return
    docs = _read_manifests(Path(args[0]))
    if not any(is_trainer_object(d) for d in docs):
        return
    from trainop.backends.local.trainjob import render_trainjob, run_trainjob_file
    from trainop.backends.selection import ENV_BACKEND, SelectionError, build_selection

    chosen = _checked(SelectionError, build_selection, *where, os.environ)
    if chosen.backend != "local" and not dry_run:
        _fail(
            "trainop run takes TrainJobs on the local backend only (the backend is kubernetes, from "
            f"{'--backend/--kubeconfig/--context' if any(where) else '$' + ENV_BACKEND}): on a "
            f"cluster, apply the file with kubectl apply -f {args[0]} (trainop's operator runs "
            "TrainJobs), or run it here with --backend local",
            EXIT_INVALID,
        )
    if dry_run:
        _dump(_call(render_trainjob, docs), "yaml")
        raise typer.Exit(EXIT_OK)
    raise typer.Exit(
        _call(run_trainjob_file, docs, _base_dir(Path(args[0])), sys.stdout, namespace=namespace)
    )


def _prepare_run(
    torchrun: Any,
    argv: list[str],
    namespace: str | None,
    dry_run: bool,
    fail_fast: bool,
    where: tuple[str | None, ...],
    script: tuple[Any, ...],
) -> tuple[JobClient, dict[str, Any], Path, bool] | None:
    """run's backend, manifest (from FILE, or built from a command; with the fail-fast rule when
    asked), base dir, and whether to announce the job's name (it is generated); None for --dry-run,
    which printed the manifest."""
    if fail_fast and script[-1]:  # (max_restarts)
        _fail(
            "--fail-fast fails the job at its first failure; --max-restarts restarts it: use one",
            EXIT_INVALID,
        )
    if _is_script_run(torchrun, argv, script):
        manifest = _with_fail_fast(_script_manifest(torchrun, argv, namespace, *script), fail_fast)
        if dry_run:
            _dump(manifest, "yaml")
            return None
        # relative paths in the command resolve in the current directory
        return _backend(*where), manifest, Path.cwd(), True
    if len(argv) != 1:
        _fail("run takes one FILE, or a command to run (trainop run --help)", EXIT_INVALID)
    file = Path(argv[0])
    backend = _backend(*where)
    manifests = [_with_fail_fast(m, fail_fast) for m in _read_manifests(file)]
    if len(manifests) != 1:
        _fail(_several_documents(file, manifests), EXIT_INVALID)
    if dry_run:
        _call(backend.prepare, manifests[0])
        _dump(manifests[0], "yaml")
        return None
    announce = not (manifests[0].get("metadata") or {}).get("name")  # named from generateName
    return backend, manifests[0], _base_dir(file), announce


def _is_script_run(torchrun: Any, argv: list[str], script: tuple[Any, ...]) -> bool:
    """A command to run without YAML: a script flag was given (torchrun's included), or argv is a
    command rather than a manifest's path."""
    given = script[:6]  # nnodes, workers, nproc_per_node, j, name, image; then env, gpu, max_restarts
    torchrun_flags = [torchrun.standalone, torchrun.module, torchrun.no_python, torchrun.agent_args]
    return (
        any(v is not None for v in given)
        or any(bool(v) for v in (*script[6:], *torchrun_flags))
        or _is_command(argv)
    )


def _submit_attached(
    backend: JobClient,
    signals: StopSignals,
    manifest: dict[str, Any],
    base_dir: Path,
    namespace: str | None,
) -> TrainingJob:
    """Submit the job attached to this process (its supervisor stops it if run ends without doing
    so). From here signals are only recorded: a signal during the submit is acted on once run knows
    the job, so there is no moment at which the job exists and run would die without stopping it."""
    from trainop.backends.local.attach import build_client

    client = build_client()
    signals.record()
    job: TrainingJob = _call(
        backend.submit, manifest, base_dir=base_dir, namespace=namespace, attached_client=client
    )
    _print_warnings(job)
    return job


def _print_warnings(job: TrainingJob) -> None:
    """The job's admission warnings (a deprecated field, a resource name that looks mistyped) on
    stderr, as kubectl prints an API server's: accepted, but worth saying."""
    from trainop.api.validation import validation_warnings

    err = _console(stderr=True)
    for warning in validation_warnings(job):
        err.print(f"[yellow]Warning:[/] {_escape(warning)}")


def _several_documents(file: Path, manifests: list[dict[str, Any]]) -> str:
    """Why run refuses a file of several documents, and what would take them: submit takes several
    jobs; neither takes what is not a job (a Service, a Pod), which kubectl applies."""
    from trainop.api.kinds import KIND_INFO

    others = sorted({str(m.get("kind") or "?") for m in manifests if m.get("kind") not in KIND_INFO})
    head = f"{file} holds {len(manifests)} documents; run takes one job"
    if others:
        return (
            f"{head}, and {', '.join(others)} {'is not a job' if len(others) == 1 else 'are not jobs'} "
            "trainop runs (kubeflow.org/v1 kinds only: apply the rest with kubectl; on this machine, a "
            "job's replicas reach each other without a Service)"
        )
    return f"{head} (use submit for several)"


def _is_command(argv: list[str]) -> bool:
    """A command rather than a manifest: several words, a .py script, or an executable."""
    import shutil

    if len(argv) != 1:
        return len(argv) > 1
    arg = argv[0]
    if arg == "-" or arg.endswith((".yaml", ".yml", ".json")):
        return False
    return (
        arg.endswith(".py")
        or (os.access(arg, os.X_OK) and not os.path.isdir(arg))
        or ("/" not in arg and shutil.which(arg) is not None)
    )


def _torchrun_meta(ctx: typer.Context) -> Any:
    """The torchrun flags ``_RunCommand`` took out of run's argv."""
    from trainop.cli.script_job import RunArgv

    found = ctx.meta.get(_TORCHRUN_META)
    return found if isinstance(found, RunArgv) else RunArgv([])


def _script_manifest(torchrun: Any, argv: list[str], namespace: str | None, *opts: Any) -> dict[str, Any]:
    from trainop.backends.local.api import build_generated_name
    from trainop.cli.script_job import (
        DEFAULT_IMAGE,
        ScriptJob,
        ScriptJobError,
        build_name_prefix,
        build_script_job,
        check_nproc,
        compute_nnodes,
        parse_env,
    )

    nnodes, workers, nproc, j, name, image, env, gpu, max_restarts = opts
    try:
        if max_restarts < 0:
            raise ScriptJobError(f"--max-restarts {max_restarts}: use 0 or more (as torchrun)")
        n, j_nproc = compute_nnodes(nnodes, workers, j, torchrun.standalone)
        if nproc is not None and j_nproc is not None:
            raise ScriptJobError("-j and --nproc-per-node both say how many processes per node; use one")
        wanted = nproc or j_nproc
        nproc = check_nproc(wanted) if wanted else None
        spec = ScriptJob(
            command=tuple(argv),
            # A name, not generateName: kubectl apply (the --dry-run output's use) needs one.
            name=name or build_generated_name(build_name_prefix(argv)),
            nnodes=n,
            nproc_per_node=nproc,
            image=image or DEFAULT_IMAGE,
            env=parse_env(env or []),
            gpus=gpu,
            max_restarts=max_restarts,
            namespace=namespace,
            module=torchrun.module,
            no_python=torchrun.no_python,
            agent_args=torchrun.agent_args,
        )
        return build_script_job(spec)
    except ScriptJobError as exc:
        _fail(str(exc), EXIT_INVALID)


def _watch(
    backend: JobClient,
    job: TrainingJob,
    *,
    stream_logs: bool,
    signals: StopSignals,
    announce: bool,
    keep: bool = True,
) -> int:
    """Follow the job to its end; a stop signal recorded at any moment before it finished (during the
    submit included) stops it and keeps it (``_interrupted``). The terminal or pipe going away while
    output is written counts as a hang-up: nobody can watch the job any more."""
    from rich.live import Live

    from trainop.backends.base import is_finished
    from trainop.cli.watch import RunView

    console = _console()
    run = _Followed(job)
    live: Live | None = None
    try:
        if announce:
            typer.echo(f"{job.kind.lower()}.kubeflow.org/{job.name} created")  # a generated name: which one
        run.view = RunView(backend.feed(job), job, console, stream_logs=stream_logs, kept=keep)
        live = Live(console=console, refresh_per_second=4, transient=True) if console.is_terminal else None
        _follow(backend, run, run.view, live, signals, stream_logs)
    except OSError as exc:
        if exc.errno not in (errno.EIO, errno.EPIPE):
            raise
        run.lost_output = True
    except Exception:
        if signals.received is None:
            raise
        # A stop signal came and something failed after it (a write to a hung-up terminal): stop the job.
    finally:
        try:
            if live is not None:
                live.stop()
        except OSError:
            run.lost_output = True
    if run.lost_output:
        _silence_output()
    last, view = run.last, run.view
    try:  # (the view stays open for what the replicas print while they are being stopped)
        if not run.gone and not is_finished(last) and (signals.received is not None or run.lost_output):
            return _interrupted(backend, last, signals, view, keep)
        if view is not None:
            for line in view.gone(last) if run.gone else view.ending(last):
                console.print(line)
    except OSError:
        _silence_output()
    finally:
        if view is not None:
            view.close()
    return _run_exit_code(last)


@dataclass
class _Followed:
    """What following a job has seen: the job as last read, whether it was deleted under us, whether
    the terminal went away, and the view printing it."""

    last: TrainingJob
    gone: bool = False
    lost_output: bool = False
    view: RunView | None = None


def _follow(
    backend: JobClient, run: _Followed, view: RunView, live: Any, signals: StopSignals, stream_logs: bool
) -> None:
    """Poll the job and its output until it has finished (and its last lines landed), it is gone, or a
    stop signal came."""
    from trainop.backends.base import NotFoundError, is_finished

    if live is not None:
        live.start()
        view.before_print = lambda: live.update(view.renderable(run.last), refresh=True)
    finish_deadline: float | None = None
    while signals.received is None:
        view.poll(run.last)
        try:
            run.last = backend.get(run.last.name, run.last.namespace)
        except NotFoundError:
            run.gone = True  # deleted under us (elsewhere, or its TTL): say so
            return
        if live is not None:
            live.update(view.renderable(run.last))
        else:
            view.print_status_if_changed(run.last)
        if is_finished(run.last):
            # Let the last lines land: until the job's replicas ended (at most 2 s more).
            finish_deadline = finish_deadline or time.monotonic() + 2.0
            if view.settled() or time.monotonic() >= finish_deadline:
                if stream_logs:
                    view.emit(view.feed.poll_lines())
                return
        time.sleep(0.2)


def _run_exit_code(last: TrainingJob) -> int:
    """0 when the job Succeeded; 1 when it Failed, or was deleted before it finished."""
    from trainop.cli.live import compute_state

    return EXIT_OK if compute_state(last) == "Succeeded" else EXIT_FAILED


def _interrupted(
    backend: JobClient, job: TrainingJob, signals: StopSignals, view: RunView | None, keep: bool = True
) -> int:
    """Stop the job and keep it (cli/interrupt.py): suspended and marked interrupted, its replicas'
    shutdown output streamed, a second stop signal kills them now; 128 + the signal. Were run killed
    anyway, the job's supervisor makes the same stop (backends/local/attach.py)."""
    from trainop.cli.interrupt import stop_and_keep

    err = _console(stderr=True)

    def stream() -> None:
        if view is None:
            return
        try:
            view.poll(job)  # what the replicas print while they shut down
        except OSError:  # the terminal or reader is gone: the replicas still get stopped
            _silence_output()

    return stop_and_keep(backend, job, signals, lambda text: _say(err, text), stream, keep=keep)


def _say(console: Console, text: str) -> None:
    try:
        console.print(_escape(text))
    except OSError:  # the terminal is gone (SIGHUP): stopping the job goes on in silence
        _silence_output()


def _silence_output() -> None:
    """Point stdout and stderr at /dev/null once their terminal or reader is gone, so that no later
    write, nor the interpreter's flush at exit, fails."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            os.dup2(devnull, fd)
    os.close(devnull)


_OUTPUT_HELP = "yaml, json, wide, name or jsonpath=TEMPLATE (kubectl's)."


def _selector(text: str | None) -> Any:
    if text is None:
        return None
    from trainop.cli.selectors import SelectorError, parse_selector

    return _checked(SelectorError, parse_selector, text)


def _output(output: str | None) -> None:
    from trainop.cli.listing import OutputError, check_output

    _checked(OutputError, check_output, output)


def _print_objects(objs: list[dict[str, Any]], output: str, single: bool) -> None:
    from trainop.cli.jsonpath import JsonPathError
    from trainop.cli.listing import render_objects

    typer.echo(_checked(JsonPathError, render_objects, objs, output, single, prefix="jsonpath: "), nl=False)


@app.command()
def get(
    kind_or_name: Annotated[
        str | None,
        typer.Argument(
            metavar="KIND",
            help="A kind (pytorchjobs …), pods (the replicas), or a job name.",
            autocompletion=lambda incomplete: [
                w for w in ("pods", *_kind_plurals()) if w.startswith(incomplete)
            ],
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Argument(metavar="NAME", autocompletion=lambda ctx, incomplete: _job_names(ctx, incomplete)),
    ] = None,
    namespace: NamespaceOpt = "default",
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Jobs of every namespace.")
    ] = False,
    output: Annotated[str | None, typer.Option("--output", "-o", help=_OUTPUT_HELP)] = None,
    selector: Annotated[
        str | None,
        typer.Option(
            "--selector", "-l", help="Labels to match: key=value, key!=value, key, !key, key in (a,b)."
        ),
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", "-w", help="After the list, a row each time one changes (Ctrl-C ends).")
    ] = False,
    backend_name: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """List jobs (NAME, STATE, AGE, REPLICAS), or their replicas with get pods, like kubectl get."""
    from trainop.cli.listing import POD_WORDS
    from trainop.cli.trainjob_cmd import TRAINJOB_WORDS

    _output(output)
    reqs = _selector(selector)
    backend = _backend(backend_name, kubeconfig, context)
    scope = None if all_namespaces else namespace  # (None: every namespace, a NAMESPACE column)
    word = (kind_or_name or "").lower()
    if word in POD_WORDS:
        _get_pods(backend, scope, name, reqs, output, watch)
        return
    if word in TRAINJOB_WORDS:
        found = (
            [_call(backend.get_trainjob, name, namespace)] if name else _call(backend.list_trainjobs, scope)
        )
        _print_trainjobs(found, output, scope, single=name is not None)
        return
    kind = _kind_arg(word) if word else None
    if kind_or_name and kind is None:  # not a kind: a job's name
        if name is not None:
            _fail(
                f'unknown kind "{kind_or_name}"; use one of: {", ".join(_kind_plurals())}, pods', EXIT_INVALID
            )
        name = kind_or_name
        if trainjob := _find_trainjob(backend, name, namespace):
            _print_trainjobs([trainjob], output, scope, single=True)
            return
    _get_jobs(backend, scope, namespace, name, kind, reqs, output, watch)


def _get_jobs(
    backend: JobClient,
    scope: str | None,
    namespace: str,
    name: str | None,
    kind: str | None,
    reqs: Any,
    output: str | None,
    watch: bool,
) -> None:
    """The v1 jobs (of ``kind``, or named ``name``) and, with no kind nor name, the TrainJobs beside them."""
    from trainop.backends.base import NotFoundError
    from trainop.cli.listing import (
        build_job_columns,
        build_job_row,
        compute_display_state,
        job_restarts,
        select_jobs,
    )
    from trainop.cli.trainjob_cmd import build_trainjob_job_row

    def current() -> list[TrainingJob]:
        if name is None:
            return list(_call(select_jobs, backend, scope, kind, reqs))
        try:
            return [backend.get(name, namespace, kind)]
        except NotFoundError:
            return []

    def current_trainjobs() -> list[dict[str, Any]]:
        return _list_trainjobs_too(backend, scope, reqs) if kind is None and name is None else []

    jobs = [_call(backend.get, name, namespace, kind)] if name is not None else current()
    objs = [j.to_dict() for j in jobs] + current_trainjobs()
    if _printed_objects(
        objs, output, name is not None, None if watch else lambda: _no_jobs(backend, kind, scope)
    ):
        return
    wide, all_namespaces = output == "wide", scope is None

    def snapshot() -> dict[tuple[str, str], list[str]]:
        now = time.time()
        rows = {}
        for j in current():
            restarts = None
            if wide:
                try:
                    restarts = job_restarts(backend.pods(j.name, j.namespace))
                except NotFoundError:  # deleted since the list
                    restarts = 0
            rows[(j.namespace, j.name)] = build_job_row(
                j, compute_display_state(j), all_namespaces, kind, restarts, now
            )
        for o in current_trainjobs():  # keyed apart: a v1 job and a TrainJob may share a name
            key = (str(o["metadata"].get("namespace")), f"TrainJob/{o['metadata']['name']}")
            rows[key] = build_trainjob_job_row(o, all_namespaces, wide, now)
        return rows

    _print_and_watch(build_job_columns(all_namespaces, kind, wide), snapshot, watch, "STATE")


def _printed_objects(
    objs: list[dict[str, Any]], output: str | None, single: bool, empty: Callable[[], str] | None
) -> bool:
    """Whether ``objs`` were printed whole (-o yaml, json, name, jsonpath) or, when there are none and
    ``empty`` says why, that was said on stderr: then there is no table to print."""
    if output not in (None, "wide"):
        _print_objects(objs, output, single)
        return True
    if not objs and empty is not None:
        _console(stderr=True).print(_escape(empty()))
        return True
    return False


def _list_trainjobs_too(backend: JobClient, scope: str | None, reqs: Any) -> list[dict[str, Any]]:
    """The TrainJobs `get` without a kind lists beside the v1 jobs: none where the backend serves
    none (a cluster without the TrainJob CRD)."""
    from trainop.backends.base import BackendError
    from trainop.cli.selectors import matches

    try:
        found = backend.list_trainjobs(scope)
    except BackendError:
        return []
    return [o for o in found if reqs is None or matches((o.get("metadata") or {}).get("labels"), reqs)]


def _find_trainjob(backend: JobClient, name: str, namespace: str) -> dict[str, Any] | None:
    """The TrainJob of that name, when no kubeflow.org/v1 job has it and the backend serves one."""
    from trainop.api.errors import InvalidJobError
    from trainop.backends.base import BackendError, NotFoundError

    try:
        backend.get(name, namespace)
        return None
    except NotFoundError:
        pass
    except (BackendError, InvalidJobError):  # (a bad -n: InvalidJobError)
        return None  # the v1 path reports it
    try:
        return backend.get_trainjob(name, namespace)
    except BackendError:
        return None


def _in_scope(scope: str | None) -> str:
    return f"in namespace {scope}" if scope is not None else "in any namespace"


def _print_trainjobs(
    objs: list[dict[str, Any]], output: str | None, scope: str | None, *, single: bool
) -> None:
    from trainop.cli.listing import Table
    from trainop.cli.trainjob_cmd import build_trainjob_rows

    if _printed_objects(
        objs, output, single, lambda: f"No TrainJobs {_in_scope(scope)} (trainop run FILE runs one)."
    ):
        return
    columns, rows = build_trainjob_rows(objs, scope is None, time.time())
    Table(columns, sys.stdout).print_rows(rows, header=True)


def _print_and_watch(columns: list[str], snapshot: Any, watch: bool, state_column: str) -> None:
    from trainop.cli.listing import Table, watch_rows

    table = Table(columns, sys.stdout)
    first = snapshot()
    table.print_rows(list(first.values()), header=True)
    if not watch:
        return
    state_at, age_at = columns.index(state_column), columns.index("AGE")

    def gone(row: list[str]) -> list[str]:
        return [*row[:state_at], "Deleted", *row[state_at + 1 :]]

    try:
        watch_rows(snapshot, table, gone, first, lambda r: r[:age_at] + r[age_at + 1 :])
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _get_pods(
    backend: JobClient, scope: str | None, name: str | None, reqs: Any, output: str | None, watch: bool
) -> None:
    """The replicas as kubectl get pods shows pods: NAME READY STATUS RESTARTS AGE (wide: PID, PORT,
    NODE, JOB). ``name`` is a pod's name or a job's."""
    from trainop.cli.listing import POD_COLUMNS, POD_WIDE, build_pod_cells, list_pods

    found = _call(list_pods, backend, scope, name, reqs)
    what = f" named \"{name}\" (a pod's or a job's name)" if name else ""
    empty = None if watch else lambda: f"No pods{what} {_in_scope(scope)}."
    if _printed_objects([p for _, p, _ in found], output, name is not None and len(found) == 1, empty):
        return
    wide = output == "wide"
    columns = (["NAMESPACE"] if scope is None else []) + POD_COLUMNS + (POD_WIDE if wide else [])

    def snapshot() -> dict[tuple[str, str], list[str]]:
        now = time.time()
        return {
            (j.namespace, p["metadata"]["name"]): ([j.namespace] if scope is None else [])
            + build_pod_cells(j, p, port, wide, now)
            for j, p, port in list_pods(backend, scope, name, reqs)
        }

    _print_and_watch(columns, snapshot, watch, "STATUS")


def _no_jobs(backend: JobClient, kind: str | None, namespace: str | None) -> str:
    """What `get` says when it lists nothing: where it looked, and where the jobs are instead."""
    what, where = f"{kind}s" if kind else "jobs", _in_scope(namespace)
    elsewhere = [j for j in backend.list_jobs(None, kind) if j.namespace != namespace]
    if namespace is not None and elsewhere:
        spaces = ", ".join(sorted({r.namespace for r in elsewhere}))
        return (
            f"No {what} {where}; {len(elsewhere)} in other namespaces ({spaces}): trainop get -A lists them."
        )
    if kind is not None and backend.list_jobs(namespace):
        return f"No {what} {where} (trainop get lists the jobs of every kind)."
    if not backend.list_jobs():
        return (
            f"No jobs in {backend.where()}. "
            "Start one with: trainop run FILE (or trainop submit FILE to return at once)."
        )
    return f"No {what} {where}."


@app.command()
def describe(
    name: _JobName,
    namespace: NamespaceOpt = "default",
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Spec summary, conditions, replica statuses, processes and events of a job."""
    from trainop.cli.describe import print_details
    from trainop.cli.trainjob_cmd import describe_trainjob

    target = _backend(backend, kubeconfig, context)
    trainjob = _find_trainjob(target, name, namespace)
    if trainjob is not None:
        pods = _call(target.trainjob_pods, name, namespace)
        for line in describe_trainjob(trainjob, pods):
            typer.echo(line)
        return
    details = _call(target.describe, name, namespace)
    print_details(_console(), details)


@app.command()
def logs(
    name: _JobName,
    replica: Annotated[
        str | None,
        typer.Option(
            "--replica",
            "-r",
            help="One replica, e.g. worker-1 (default: all).",
            autocompletion=lambda ctx, incomplete: _replica_names(ctx, incomplete),
        ),
    ] = None,
    container: Annotated[
        str | None, typer.Option("--container", "-c", help="One container of the pod.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep streaming until the job ends.")
    ] = False,
    previous: Annotated[
        bool, typer.Option("--previous", "-p", help="The attempt before the current one.")
    ] = False,
    tail: Annotated[
        int | None, typer.Option("--tail", help="Only the last N lines of each container (then -f goes on).")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", help="Only attempts alive in the last DURATION (e.g. 10m): runs, not lines."),
    ] = None,
    timestamps: Annotated[
        bool,
        typer.Option(
            "--timestamps", help="With -f: stamp each new line as it arrives (RFC 3339, as kubectl)."
        ),
    ] = False,
    raw: Annotated[
        bool,
        typer.Option(
            "--raw",
            help="The bytes as written (\\r and escape codes kept); default: each line as a terminal "
            "shows it, a progress bar's last frame (as run shows it).",
        ),
    ] = False,
    namespace: NamespaceOpt = "default",
    backend_name: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Print a job's logs (all replicas prefixed, or one replica as is)."""
    from trainop.cli.logview import LineFilter, compute_attempts_since, count_lines, format_stamp
    from trainop.cli.watch import default_containers

    tail, cutoff = _logs_window(tail, since, timestamps, follow)
    backend = _backend(backend_name, kubeconfig, context)
    if _find_trainjob(backend, name, namespace) is not None:  # its pods' lines, ``node-0-1 | …``
        if previous:
            _fail(
                f"no previous attempt for {replica or name}: a TrainJob's pods run once here", EXIT_NOT_FOUND
            )
        if since is not None:
            _fail(
                "--since cannot pick a TrainJob's lines: its pods run once and their logs have no "
                "timestamps (use --tail)",
                EXIT_INVALID,
            )
        printer = _LogPrinter(replica, {"node"}, raw)
        backlog = _call(list, _call(backend.trainjob_logs, name, namespace, replica=replica))
        chooser = LineFilter(count_lines(backlog), tail, None)
        lines = _call(backend.trainjob_logs, name, namespace, replica=replica, follow=follow)
    else:
        printer = _LogPrinter(replica, default_containers(_call(backend.get, name, namespace)), raw)
        backlog = _call(
            list,
            _call(backend.logs, name, namespace, replica=replica, container=container, previous=previous),
        )
        attempts = (
            None
            if cutoff is None
            else compute_attempts_since(_call(backend.runs, name, namespace), name, cutoff)
        )
        chooser = LineFilter(count_lines(backlog), tail, attempts)
        lines = _call(
            backend.logs,
            name,
            namespace,
            replica=replica,
            container=container,
            follow=follow,
            previous=previous,
        )
    try:
        printed = False
        for line in _call(list, lines) if not follow else lines:
            printed = True
            show, old = chooser.accept(line)
            if show:
                printer.print(
                    line, "" if not timestamps else ("-" if old else format_stamp(time.time())) + " "
                )
        if not printed and previous:
            _fail(
                f"no previous attempt for {replica or name}: the container has not restarted", EXIT_NOT_FOUND
            )
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _logs_window(
    tail: int | None, since: str | None, timestamps: bool, follow: bool
) -> tuple[int | None, float | None]:
    """``logs``' --tail (-1, kubectl's: everything) and --since as the time a run must outlive, checked."""
    if timestamps and not follow:
        _fail(
            "--timestamps needs -f: the local backend does not record when a past line was written (replicas "
            "write straight to their log files); with -f each new line is stamped as it arrives",
            EXIT_INVALID,
        )
    cutoff = None if since is None else time.time() - _checked(DurationError, parse_duration, since)
    return (None if tail is not None and tail < 0 else tail), cutoff


class _LogPrinter:
    """How ``logs`` prints a line: as is for one replica; else behind its replica's label (and its
    container's name, unless the kind's default container), colored per label unless ``raw``."""

    def __init__(self, replica: str | None, defaults: set[str], raw: bool) -> None:
        self.replica, self.defaults, self.raw = replica, defaults, raw
        self.console, self.colors = _console(), dict[str, str]()

    def print(self, line: Any, stamp: str) -> None:
        from rich.text import Text

        from trainop.cli.lines import prefix_label, render_line
        from trainop.cli.watch import PALETTE

        text = line.text if self.raw else render_line(line.text)
        label = prefix_label(line.replica, line.container, self.defaults)
        if self.replica is not None:
            typer.echo(stamp + text)
        elif self.raw:  # (rich would turn each \r into a new line)
            typer.echo(f"{stamp}{label} | {text}")
        else:
            color = self.colors.setdefault(label, PALETTE[len(self.colors) % len(PALETTE)])
            self.console.print(Text.assemble(stamp, (f"{label} | ", color), text))


@app.command()
def delete(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="NAME",
            help="Jobs to delete (a kind first is allowed, as kubectl: pytorchjob NAME).",
            autocompletion=lambda ctx, incomplete: _job_names(ctx, incomplete),
            show_default=False,
        ),
    ] = None,
    namespace: NamespaceOpt = "default",
    all_jobs: Annotated[bool, typer.Option("--all", help="Every job of the namespace (or of KIND).")] = False,
    selector: Annotated[
        str | None, typer.Option("--selector", "-l", help="The jobs whose labels match (as get -l).")
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--filename", "-f", help="The jobs a manifest names (- for stdin).")
    ] = None,
    grace_period: Annotated[
        float | None,
        typer.Option("--grace-period", help="Seconds between SIGTERM and SIGKILL (default: the pod's)."),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Return once every process is gone.")] = True,
    ignore_not_found: Annotated[
        bool, typer.Option("--ignore-not-found", help="A job that is not there is not an error (kubectl's).")
    ] = False,
    backend_name: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Delete jobs: SIGTERM to every replica, SIGKILL after terminationGracePeriodSeconds; state and logs go.
    A name that is not found does not stop the others (exit 3 at the end, as kubectl)."""
    from trainop.cli.trainjob_cmd import TRAINJOB_WORDS

    args = list(names or [])
    kind = _kind_arg(args[0]) if args else None
    trainjobs = bool(args) and args[0].lower() in TRAINJOB_WORDS
    if kind is not None or trainjobs:
        args = args[1:]
    ways = [w for w, given in (("NAME", args), ("--all", all_jobs), ("-l", selector), ("-f", file)) if given]
    if len(ways) != 1:
        _fail(
            "say which jobs: NAME..., --all, -l SELECTOR or -f FILE"
            + (f" (one of them, not {' and '.join(ways)})" if ways else ""),
            EXIT_INVALID,
        )
    backend = _backend(backend_name, kubeconfig, context)
    targets = [(n, namespace, kind) for n in args]  # (name, namespace, kind)
    if file is not None:
        targets += _file_targets(file, namespace)
    elif all_jobs or selector is not None:
        targets += _selected_targets(backend, namespace, kind, selector)
    codes = [
        _delete_one(backend, name, ns, k, trainjobs, grace_period, wait, ignore_not_found)
        for name, ns, k in targets
    ]
    raise typer.Exit(next((c for c in reversed(codes) if c != EXIT_OK), EXIT_OK))


def _file_targets(file: Path, namespace: str) -> list[tuple[str, str, str | None]]:
    """(name, namespace, kind) of each job a manifest names."""
    targets = []
    for m in _read_manifests(file):
        meta: dict[str, Any] = m["metadata"] if isinstance(m.get("metadata"), dict) else {}
        if not meta.get("name"):
            _fail(f"{file}: a job without metadata.name cannot be deleted by file", EXIT_INVALID)
        targets.append(
            (str(meta["name"]), str(meta.get("namespace") or namespace), _kind_arg(str(m.get("kind"))))
        )
    return targets


def _selected_targets(
    backend: JobClient, namespace: str, kind: str | None, selector: str | None
) -> list[tuple[str, str, str | None]]:
    """(name, namespace, kind) of every job of the namespace (of ``kind``) that ``selector`` matches."""
    from trainop.cli.listing import select_jobs

    chosen = _call(select_jobs, backend, namespace, kind, _selector(selector))
    if not chosen:
        typer.echo("No resources found", err=True)
    return [(j.name, j.namespace, j.kind) for j in chosen]


def _delete_one(
    backend: JobClient,
    name: str,
    namespace: str,
    kind: str | None,
    trainjob: bool,
    grace: float | None,
    wait: bool,
    ignore_not_found: bool,
) -> int:
    """Delete one job, a TrainJob where no kind is given and ``trainjob`` (the command said so) or one of
    that name exists; its exit code."""
    is_trainjob = kind is None and (trainjob or _find_trainjob(backend, name, namespace) is not None)
    try:
        if is_trainjob:
            _call(backend.delete_trainjob, name, namespace, grace=grace)
            typer.echo(f"trainjob.trainer.kubeflow.org/{name} deleted")
        elif not ignore_not_found or _exists(backend, name, namespace, kind):
            job = _call(backend.get, name, namespace, kind)
            _call(backend.delete, name, namespace, wait=wait, grace=grace)
            typer.echo(f"{job.kind.lower()}.kubeflow.org/{name} deleted")
    except typer.Exit as exc:
        return int(exc.exit_code)
    return EXIT_OK


def _exists(backend: JobClient, name: str, namespace: str, kind: str | None) -> bool:
    from trainop.backends.base import NotFoundError

    try:
        backend.get(name, namespace, kind)
    except NotFoundError:
        return False
    except Exception:  # any other problem: the delete that follows says it
        return True
    return True


@app.command()
def wait(
    name: _JobName,
    for_: Annotated[
        str, typer.Option("--for", help="Condition to wait for: Succeeded, Failed, Running, Suspended …")
    ] = "Succeeded",
    timeout: Annotated[str, typer.Option("--timeout", help="e.g. 30s, 10m, 1h.")] = "30m",
    namespace: NamespaceOpt = "default",
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Wait for a condition; exit 0 when reached, 1 if the job finished otherwise, 4 on timeout."""
    from trainop.api.constants import CONDITION_TYPES
    from trainop.backends.base import detect_state

    wanted = for_.removeprefix("condition=")
    match = next((c for c in CONDITION_TYPES if c.lower() == wanted.lower()), None)
    if match is None:
        _fail(f'unknown condition "{for_}"; use one of: {", ".join(CONDITION_TYPES)}', EXIT_INVALID)
    seconds = _checked(DurationError, parse_duration, timeout)
    job = _call(_backend(backend, kubeconfig, context).wait, name, [match], namespace, seconds)
    conds = (job.status.conditions if job.status else None) or []
    if any(c.type == match and c.status == "True" for c in conds):
        typer.echo(f"{job.kind.lower()}.kubeflow.org/{name} condition met: {match}")
        return
    _fail(f"{job.kind} {name} is {detect_state(job)}, it will not become {match}", EXIT_FAILED)


@app.command()
def render(
    file: Annotated[Path, typer.Argument(help="Job manifest (- for stdin).")],
    backend_name: Annotated[str, typer.Option("--backend", "-b", help="local or kubernetes.")] = "local",
    output: Annotated[str, typer.Option("--output", "-o", help="yaml or json.")] = "yaml",
    namespace: Annotated[str | None, typer.Option("--namespace", "-n")] = None,
) -> None:
    """Dry run: print the pods (with their env), Services and other objects the core would create."""
    _check_output(output, ("yaml", "json"))
    if backend_name not in ("local", "kubernetes"):
        _fail(f'unknown backend "{backend_name}"; use local or kubernetes', EXIT_INVALID)
    from trainop.backends.local.api import render_objects

    out: list[dict[str, Any]] = []
    for m in _read_manifests(file):
        out.extend(_call(render_objects, m, backend_name, namespace, _user_env()))
    _dump(out if output == "yaml" else {"apiVersion": "v1", "kind": "List", "items": out}, output)


@app.command()
def suspend(
    name: _JobName,
    namespace: NamespaceOpt = "default",
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Suspend a job (runPolicy.suspend=true): its replicas are stopped until resume."""
    _set_suspend(_backend(backend, kubeconfig, context), name, namespace, True)


@app.command()
def resume(
    name: _JobName,
    namespace: NamespaceOpt = "default",
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Resume a suspended job: its replicas start again."""
    _set_suspend(_backend(backend, kubeconfig, context), name, namespace, False)


def _set_suspend(target: JobClient, name: str, namespace: str, suspend: bool) -> None:
    """A finished job has nothing to suspend or resume (the operator ignores runPolicy.suspend once a
    job Succeeded or Failed): say so rather than report a change that does nothing."""
    from trainop.backends.base import is_finished
    from trainop.cli.live import compute_state

    verb, done = ("suspend", "suspended") if suspend else ("resume", "resumed")
    job = _call(target.get, name, namespace)
    if is_finished(job):
        typer.echo(
            f"{job.kind.lower()}.kubeflow.org/{name} unchanged: it already {compute_state(job)}, so there "
            f"is nothing to {verb} (submit it again to run it again)"
        )
        return
    job = _call(target.set_suspend, name, suspend, namespace)
    typer.echo(f"{job.kind.lower()}.kubeflow.org/{name} {done}")


@app.command()
def ui(
    address: Annotated[
        str,
        typer.Option("--address", help="Address to listen on; another than 127.0.0.1 serves other machines."),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = 8470,
    backend: BackendOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Serve a live web view of the jobs (list, replicas, logs, progress) and print its URL, which
    carries this session's token; opens nothing else. Ctrl-C stops it."""
    target = _backend(backend, kubeconfig, context)
    from trainop.ui.server import serve
    from trainop.ui.source import Source

    try:
        serve(
            Source(target), address, port, lambda url: typer.echo(f"trainop ui for {target.where()}: {url}")
        )
    except OSError as exc:
        _fail(
            f"cannot listen on {address}:{port}: {exc.strerror or exc}; "
            "choose another --port (0: any free one) or --address",
            EXIT_INVALID,
        )
    except KeyboardInterrupt:
        pass


@app.command()
def completion(
    shell: Annotated[
        str,
        typer.Argument(
            metavar="SHELL",
            help="bash, zsh or fish.",
            autocompletion=lambda incomplete: [
                x for x in ("bash", "zsh", "fish") if x.startswith(incomplete)
            ],
        ),
    ],
) -> None:
    """Print the shell completion script, as kubectl completion does: e.g. source <(trainop completion
    bash) in ~/.bashrc; trainop completion fish > ~/.config/fish/completions/trainop.fish."""
    if shell not in ("bash", "zsh", "fish"):
        _fail(f'unknown shell "{shell}"; use bash, zsh or fish', EXIT_INVALID)
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name="trainop", complete_var=_COMPLETE_VAR, shell=shell))


def main() -> None:  # pragma: no cover - console entry for ``python -m trainop.cli.main``
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
