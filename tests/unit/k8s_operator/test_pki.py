"""X.509 builders shared by the webhook rotator and the test control plane: what each leaf is for, and
the key identifiers that tie a leaf to its CA (strict verifiers, e.g. Python 3.13's default, need them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from trainop.operator.pki import build_ca_cert, build_leaf_cert, build_name, build_private_key

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CA_KEY = build_private_key()
CA = build_ca_cert(CA_KEY, build_name("test-ca", ["org"]), NOW, NOW + timedelta(days=10))


def describe(cert: x509.Certificate) -> dict[str, Any]:
    ext = cert.extensions
    try:
        san = ext.get_extension_for_class(x509.SubjectAlternativeName).value
        names: list[str] | None = [str(v) for v in san.get_values_for_type(x509.DNSName)] + [
            str(v) for v in san.get_values_for_type(x509.IPAddress)
        ]
    except x509.ExtensionNotFound:
        names = None
    return {
        "subject": cert.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "ca": ext.get_extension_for_class(x509.BasicConstraints).value.ca,
        "usage": list(ext.get_extension_for_class(x509.ExtendedKeyUsage).value),
        "names": names,
        "issuer_key_id": ext.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier,
    }


CA_KEY_ID = CA.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest


@pytest.mark.parametrize(
    ("subject", "hosts", "want"),
    [
        pytest.param(
            build_name("svc.ns.svc"),
            ["svc.ns.svc", "127.0.0.1"],
            {
                "subject": "CN=svc.ns.svc",
                "issuer": "O=org,CN=test-ca",
                "ca": False,
                "usage": [ExtendedKeyUsageOID.SERVER_AUTH],
                "names": ["svc.ns.svc", "127.0.0.1"],
                "issuer_key_id": CA_KEY_ID,
            },
            id="hosts make a serving certificate (IPs as IP SANs)",
        ),
        pytest.param(
            build_name("alice", ["system:masters", "dev"]),
            [],
            {
                "subject": "O=dev,O=system:masters,CN=alice",
                "issuer": "O=org,CN=test-ca",
                "ca": False,
                "usage": [ExtendedKeyUsageOID.CLIENT_AUTH],
                "names": None,
                "issuer_key_id": CA_KEY_ID,
            },
            id="no hosts make a client certificate (CN user, O groups)",
        ),
    ],
)
def test_leaf(subject: x509.Name, hosts: list[str], want: dict[str, Any]) -> None:
    cert = build_leaf_cert(
        ca=CA,
        ca_key=CA_KEY,
        key=build_private_key(),
        subject=subject,
        not_before=NOW,
        not_after=NOW + timedelta(days=1),
        hosts=hosts,
    )
    assert describe(cert) == want
    cert.verify_directly_issued_by(CA)
