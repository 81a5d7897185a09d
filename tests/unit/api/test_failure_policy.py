"""Reading the failure-policy annotations (api/failure_policy.py): the effective policy, and every bad
value as a field-path error; admission (validate_job) reports them too."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trainop.api.errors import FieldError
from trainop.api.failure_policy import (
    DEFAULT_RESTART_RULES,
    ExitCodeMatch,
    FailurePolicy,
    FailureRule,
    parse_failure_policy,
)
from trainop.api.validation import validate_job
from trainop.testing.builders import pytorch_job

FP = "trainop.dev/failure-policy"
P = f"metadata.annotations[{FP}]"
TYPES = ("Master", "Worker")


def parse(annotations: dict[str, str]) -> tuple[FailurePolicy | None, list[str]]:
    policy, errs = parse_failure_policy(annotations, TYPES)
    return policy, [str(e) for e in errs]


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        pytest.param({}, None, id="no annotations: no policy (upstream's behaviour)"),
        pytest.param({"other.io/x": "1"}, None, id="other annotations only"),
        pytest.param(
            {"trainop.dev/max-restarts": "3"},
            FailurePolicy(
                rules=DEFAULT_RESTART_RULES,
                max_restarts=3,
                rules_defaulted=True,
                source=("trainop.dev/max-restarts",),
            ),
            id="max-restarts alone: every failure restarts the job (JobSet without rules)",
        ),
        pytest.param(
            {
                FP: "- {action: FailJob, onExitCodes: {operator: In, values: [2, 1]}}\n"
                "- name: oom\n  action: RestartJob\n  onReasons: [OOMKilled]\n  onReplicaTypes: [worker]\n",
                "trainop.dev/restart-strategy": "BlockingRecreate",
                "trainop.dev/startup-deadline-seconds": "600",
                "trainop.dev/start-error-deadline-seconds": " 120 ",
            },
            FailurePolicy(
                rules=(
                    FailureRule("FailJob", ExitCodeMatch("In", (1, 2))),
                    FailureRule(
                        "RestartJob", on_reasons=("OOMKilled",), on_replica_types=("Worker",), name="oom"
                    ),
                ),
                max_restarts=0,
                restart_strategy="BlockingRecreate",
                startup_deadline_seconds=600,
                start_error_deadline_seconds=120,
                source=(
                    FP,
                    "trainop.dev/restart-strategy",
                    "trainop.dev/startup-deadline-seconds",
                    "trainop.dev/start-error-deadline-seconds",
                ),
            ),
            id="YAML rules, codes sorted, replica types canonical",
        ),
        pytest.param(
            {FP: json.dumps({"rules": [{"action": "Ignore", "onReasons": ["Evicted"]}]})},
            FailurePolicy(rules=(FailureRule("Ignore", on_reasons=("Evicted",)),), source=(FP,)),
            id="JSON in JobSet's shape {rules: [...]}",
        ),
    ],
)
def test_parse(annotations: dict[str, str], want: FailurePolicy | None) -> None:
    assert parse(annotations) == (want, [])


@pytest.mark.parametrize(
    ("annotations", "want"),
    [
        pytest.param(
            {"trainop.dev/max-restarts": "three"},
            [
                'metadata.annotations[trainop.dev/max-restarts]: Invalid value: "three": must be an '
                "integer of at least 0, as a string"
            ],
            id="max-restarts not a number",
        ),
        pytest.param(
            {"trainop.dev/startup-deadline-seconds": "0"},
            [
                'metadata.annotations[trainop.dev/startup-deadline-seconds]: Invalid value: "0": must be '
                "between 1 and 2147483647"
            ],
            id="deadline 0",
        ),
        pytest.param(
            {"trainop.dev/restart-strategy": "InPlace"},
            [
                'metadata.annotations[trainop.dev/restart-strategy]: Unsupported value: "InPlace": '
                'supported values: "Recreate", "BlockingRecreate"'
            ],
            id="unknown strategy",
        ),
        pytest.param(
            {FP: "[a: b"},
            [
                f"{P}: Invalid value: \"[a: b\": must be a YAML or JSON list of rules: expected ',' or "
                "']', but got '<stream end>'"
            ],
            id="not YAML",
        ),
        pytest.param(
            {FP: "action: FailJob"},
            [f'{P}: Invalid value: "action: FailJob": must be a YAML or JSON list of rules'],
            id="a mapping, not a list",
        ),
        pytest.param(
            {FP: "[{action: Fail}]"},
            [
                f'{P}[0].action: Unsupported value: "Fail": supported values: "FailJob", "RestartJob", '
                '"Ignore", "UseRestartPolicy"'
            ],
            id="unknown action",
        ),
        pytest.param(
            {FP: "[{onReasons: [OOMKilled]}]"},
            [f"{P}[0].action: Required value: one of FailJob, RestartJob, Ignore, UseRestartPolicy"],
            id="no action",
        ),
        pytest.param(
            {FP: "[{action: FailJob, onExitCode: {operator: In, values: [1]}}]"},
            [
                f"{P}[0].onExitCode: Invalid value: unknown field: supported fields: name, action, "
                "onExitCodes, onReasons, onReplicaTypes"
            ],
            id="a typo in a field name",
        ),
        pytest.param(
            {FP: "[{action: FailJob, onExitCodes: {operator: Equals, values: [0, 1, 1, 256, x]}}]"},
            [
                f'{P}[0].onExitCodes.operator: Unsupported value: "Equals": supported values: "In", "NotIn"',
                f"{P}[0].onExitCodes.values[2]: Duplicate value: 1",
                f"{P}[0].onExitCodes.values[3]: Invalid value: 256: must be an exit code from 0 to 255",
                f'{P}[0].onExitCodes.values[4]: Invalid value: "x": must be an exit code from 0 to 255',
            ],
            id="bad operator and values",
        ),
        pytest.param(
            {FP: "[{action: FailJob, onExitCodes: {operator: In, values: [0]}}]"},
            [f"{P}[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"],
            id="0 with In (batch/v1's rule)",
        ),
        pytest.param(
            {FP: "[{action: FailJob, onExitCodes: {operator: In}}]"},
            [f"{P}[0].onExitCodes.values: Required value: a non-empty list of exit codes"],
            id="no values",
        ),
        pytest.param(
            {
                FP: "[{action: FailJob, onReplicaTypes: [Chief]}, {name: x, action: Ignore}, {name: x, "
                "action: Ignore}]"
            },
            [
                f'{P}[0].onReplicaTypes[0]: Unsupported value: "Chief": supported values: "Master", "Worker"',
                f'{P}[2].name: Duplicate value: "x"',
            ],
            id="a replica type the job lacks; duplicate names",
        ),
        pytest.param(
            {FP: "[{action: Ignore, onReasons: []}]"},
            [f"{P}[0].onReasons: Invalid value: []: must be a non-empty list of strings"],
            id="empty reasons",
        ),
    ],
)
def test_errors(annotations: dict[str, str], want: list[str]) -> None:
    assert parse(annotations)[1] == want


def test_admission_reports_them() -> None:
    job = pytorch_job("a").master(1).workers(1).annotations({"trainop.dev/max-restarts": "x"}).build()
    errs: list[Any] = [e for e in validate_job(job) if "trainop.dev" in e.path]
    assert errs == [
        FieldError(
            "metadata.annotations[trainop.dev/max-restarts]",
            'Invalid value: "x": must be an integer of at least 0, as a string',
        )
    ]
