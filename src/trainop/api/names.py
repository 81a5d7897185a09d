"""apimachinery's DNS-1123 label rule (IsDNS1123Label), as field errors: pure, no I/O.

Namespaces, container, init-container and volume names are DNS-1123 labels on Kubernetes; the local
backend also builds paths from them, so every entry point checks them here before any path exists.
"""

from __future__ import annotations

import re

from trainop.api.errors import FieldError, invalid

DNS1123_LABEL_MAX = 63
DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE = re.compile(f"^{DNS1123_LABEL_FMT}$")
# Word for word apimachinery's dns1123LabelErrMsg (and its example), so errors read as kubectl's do.
DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    f"'{DNS1123_LABEL_FMT}')"
)
DNS1123_SUBDOMAIN_MAX = 253
_DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_SUBDOMAIN_RE = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    f"'{_DNS1123_SUBDOMAIN_FMT}')"
)


def validate_dns1123_label(value: object, path: str) -> list[FieldError]:
    """The errors apimachinery's IsDNS1123Label reports for ``value`` at ``path`` (empty when valid)."""
    if not isinstance(value, str):
        return [invalid(path, value, "must be a string")]
    errs: list[FieldError] = []
    if len(value.encode()) > DNS1123_LABEL_MAX:
        errs.append(invalid(path, value, f"must be no more than {DNS1123_LABEL_MAX} characters"))
    if _DNS1123_LABEL_RE.fullmatch(value) is None:  # not match with "$", which passes a trailing newline
        errs.append(invalid(path, value, DNS1123_LABEL_MSG))
    return errs
