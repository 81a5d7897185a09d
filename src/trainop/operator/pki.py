"""X.509 building blocks: EC P-256 keys, a self-signed CA, and leaf certificates the CA signs.

Shared by the webhook's rotator (``trainop.operator.certs``) and the test control plane's PKI
(``trainop.testing.testenv``). Pure apart from the randomness of keys and serial numbers: no I/O, no
clock (validity bounds are arguments).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def build_private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def build_key_pem(key: PrivateKeyTypes) -> bytes:
    """The unencrypted PKCS#8 PEM of ``key`` (what kube-apiserver and Go's tls.LoadX509KeyPair read)."""
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def build_name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    """CN plus one O per entry (for a client certificate: the Kubernetes user name and its groups)."""
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    return x509.Name(attrs)


def build_subject_alt_names(hosts: Sequence[str]) -> x509.SubjectAlternativeName:
    """IP addresses as IP SANs, anything else as DNS names."""
    sans: list[x509.GeneralName] = []
    for h in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            sans.append(x509.DNSName(h))
    return x509.SubjectAlternativeName(sans)


def build_ca_cert(
    key: ec.EllipticCurvePrivateKey, name: x509.Name, not_before: datetime, not_after: datetime
) -> x509.Certificate:
    """A self-signed CA that may sign certificates and CRLs. It carries a subject key identifier (as
    Go's x509 adds to CA certificates), which strict verifiers match against its leaves'."""
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


def build_leaf_cert(
    *,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    key: ec.EllipticCurvePrivateKey,
    subject: x509.Name,
    not_before: datetime,
    not_after: datetime,
    hosts: Sequence[str] = (),
) -> x509.Certificate:
    """A certificate ``ca`` signs for ``key``: for serving ``hosts`` (DNS names or IPs) when given, else
    for client authentication. It names its issuer's key (authority key identifier), as Go's x509 does
    and as strict verifiers (Python 3.13's default TLS context) require."""
    usage = ExtendedKeyUsageOID.SERVER_AUTH if hosts else ExtendedKeyUsageOID.CLIENT_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if hosts:
        builder = builder.add_extension(build_subject_alt_names(hosts), critical=False)
    return builder.sign(ca_key, hashes.SHA256())
