"""The webhook's TLS: a self-signed CA and serving certificate, kept in a Secret and rotated (§6.4).

Mirrors upstream's built-in rotator: Secret ``training-operator-webhook-cert`` (keys ca.crt, ca.key,
tls.crt, tls.key), CA ``training-operator-ca`` of organisation ``training-operator``, DNS name
``<service>.<namespace>.svc``; the CA is injected as caBundle into every webhook of the
ValidatingWebhookConfiguration. ``build_*``/``detect_*`` are pure (time passed in); the ``apply_*``
functions do the API calls.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from trainop.backends.kubernetes import resources as r
from trainop.backends.kubernetes.client import (
    PRIORITY_WRITE,
    KubeClient,
    api_status_code,
    request_priority,
    tolerate,
)
from trainop.operator.pki import build_ca_cert, build_key_pem, build_leaf_cert, build_name, build_private_key

log = logging.getLogger(__name__)

CA_NAME = "training-operator-ca"
CA_ORGANIZATION = "training-operator"
CA_VALIDITY = timedelta(days=3650)
CERT_VALIDITY = timedelta(days=365)
CN_MAX = 64  # RFC 5280 ub-common-name
# Rotate this long before expiry (cert-controller's lookahead), so no request ever meets an expired cert.
LOOKAHEAD = timedelta(days=90)


SECRET_KEYS = ("ca.crt", "ca.key", "tls.crt", "tls.key")  # the Secret's keys, in CertBundle's order


@dataclass(frozen=True, slots=True)
class CertBundle:
    ca_cert: bytes  # PEM
    ca_key: bytes
    cert: bytes
    key: bytes

    def to_secret_data(self) -> dict[str, str]:
        pems = (self.ca_cert, self.ca_key, self.cert, self.key)
        return {k: base64.b64encode(pem).decode() for k, pem in zip(SECRET_KEYS, pems, strict=True)}

    @classmethod
    def from_secret_data(cls, data: dict[str, str] | None) -> CertBundle | None:
        data = data or {}
        try:
            parts = [base64.b64decode(data[k]) for k in SECRET_KEYS]
        except (KeyError, ValueError):
            return None
        return cls(*parts)


def build_common_name(host: str) -> str:
    """``host``, or its first label when it is over X.509's 64-character CN limit (RFC 5280): a long
    namespace makes ``<service>.<namespace>.svc`` up to 85 characters. Clients match the subjectAltNames
    (Go has ignored the CN since 1.15), so the CN is only a label for people."""
    return host if len(host) <= CN_MAX else host.split(".", 1)[0][:CN_MAX]


def build_bundle(hosts: list[str], now: datetime) -> CertBundle:
    """A fresh CA and a serving certificate for ``hosts`` (DNS names or IP addresses)."""
    not_before = now - timedelta(hours=1)  # tolerate a little clock skew between replicas and the apiserver
    ca_key = build_private_key()
    ca = build_ca_cert(ca_key, build_name(CA_NAME, [CA_ORGANIZATION]), not_before, now + CA_VALIDITY)
    key = build_private_key()
    cert = build_leaf_cert(
        ca=ca,
        ca_key=ca_key,
        key=key,
        subject=build_name(build_common_name(hosts[0]), [CA_ORGANIZATION]),
        not_before=not_before,
        not_after=now + CERT_VALIDITY,
        hosts=hosts,
    )
    pem = serialization.Encoding.PEM
    return CertBundle(ca.public_bytes(pem), build_key_pem(ca_key), cert.public_bytes(pem), build_key_pem(key))


def detect_rotation_reason(bundle: CertBundle | None, hosts: list[str], now: datetime) -> str | None:
    """Why ``bundle`` must be replaced (missing, unparsable, expiring, wrong hosts, not signed by its
    CA), or None when it is good."""
    if bundle is None:
        return "no certificate yet"
    try:
        ca = x509.load_pem_x509_certificate(bundle.ca_cert)
        cert = x509.load_pem_x509_certificate(bundle.cert)
        serialization.load_pem_private_key(bundle.key, None)
    except ValueError as exc:
        return f"unreadable certificate: {exc}"
    for c, what in ((ca, "CA"), (cert, "serving certificate")):
        if c.not_valid_after_utc - LOOKAHEAD <= now:
            return f"{what} expires {c.not_valid_after_utc.isoformat()}"
        if c.not_valid_before_utc > now:
            return f"{what} not valid before {c.not_valid_before_utc.isoformat()}"
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, Exception):
        return "serving certificate is not signed by the CA"
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "serving certificate has no subjectAltName"
    have = {str(n) for n in san.get_values_for_type(x509.DNSName)} | {
        str(n) for n in san.get_values_for_type(x509.IPAddress)
    }
    missing = [h for h in hosts if h not in have]
    if missing:
        return f"serving certificate lacks {', '.join(missing)}"
    return None


def build_injected_webhooks(vwc: dict[str, Any], ca_pem: bytes) -> dict[str, Any] | None:
    """``vwc`` with every webhook's clientConfig.caBundle set to ``ca_pem``; None if nothing changes."""
    bundle = base64.b64encode(ca_pem).decode()
    webhooks = vwc.get("webhooks") or []
    if all((w.get("clientConfig") or {}).get("caBundle") == bundle for w in webhooks):
        return None
    out = dict(vwc)
    out["webhooks"] = [
        {**w, "clientConfig": {**(w.get("clientConfig") or {}), "caBundle": bundle}} for w in webhooks
    ]
    return out


async def apply_cert_secret(
    client: KubeClient, *, namespace: str, name: str, hosts: list[str], now: datetime
) -> CertBundle:
    """Read the Secret; rotate (write) it if its certificate is missing or due. Returns the bundle in use.

    The Secret normally ships empty with the manifests (so the operator needs only get/update on that
    one name); it is created when absent, which needs the create verb."""
    api = client.api
    with request_priority(PRIORITY_WRITE):
        try:
            secret: dict[str, Any] | None = dict(await api.get(r.Secret, name, namespace=namespace))
        except Exception as exc:
            if api_status_code(exc) != 404:
                raise
            secret = None
        current = CertBundle.from_secret_data((secret or {}).get("data"))
        reason = detect_rotation_reason(current, hosts, now)
        if reason is None and current is not None:
            return current
        log.info("webhook certificate: rotating (%s)", reason)
        bundle = build_bundle(hosts, now)
        create = secret is None
        if secret is None:
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "type": "Opaque",
            }
        secret["data"] = bundle.to_secret_data()
        if not await tolerate((api.create if create else api.replace)(r.Secret(secret)), 409):
            # Another replica created or rotated it first: use theirs.
            return await apply_cert_secret(client, namespace=namespace, name=name, hosts=hosts, now=now)
        return bundle


async def apply_ca_bundle(client: KubeClient, *, name: str, ca_pem: bytes) -> bool:
    """Inject the CA into the ValidatingWebhookConfiguration ``name``; True once it holds it."""
    api = client.api
    with request_priority(PRIORITY_WRITE):
        try:
            vwc = dict(await api.get(r.ValidatingWebhookConfiguration, name))
        except Exception as exc:
            if api_status_code(exc) == 404:
                log.warning(
                    "ValidatingWebhookConfiguration %s not found; apply manifests/ to install it", name
                )
                return False
            raise
        updated = build_injected_webhooks(vwc, ca_pem)
        if updated is None:
            return True
        if not await tolerate(api.replace(r.ValidatingWebhookConfiguration(updated)), 409):
            return False  # changed under us; the next check re-injects
        log.info("webhook: caBundle injected into %s", name)
        return True
