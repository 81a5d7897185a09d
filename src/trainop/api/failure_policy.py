"""trainop's failure policy: whole-job restart, ordered failure rules and start deadlines, read from the
job's ``trainop.dev/`` annotations (docs/failure-policy.md) into a ``FailurePolicy``, with field-path
errors for every bad value.

Annotations keep the v1 API intact: upstream's CRDs accept them unchanged and upstream's operator
ignores them. Parsing only; the decisions live in ``trainop.core.policies.failure`` and ``.startup``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from trainop.api.common import TrainingJob
from trainop.api.constants import (
    ANNOTATION_FAILURE_POLICY,
    ANNOTATION_MAX_RESTARTS,
    ANNOTATION_RESTART_STRATEGY,
    ANNOTATION_START_ERROR_DEADLINE,
    ANNOTATION_STARTUP_DEADLINE,
    FAILURE_POLICY_ANNOTATIONS,
)
from trainop.api.errors import FieldError, invalid, not_supported, required

# Actions (JobSet's FailJobSet / RestartJobSet / RestartJobSetAndIgnoreMaxRestarts; batch/v1's
# podFailurePolicy FailJob / Ignore / Count).
ACTION_FAIL_JOB = "FailJob"  # fail the job now
ACTION_RESTART_JOB = "RestartJob"  # recreate every replica; counts toward max-restarts
ACTION_IGNORE = "Ignore"  # recreate every replica; does not count
ACTION_USE_RESTART_POLICY = "UseRestartPolicy"  # the replica's own restartPolicy, as without rules
ACTIONS = (ACTION_FAIL_JOB, ACTION_RESTART_JOB, ACTION_IGNORE, ACTION_USE_RESTART_POLICY)
RESTARTING_ACTIONS = frozenset({ACTION_RESTART_JOB, ACTION_IGNORE})

# How the replicas are recreated (JobSet's failurePolicy.restartStrategy).
STRATEGY_RECREATE = "Recreate"  # each replica comes back as soon as its old pod is gone
STRATEGY_BLOCKING_RECREATE = "BlockingRecreate"  # none comes back until every old pod is gone
RESTART_STRATEGIES = (STRATEGY_RECREATE, STRATEGY_BLOCKING_RECREATE)

OPERATOR_IN = "In"
OPERATOR_NOT_IN = "NotIn"
OPERATORS = (OPERATOR_IN, OPERATOR_NOT_IN)

RULE_FIELDS = ("name", "action", "onExitCodes", "onReasons", "onReplicaTypes")
EXIT_CODE_FIELDS = ("containerName", "operator", "values")
MAX_RULES = 20
MAX_VALUES = 255  # batch/v1 podFailurePolicy's limit on onExitCodes.values
MAX_ANNOTATION_BYTES = 16 * 1024
INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ExitCodeMatch:
    """batch/v1's onExitCodes: a terminated container's exit code In / NotIn ``values``; only
    ``container`` when set, else every container of the pod."""

    operator: str
    values: tuple[int, ...]
    container: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"containerName": self.container, "operator": self.operator, "values": list(self.values)}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True, slots=True)
class FailureRule:
    """One rule: it matches a replica failure when every matcher it sets matches (none set: every
    failure); ``on_reasons`` matches the pod's or a failed container's reason."""

    action: str
    on_exit_codes: ExitCodeMatch | None = None
    on_reasons: tuple[str, ...] = ()
    on_replica_types: tuple[str, ...] = ()
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "action": self.action,
            "onExitCodes": self.on_exit_codes.to_dict() if self.on_exit_codes is not None else None,
            "onReasons": list(self.on_reasons) or None,
            "onReplicaTypes": list(self.on_replica_types) or None,
        }
        return {k: v for k, v in out.items() if v is not None}


# With max-restarts (or a restart strategy) and no rules, every failure restarts the job, as JobSet's
# failurePolicy without rules does.
DEFAULT_RESTART_RULES = (FailureRule(action=ACTION_RESTART_JOB, name="default"),)


@dataclass(frozen=True, slots=True)
class FailurePolicy:
    """The effective policy of one job; None-valued deadlines are off."""

    rules: tuple[FailureRule, ...] = ()
    max_restarts: int = 0
    restart_strategy: str = STRATEGY_RECREATE
    startup_deadline_seconds: int | None = None
    start_error_deadline_seconds: int | None = None
    rules_defaulted: bool = False
    # The annotations it was read from, for messages and ``render``.
    source: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The effective policy as ``render``/``describe`` show it (defaults filled in)."""
        out: dict[str, Any] = {
            "rules": [r.to_dict() for r in self.rules],
            "unmatched": ACTION_USE_RESTART_POLICY,
            "maxRestarts": self.max_restarts,
            "restartStrategy": self.restart_strategy,
        }
        if self.startup_deadline_seconds is not None:
            out["startupDeadlineSeconds"] = self.startup_deadline_seconds
        if self.start_error_deadline_seconds is not None:
            out["startErrorDeadlineSeconds"] = self.start_error_deadline_seconds
        return out


def _path(key: str) -> str:
    return f"metadata.annotations[{key}]"


def parse_failure_policy(
    annotations: Mapping[str, str] | None, replica_types: Iterable[str] = ()
) -> tuple[FailurePolicy | None, list[FieldError]]:
    """The policy the annotations describe (None when none of them is set) and every error found.
    ``replica_types`` are the job's replica types, against which ``onReplicaTypes`` is checked (case
    insensitively, as the replica map's keys are normalised, §1.4); empty skips that check."""
    if not annotations or not any(k in annotations for k in FAILURE_POLICY_ANNOTATIONS):
        return None, []  # a job without them behaves as upstream
    errs: list[FieldError] = []
    known_types = {t.lower(): t for t in replica_types}

    max_restarts = _parse_int(annotations, ANNOTATION_MAX_RESTARTS, 0, errs)
    strategy = annotations.get(ANNOTATION_RESTART_STRATEGY, STRATEGY_RECREATE)
    if strategy not in RESTART_STRATEGIES:
        errs.append(not_supported(_path(ANNOTATION_RESTART_STRATEGY), strategy, RESTART_STRATEGIES))
        strategy = STRATEGY_RECREATE
    startup = _parse_int(annotations, ANNOTATION_STARTUP_DEADLINE, 1, errs)
    start_error = _parse_int(annotations, ANNOTATION_START_ERROR_DEADLINE, 1, errs)

    rules: tuple[FailureRule, ...] = ()
    defaulted = False
    raw_rules = annotations.get(ANNOTATION_FAILURE_POLICY)
    if raw_rules is not None:
        rules = _parse_rules(raw_rules, known_types, errs)
    elif ANNOTATION_MAX_RESTARTS in annotations or ANNOTATION_RESTART_STRATEGY in annotations:
        rules, defaulted = DEFAULT_RESTART_RULES, True

    policy = FailurePolicy(
        rules=rules,
        max_restarts=max_restarts if max_restarts is not None else 0,
        restart_strategy=strategy,
        startup_deadline_seconds=startup,
        start_error_deadline_seconds=start_error,
        rules_defaulted=defaulted,
        source=tuple(k for k in FAILURE_POLICY_ANNOTATIONS if k in annotations),
    )
    return policy, errs


def build_failure_policy(job: TrainingJob) -> tuple[FailurePolicy | None, list[FieldError]]:
    """``parse_failure_policy`` over a job's annotations and replica types."""
    return parse_failure_policy(job.metadata.annotations, job.replica_specs.keys())


def _parse_int(annotations: Mapping[str, str], key: str, floor: int, errs: list[FieldError]) -> int | None:
    raw = annotations.get(key)
    if raw is None:
        return None
    text = raw.strip()
    if not (text.isascii() and text.isdigit()):
        errs.append(invalid(_path(key), raw, f"must be an integer of at least {floor}, as a string"))
        return None
    value = int(text)
    if value < floor or value > INT32_MAX:
        errs.append(invalid(_path(key), raw, f"must be between {floor} and {INT32_MAX}"))
        return None
    return value


def _parse_rules(raw: str, known_types: Mapping[str, str], errs: list[FieldError]) -> tuple[FailureRule, ...]:
    base = _path(ANNOTATION_FAILURE_POLICY)
    if len(raw.encode()) > MAX_ANNOTATION_BYTES:
        errs.append(FieldError(base, f"Too long: must have at most {MAX_ANNOTATION_BYTES} bytes"))
        return ()
    try:
        doc = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        errs.append(invalid(base, raw, f"must be a YAML or JSON list of rules: {problem}"))
        return ()
    if isinstance(doc, dict) and set(doc) == {"rules"}:
        doc = doc["rules"]  # JobSet's shape: failurePolicy.rules
    if not isinstance(doc, list):
        errs.append(invalid(base, raw, "must be a YAML or JSON list of rules"))
        return ()
    if len(doc) > MAX_RULES:
        errs.append(FieldError(base, f"Too many: {len(doc)}: must have at most {MAX_RULES} items"))
        return ()
    rules: list[FailureRule] = []
    names: set[str] = set()
    for i, item in enumerate(doc):
        rule = _parse_rule(item, f"{base}[{i}]", known_types, errs)
        if rule is None:
            continue
        if rule.name is not None:
            if rule.name in names:
                errs.append(FieldError(f"{base}[{i}].name", f'Duplicate value: "{rule.name}"'))
            names.add(rule.name)
        rules.append(rule)
    return tuple(rules)


def _parse_rule(
    item: Any, path: str, known_types: Mapping[str, str], errs: list[FieldError]
) -> FailureRule | None:
    if not isinstance(item, dict):
        errs.append(invalid(path, item, "must be a mapping with action and matchers"))
        return None
    before = len(errs)
    _unknown_fields(item, RULE_FIELDS, path, errs)
    name = item.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        errs.append(invalid(f"{path}.name", name, "must be a non-empty string"))
        name = None
    action = item.get("action")
    if action is None:
        errs.append(required(f"{path}.action", "one of " + ", ".join(ACTIONS)))
    elif action not in ACTIONS:
        errs.append(not_supported(f"{path}.action", action, ACTIONS))
    exit_codes = None
    if item.get("onExitCodes") is not None:
        exit_codes = _parse_exit_codes(item["onExitCodes"], f"{path}.onExitCodes", errs)
    reasons = _parse_strings(item.get("onReasons"), f"{path}.onReasons", errs)
    types = _parse_strings(item.get("onReplicaTypes"), f"{path}.onReplicaTypes", errs)
    canonical: list[str] = []
    for j, t in enumerate(types):
        if known_types and t.lower() not in known_types:
            errs.append(not_supported(f"{path}.onReplicaTypes[{j}]", t, sorted(known_types.values())))
        else:
            canonical.append(known_types.get(t.lower(), t))
    if len(errs) > before:
        return None
    return FailureRule(
        action=str(action),
        on_exit_codes=exit_codes,
        on_reasons=reasons,
        on_replica_types=tuple(canonical),
        name=name,
    )


def _parse_exit_codes(raw: Any, path: str, errs: list[FieldError]) -> ExitCodeMatch | None:
    if not isinstance(raw, dict):
        errs.append(invalid(path, raw, "must be a mapping with operator and values"))
        return None
    before = len(errs)
    _unknown_fields(raw, EXIT_CODE_FIELDS, path, errs)
    operator = raw.get("operator")
    if operator is None:
        errs.append(required(f"{path}.operator", "In or NotIn"))
    elif operator not in OPERATORS:
        errs.append(not_supported(f"{path}.operator", operator, OPERATORS))
    container = raw.get("containerName")
    if container is not None and (not isinstance(container, str) or not container):
        errs.append(invalid(f"{path}.containerName", container, "must be a non-empty string"))
    values = raw.get("values")
    codes: list[int] = []
    if not isinstance(values, list) or not values:
        errs.append(required(f"{path}.values", "a non-empty list of exit codes"))
    elif len(values) > MAX_VALUES:
        errs.append(
            FieldError(f"{path}.values", f"Too many: {len(values)}: must have at most {MAX_VALUES} items")
        )
    else:
        for j, v in enumerate(values):
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 255:
                errs.append(invalid(f"{path}.values[{j}]", v, "must be an exit code from 0 to 255"))
            elif v in codes:
                errs.append(FieldError(f"{path}.values[{j}]", f"Duplicate value: {v}"))
            elif v == 0 and operator == OPERATOR_IN:
                # As batch/v1: exit code 0 is success, never a failure to match.
                errs.append(invalid(f"{path}.values[{j}]", v, "must not be 0 for the In operator"))
            else:
                codes.append(v)
    if len(errs) > before:
        return None
    return ExitCodeMatch(operator=str(operator), values=tuple(sorted(codes)), container=container)


def _unknown_fields(raw: dict[Any, Any], known: tuple[str, ...], path: str, errs: list[FieldError]) -> None:
    message = "Invalid value: unknown field: supported fields: " + ", ".join(known)
    errs.extend(FieldError(f"{path}.{key}", message) for key in raw if key not in known)


def _parse_strings(raw: Any, path: str, errs: list[FieldError]) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        errs.append(invalid(path, raw, "must be a non-empty list of strings"))
        return ()
    out: list[str] = []
    for j, v in enumerate(raw):
        if not isinstance(v, str) or not v:
            errs.append(invalid(f"{path}[{j}]", v, "must be a non-empty string"))
        elif v in out:
            errs.append(FieldError(f"{path}[{j}]", f'Duplicate value: "{v}"'))
        else:
            out.append(v)
    return tuple(out)
