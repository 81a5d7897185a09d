"""Kueue's ``kueue.x-k8s.io/queue-name`` rules (its jobframework webhook): a DNS-1123 subdomain, label or
deprecated annotation alike, and immutable on update unless the new job is suspended."""

from __future__ import annotations

import pytest

from trainop.api.errors import FieldError
from trainop.api.validation import validate_job
from trainop.testing.builders import JobBuilder, mpi_job, pytorch_job

QUEUE = "kueue.x-k8s.io/queue-name"
LABEL_PATH = f"metadata.labels[{QUEUE}]"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
IMMUTABLE = (
    "field is immutable; to move the job to another queue, suspend it (spec.runPolicy.suspend: true) "
    "in the same update"
)


def job(queue: str | None = None, *, annotation: str | None = None, suspend: bool = False) -> JobBuilder:
    b = pytorch_job("a").master(1).workers(1)
    if queue is not None:
        b = b.labels(**{QUEUE: queue})
    if annotation is not None:
        b = b.annotations({QUEUE: annotation})
    return b.suspend(True) if suspend else b


def queue_errors(new: JobBuilder, old: JobBuilder | None = None) -> list[FieldError]:
    got = validate_job(new.build(), old.build() if old is not None else None)
    return [e for e in got if QUEUE in e.path]


@pytest.mark.parametrize(
    ("new", "old", "want"),
    [
        pytest.param(job("team-a"), None, [], id="a valid queue name"),
        pytest.param(job("team.a-1"), None, [], id="dots are allowed, as in any subdomain"),
        pytest.param(job(), None, [], id="no queue name: not Kueue's"),
        pytest.param(job("Team_A"), None, [FieldError(LABEL_PATH, f'Invalid value: "Team_A": {SUBDOMAIN}')],
                     id="upper case and underscore are not a subdomain"),
        pytest.param(job(annotation="-x"), None,
                     [FieldError(f"metadata.annotations[{QUEUE}]", f'Invalid value: "-x": {SUBDOMAIN}')],
                     id="the deprecated annotation is checked too"),
        pytest.param(job("team-b"), job("team-a"),
                     [FieldError(LABEL_PATH, f'Invalid value: "team-b": {IMMUTABLE}')],
                     id="changed on a running job"),
        pytest.param(job(), job("team-a"), [FieldError(LABEL_PATH, f'Invalid value: "": {IMMUTABLE}')],
                     id="removed on a running job"),
        pytest.param(job("team-a"), job(), [FieldError(LABEL_PATH, f'Invalid value: "team-a": {IMMUTABLE}')],
                     id="added to a running job"),
        pytest.param(job("team-b", suspend=True), job("team-a"), [],
                     id="changed while suspended, as Kueue does before admission"),
        pytest.param(job("team-a"), job(annotation="team-a"), [],
                     id="moved from the annotation to the label: the same queue"),
        pytest.param(job("team-a", suspend=False), job("team-a", suspend=True), [],
                     id="unchanged on resume"),
    ],
)  # fmt: skip
def test_queue_name(new: JobBuilder, old: JobBuilder | None, want: list[FieldError]) -> None:
    assert queue_errors(new, old) == want


def test_every_kind_is_checked() -> None:
    got = queue_errors(mpi_job("m").launcher(1).workers(1).labels(**{QUEUE: "a" * 254}))
    want = [
        FieldError(LABEL_PATH, f'Invalid value: "{"a" * 254}": must be no more than 253 characters'),
    ]
    assert got == want
