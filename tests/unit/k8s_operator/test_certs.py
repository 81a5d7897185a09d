"""The webhook certificate: a CA-signed serving cert for the Service name, rotated when due (§6.4)."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography import x509

from trainop.operator.certs import (
    CERT_VALIDITY,
    CertBundle,
    build_bundle,
    build_injected_webhooks,
    detect_rotation_reason,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
HOSTS = ["training-operator.kubeflow.svc", "127.0.0.1"]


@pytest.fixture(scope="module")
def bundle() -> CertBundle:
    return build_bundle(HOSTS, NOW)


def test_bundle_names_and_issuer(bundle: CertBundle) -> None:
    ca = x509.load_pem_x509_certificate(bundle.ca_cert)
    cert = x509.load_pem_x509_certificate(bundle.cert)
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    got = {
        "ca": ca.subject.rfc4514_string(),
        "issuer": cert.issuer.rfc4514_string(),
        "dns": san.get_values_for_type(x509.DNSName),
        "ips": [str(ip) for ip in san.get_values_for_type(x509.IPAddress)],
    }
    want = {
        "ca": "O=training-operator,CN=training-operator-ca",
        "issuer": "O=training-operator,CN=training-operator-ca",
        "dns": ["training-operator.kubeflow.svc"],
        "ips": ["127.0.0.1"],
    }
    assert got == want
    cert.verify_directly_issued_by(ca)


@pytest.mark.parametrize(
    ("when", "hosts", "want"),
    [
        pytest.param(NOW, HOSTS, None, id="fresh bundle is kept"),
        pytest.param(NOW + timedelta(days=200), HOSTS, None, id="well before expiry"),
        pytest.param(
            NOW + CERT_VALIDITY - timedelta(days=30),
            HOSTS,
            "serving certificate expires",
            id="inside the lookahead",
        ),
        pytest.param(
            NOW, [*HOSTS, "other.svc"], "serving certificate lacks other.svc", id="a host is missing"
        ),
    ],
)
def test_rotation_reason(bundle: CertBundle, when: datetime, hosts: list[str], want: str | None) -> None:
    got = detect_rotation_reason(bundle, hosts, when)
    assert (got if got is None else got[: len(want or "")]) == want


def test_missing_or_foreign_bundle_rotates(bundle: CertBundle) -> None:
    other = build_bundle(HOSTS, NOW)
    mixed = CertBundle(other.ca_cert, other.ca_key, bundle.cert, bundle.key)
    assert detect_rotation_reason(None, HOSTS, NOW) == "no certificate yet"
    assert detect_rotation_reason(mixed, HOSTS, NOW) == "serving certificate is not signed by the CA"


def test_secret_data_round_trip(bundle: CertBundle) -> None:
    data = bundle.to_secret_data()
    assert sorted(data) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
    assert CertBundle.from_secret_data(data) == bundle
    assert CertBundle.from_secret_data({}) is None


def test_ca_bundle_injected_into_every_webhook(bundle: CertBundle) -> None:
    vwc: dict[str, Any] = {
        "metadata": {"name": "validator.training-operator.kubeflow.org"},
        "webhooks": [
            {
                "name": "validator.pytorchjob.training-operator.kubeflow.org",
                "clientConfig": {"service": {"name": "s"}},
            },
            {
                "name": "validator.tfjob.training-operator.kubeflow.org",
                "clientConfig": {"url": "https://127.0.0.1"},
            },
        ],
    }
    got = build_injected_webhooks(vwc, bundle.ca_cert)
    ca = base64.b64encode(bundle.ca_cert).decode()
    want = {
        "metadata": {"name": "validator.training-operator.kubeflow.org"},
        "webhooks": [
            {
                "name": "validator.pytorchjob.training-operator.kubeflow.org",
                "clientConfig": {"service": {"name": "s"}, "caBundle": ca},
            },
            {
                "name": "validator.tfjob.training-operator.kubeflow.org",
                "clientConfig": {"url": "https://127.0.0.1", "caBundle": ca},
            },
        ],
    }
    assert got == want
    assert got is not None and build_injected_webhooks(got, bundle.ca_cert) is None  # nothing left to change


def test_a_service_name_over_64_characters_still_gets_a_certificate() -> None:
    # A 63-character namespace makes "<service>.<namespace>.svc" 85 characters; X.509 caps a CN at 64
    # (RFC 5280 ub-common-name), so the certificate could never be issued and the webhook never served.
    host = f"training-operator.{'n' * 63}.svc"
    got = build_bundle([host], NOW)
    assert detect_rotation_reason(got, [host], NOW) is None
    cert = x509.load_pem_x509_certificate(got.cert)
    cn = cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value
    assert cn == "training-operator"
