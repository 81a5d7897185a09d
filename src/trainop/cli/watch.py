"""``trainop run``'s view of a running job (I/O adapter over ``live`` and ``lines``): replica output
prefixed per replica (a partial ``\\r`` line updates in place inside the live status on a TTY), the
status lines, crash-loop notices, and the ending (failure summary, replicas left running, a job
deleted elsewhere). It reads through the backend's ``JobFeed`` (the same on this machine and on a
cluster); it never changes a job.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group
from rich.padding import Padding
from rich.text import Text

from trainop.cli import live
from trainop.cli.lines import prefix_label, render_line

if TYPE_CHECKING:
    from trainop.api.common import TrainingJob
    from trainop.backends.base import JobFeed, LogLine

PALETTE = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan", "bright_magenta")
STATE_STYLES = {
    "Succeeded": "bold green",
    "Failed": "bold red",
    "Running": "bold cyan",
    "Suspended": "yellow",
}


def build_tail(raw: Sequence[str], n: int | None = live.TAIL_LINES) -> list[str]:
    """The last ``n`` (None: all) non-blank lines of a replica's output, as a terminal would show them."""
    lines = [t for t in (render_line(t) for t in raw) if t.strip()]
    return lines if n is None else lines[-n:]


def _wrapped(line: Text) -> Text | Padding:
    """A status line as the live status shows it: an indented one (why a replica waits: a scheduler's
    message that may run to several hundred characters, its fix at the end) wraps at the terminal's
    width under its own indent. The console soft-wraps, which in a live display crops each line at the
    width, cutting such a message before the part that says what to do."""
    indent = len(line.plain) - len(line.plain.lstrip(" "))
    if not indent:
        return line
    body = line[indent:]
    body.no_wrap, body.overflow = False, "fold"
    return Padding(body, (0, 0, 0, indent), expand=False)


def default_containers(job: TrainingJob) -> set[str]:
    from trainop.api.kinds import KIND_INFO

    names = {KIND_INFO[job.kind].default_container}
    for rs in job.replica_specs.values():
        cs = rs.containers
        if cs and isinstance(cs[0], dict):
            names.add(str(cs[0].get("name")))
    return names


class RunView:
    """One ``run``'s output: call ``poll`` each tick, ``renderable`` for the live region (a TTY),
    ``changed_status`` for a log file, and ``ending`` or ``gone`` once."""

    def __init__(
        self, feed: JobFeed, job: TrainingJob, console: Console, *, stream_logs: bool, kept: bool = True
    ) -> None:
        self.feed, self.name, self.console = feed, job.name, console
        self.stream_logs = stream_logs
        self.started = time.monotonic()
        self.colors: dict[str, str] = {}
        self.width = 0
        self.noticed: frozenset[str] = frozenset()
        self.pods: list[dict[str, Any]] = []
        self.printed_status: list[str] = []
        self.defaults: set[str] = set()
        self.flags = f" -n {job.namespace}" if job.namespace != "default" else ""
        # run --rm deletes the job once this view has ended: no pointer to commands that read it.
        self.kept = kept
        # Called before lines are printed under a live status (a TTY): rich redraws, under each print,
        # the frame of its last refresh, which may still hold a bar's unfinished state; the hook
        # refreshes it first, so a finished line never shows its old state below it.
        self.before_print: Callable[[], None] | None = None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def _label(self, replica: str, container: str) -> str:
        label = prefix_label(replica, container, self.defaults)
        if label not in self.colors:
            self.colors[label] = PALETTE[len(self.colors) % len(PALETTE)]
        self.width = max(self.width, len(label))
        return label

    def _prefixed(self, label: str, text: str) -> Text:
        return Text.assemble((f"{label:<{self.width}} | ", self.colors[label]), text)

    def emit(self, lines: Iterable[LogLine]) -> None:
        batch = list(lines)  # read first: the partial lines the refresh shows are then current
        if batch and self.before_print is not None:
            self.before_print()
        for line in batch:
            label = self._label(line.replica, line.container)
            self.console.print(self._prefixed(label, render_line(line.text)))

    def poll(self, job: TrainingJob) -> None:
        """New output, then the pods as they are now, and a notice for each replica's first restart."""
        self.defaults = default_containers(job)
        if self.stream_logs:
            self.emit(self.feed.poll_lines())
            for note in self.feed.notes():
                self.console.print(Text(note, style="yellow"))
        self.pods = self.feed.pods()
        views = live.build_replica_views(job, self.pods, time.time())
        fresh = live.detect_first_restarts(self.noticed, views)
        if not fresh:
            return
        self.noticed |= {v.label for v in fresh}
        tails = self._tails({v.label for v in fresh})
        policies = {p["metadata"]["name"]: (p.get("spec") or {}).get("restartPolicy", "") for p in self.pods}
        for v in fresh:
            policy = str(policies.get(f"{job.name}-{v.label}", ""))
            head, *tail = live.build_restart_notice(v, policy, tails.get(v.label, []))
            # One print: under a live status each print redraws it, which would split the notice.
            self.console.print(Text.assemble((head, "bold yellow"), *(("\n" + t) for t in tail)))

    def _partials(self) -> list[Text]:
        """The replicas' unfinished lines (a progress bar between two ``\\r``), as they look now."""
        out = []
        for line in self.feed.partial_lines():
            text = render_line(line.text)
            if text.strip():
                label = self._label(line.replica, line.container)
                t = self._prefixed(label, text)
                t.no_wrap, t.overflow = True, "ellipsis"
                out.append(t)
        return out

    def _status(self, job: TrainingJob, now: float | None) -> list[Text]:
        lines = live.build_status_lines(job, self.pods, self.elapsed, now)
        state = live.compute_state(job)
        head = Text(lines[0], style="bold")
        head.highlight_words([f": {state}"], STATE_STYLES.get(state, "bold"))
        return [head, *(Text(t, style="dim" if t.startswith("    ") else "") for t in lines[1:])]

    def renderable(self, job: TrainingJob) -> Group:
        return Group(*self._partials(), *(_wrapped(t) for t in self._status(job, time.time())))

    def print_status_if_changed(self, job: TrainingJob) -> None:
        """Without a TTY: the status block whenever it changes (ignoring the clock)."""
        lines = self._status(job, None)
        key = [lines[0].plain.rsplit("  ", 1)[0], *(t.plain for t in lines[1:])]
        if key != self.printed_status:
            self.printed_status = key
            for t in lines:
                self.console.print(t)

    def close(self) -> None:
        self.feed.close()

    # ---- endings ----

    def _tails(
        self, labels: set[str], *, final: bool = False, n: int | None = live.TAIL_LINES
    ) -> dict[str, list[str] | None]:
        """Each replica's last lines, from its latest finished run: a restart notice's run, or the
        failed run the ending names (its crash loop may have started it again since)."""
        raw = self.feed.tails(labels, self.defaults, finished_only=True, final=final)
        return {label: None if lines is None else build_tail(lines, n) for label, lines in raw.items()}

    def settled(self) -> bool:
        """No replica runs, by its processes (or containers) and by the pods last polled: the status
        just shown is the job's last (a pod's phase follows its process's end by a moment)."""
        pods_running = any((p.get("status") or {}).get("phase") == "Running" for p in self.pods)
        return not pods_running and not self.feed.running_replicas()

    def ending(self, job: TrainingJob) -> list[Text]:
        """``PyTorchJob x Failed after 3.1s`` and, unless it succeeded, what failed and where to look;
        then replicas left running, if any."""
        state = live.compute_state(job)
        out = [
            Text.assemble(
                (f"{job.kind} {job.name} ", "bold"),
                (state, STATE_STYLES.get(state, "bold")),
                f" after {self.elapsed:.1f}s",
            )
        ]
        views = live.build_replica_views(job, self.feed.pods(), None)
        if state != "Succeeded":
            processes = self.feed.runs()
            culprit = live.detect_failed_replica(job.name, processes, views, live.detect_finish_time(job))
            # Every line of the tail: the summary picks its last few (past torchrun's footer, if any).
            tails = self._tails({culprit[0]}, final=True, n=None) if culprit else {}
            summary = live.build_failure_summary(job, processes, views, tails, self.flags)
            out += [Text(t) for t in summary if self.kept or not t.startswith("  details: ")]
        if not self.kept:
            return out  # (the delete that follows stops whatever still runs)
        # replicas whose processes still run (what cleanPodPolicy left behind)
        left = live.detect_leftovers(views, self.feed.running_replicas())
        note = live.build_leftover_note(job, left, self.flags, views)
        out += [Text(t, style="yellow") for t in note]
        return out

    def gone(self, last: TrainingJob) -> list[Text]:
        return [Text(t, style="bold") for t in live.build_gone_lines(last, self.elapsed)]
