"""Failure rules and whole-job restart (docs/failure-policy.md; beyond upstream v1, which only has §4.5).

Which replica failures a pass sees (a Failed pod, or a container the kubelet restarted in place), what
the ordered rules decide for them (first matching rule wins; the earliest failure with a decision acts,
as JobSet acts on its first failed child Job), and the restart count kept in a ``JobRestarts``
condition, since upstream's structural status schema would prune a new field. Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainop.api.common import JobCondition, JobStatus
from trainop.api.constants import COND_FAILED, COND_JOB_RESTARTS, LABEL_RESTART_ATTEMPT
from trainop.api.failure_policy import ACTION_USE_RESTART_POLICY, OPERATOR_IN, FailureRule
from trainop.core.pods import PHASE_FAILED, detect_label, detect_name, detect_phase
from trainop.core.status import TRUE, as_utc, detect_condition, parse_time

_EMPTY: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Failure:
    """One replica failure as the rules see it."""

    pod: str
    rtype: str
    # (container, exit code) of every container whose last run ended with a non-zero code.
    exit_codes: tuple[tuple[str, int], ...] = ()
    # The pod's reason (Evicted, DeadlineExceeded…), the failed containers' terminated reasons
    # (OOMKilled, Error, StartError…) and a DisruptionTarget condition's reason, in that order.
    reasons: tuple[str, ...] = ()
    # When it happened (the latest finishedAt), None when unknown.
    at: datetime | None = None
    # A container restarted in place by the kubelet (OnFailure/Always); the pod is not Failed.
    in_place: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """What the rules decided for ``failure``: ``action`` from rule ``rule`` (its index)."""

    action: str
    failure: Failure
    rule: int


@dataclass(frozen=True, slots=True)
class RestartCount:
    """Whole-job restarts so far: every one (the pods' restart-attempt) and those counted toward
    max-restarts (RestartJob; Ignore does not count)."""

    attempt: int = 0
    counted: int = 0


def detect_attempt(pod: dict[str, Any]) -> int:
    """The whole-job restart that created ``pod`` (its restart-attempt label; 0 when absent)."""
    raw = detect_label(pod, LABEL_RESTART_ATTEMPT)
    return int(raw) if raw is not None and raw.isdigit() else 0


def _failed_run(cs: dict[str, Any], failed: bool) -> dict[str, Any] | None:
    """The container run that shows a failure: its terminated state when the pod failed, else the
    last run of a container restarted in place; None when it has none."""
    if failed:
        term = (cs.get("state") or _EMPTY).get("terminated")
    elif int(cs.get("restartCount") or 0) > 0:
        term = (cs.get("lastState") or _EMPTY).get("terminated")
    else:
        term = None
    if not term:
        return None
    code = int(term.get("exitCode") or 0)
    return term if code != 0 or term.get("reason") == "OOMKilled" else None


def _add_reason(reasons: list[str], reason: Any) -> None:
    if isinstance(reason, str) and reason and reason not in reasons:
        reasons.append(reason)


def detect_failure(pod: dict[str, Any], rtype: str) -> Failure | None:
    """The failure ``pod`` shows, if any: phase Failed (its containers' terminated states), or a
    container restarted in place whose last run ended with a non-zero code (``lastState``)."""
    status = pod.get("status") or _EMPTY
    failed = detect_phase(pod) == PHASE_FAILED
    codes: list[tuple[str, int]] = []
    reasons: list[str] = []
    times: list[datetime] = []
    if failed:
        _add_reason(reasons, status.get("reason"))
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or ():
            term = _failed_run(cs, failed)
            if term is None:
                continue
            codes.append((str(cs.get("name") or ""), int(term.get("exitCode") or 0)))
            _add_reason(reasons, term.get("reason"))
            finished = parse_time(term.get("finishedAt"))
            if finished is not None:
                times.append(finished)
    for cond in status.get("conditions") or ():
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == TRUE:
            _add_reason(reasons, cond.get("reason"))
    if not failed and not codes:
        return None
    return Failure(
        pod=detect_name(pod),
        rtype=rtype,
        exit_codes=tuple(codes),
        reasons=tuple(reasons),
        at=max(times) if times else None,
        in_place=not failed,
    )


def detect_rule_match(rule: FailureRule, failure: Failure) -> bool:
    """Every matcher the rule sets matches (AND); a rule without matchers matches every failure."""
    if rule.on_replica_types and failure.rtype.lower() not in {t.lower() for t in rule.on_replica_types}:
        return False
    match = rule.on_exit_codes
    if match is not None:
        codes = [c for name, c in failure.exit_codes if match.container is None or name == match.container]
        if match.operator == OPERATOR_IN:
            if not any(c in match.values for c in codes):
                return False
        elif not any(c not in match.values for c in codes):
            return False
    return not (rule.on_reasons and not any(r in rule.on_reasons for r in failure.reasons))


def compute_action(rules: Sequence[FailureRule], failure: Failure) -> tuple[str, int]:
    """The first matching rule's action and index; no match: the replica's restartPolicy (-1)."""
    for i, rule in enumerate(rules):
        if detect_rule_match(rule, failure):
            return rule.action, i
    return ACTION_USE_RESTART_POLICY, -1


def compute_decision(rules: Sequence[FailureRule], failures: Iterable[Failure]) -> Decision | None:
    """The earliest failure (by time, then pod name; unknown times last) whose rule decides something
    other than the replica's own restartPolicy; None leaves every failure to §4.5 as without rules."""
    ordered = sorted(failures, key=lambda f: (f.at is None, f.at or datetime.min, f.pod))
    for failure in ordered:
        action, index = compute_action(rules, failure)
        if action != ACTION_USE_RESTART_POLICY:
            return Decision(action, failure, index)
    return None


def build_failure_summary(failure: Failure) -> str:
    """``pod a-worker-2 (Worker) exited with code 137 (reason OOMKilled)`` and the like."""
    head = f"pod {failure.pod} ({failure.rtype})"
    if failure.exit_codes:
        codes = ", ".join(
            f"{c}" if len(failure.exit_codes) == 1 else f"{c} (container {name})"
            for name, c in failure.exit_codes
        )
        head += f" exited with code {codes}"
        if failure.in_place:
            head += " and was restarted in place"
    else:
        head += " failed"
    if failure.reasons:
        head += f" (reason {', '.join(failure.reasons)})"
    return head


def build_rule_label(rules: Sequence[FailureRule], index: int) -> str:
    """How a message names the rule that decided: ``rule 0 "oom"`` or ``rule 1``."""
    if index < 0 or index >= len(rules):
        return "no rule"
    name = rules[index].name
    return f'rule {index} "{name}"' if name else f"rule {index}"


# --- the restart count, kept in a JobRestarts condition -------------------------------------------

_COUNT_RE = re.compile(r"^(\d+) whole-job restart\(s\), (\d+) counted")


def detect_restart_count(status: JobStatus | None) -> RestartCount:
    """The count the ``JobRestarts`` condition holds (zero when there is none)."""
    cond = detect_condition(status, COND_JOB_RESTARTS) if status is not None else None
    m = _COUNT_RE.match(cond.message or "") if cond is not None else None
    return RestartCount(int(m.group(1)), int(m.group(2))) if m else RestartCount()


def detect_restart_time(status: JobStatus | None) -> datetime | None:
    """When the last whole-job restart happened (the JobRestarts condition's lastUpdateTime)."""
    cond = detect_condition(status, COND_JOB_RESTARTS) if status is not None else None
    return as_utc(cond.last_update_time) if cond is not None and cond.last_update_time is not None else None


def build_restarts_message(count: RestartCount, max_restarts: int, summary: str) -> str:
    return (
        f"{count.attempt} whole-job restart(s), {count.counted} counted toward maxRestarts "
        f"{max_restarts}; the last because {summary}"
    )


def build_restarts_condition(
    kind: str, count: RestartCount, max_restarts: int, summary: str, now: datetime
) -> JobCondition:
    return JobCondition(
        type=COND_JOB_RESTARTS,
        status=TRUE,
        reason=f"{kind}Restarted",
        message=build_restarts_message(count, max_restarts, summary),
        last_update_time=now,
        last_transition_time=now,
    )


def set_restarts_condition(status: JobStatus, cond: JobCondition) -> bool:
    """Record ``cond`` (a JobRestarts condition): replaced where it stands (its first
    lastTransitionTime kept), or inserted before the newest condition, so the ``State`` printer column
    (``conditions[-1:].type``, §1.1) keeps showing upstream's state. Nothing changes once Failed."""
    conditions = list(status.conditions or [])
    if any(c.type == COND_FAILED and c.status == TRUE for c in conditions):
        return False
    for i, c in enumerate(conditions):
        if c.type == COND_JOB_RESTARTS:
            if c.message == cond.message and c.reason == cond.reason:
                return False
            conditions[i] = cond.model_copy(update={"last_transition_time": c.last_transition_time})
            status.conditions = conditions
            return True
    conditions.insert(max(len(conditions) - 1, 0), cond)
    status.conditions = conditions
    return True
