"""Helpers of the security tests: HTTPS gateways, certificates, keys and hand-made tokens.

No tests here; the module name matches the security tests' file pattern.
"""

from __future__ import annotations

import base64
import datetime
import http.client
import ipaddress
import json
import ssl
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.harness import ROOT, Gateway

SECRET = "integration-test-secret-of-forty-bytes!!"
OTHER_SECRET = "another-secret-that-is-at-least-32-bytes"
ROLES = ("viewer", "operator", "configurator", "admin")
CLIENTS = [f"{r}-client:{r}-secret:{r}" for r in ROLES]


class SecureGateway(Gateway):
    """A gateway reached over HTTP or HTTPS, ready once /health answers anything."""

    def __init__(self, port: int, domain: int, settings: list[str], log_path: Path | None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(port, domain, settings, log_path)
        self.ssl_context = ssl_context

    @property
    def base(self) -> str:
        """Base URL."""
        scheme = "https" if self.ssl_context else "http"
        return f"{scheme}://127.0.0.1:{self.port}/api/v1"

    def _conn(self, timeout: float) -> http.client.HTTPConnection:
        if self.ssl_context is not None:
            return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                               context=self.ssl_context)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def start(self, timeout: float = 30.0) -> SecureGateway:
        """Start and wait until /health answers (401 counts: the server is up)."""
        from gateway.demo.robot import ros_env

        env = ros_env(self.domain)
        env["PYTHONUNBUFFERED"] = "1"
        cmd = [sys.executable, "-m", "gateway", "run", "--port", str(self.port),
               "--domain", str(self.domain)]
        for s in self.settings:
            cmd += ["--set", s]
        out = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            if self.log_path:
                out.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gateway exited with {self.proc.returncode}; see "
                                   f"{self.log_path}")
            try:
                self.status("GET", "/health")
                return self
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("gateway did not answer /health in time")

    def status(self, method: str, path: str, headers: dict[str, str] | None = None,
               body: bytes | None = None, timeout: float = 10.0) -> int:
        """Only the status of one request (the body is not read: streams end at once)."""
        conn = self._conn(timeout)
        try:
            conn.request(method, "/api/v1" + path, body=body, headers=dict(headers or {}))
            return conn.getresponse().status
        finally:
            conn.close()

    def token(self, client_id: str, secret: str) -> dict[str, Any]:
        """A client-credentials grant's answer."""
        resp = self.request("POST", "/auth/authorize", body={
            "grant_type": "client_credentials", "client_id": client_id,
            "client_secret": secret})
        assert resp.status == 200, resp
        return resp.json()  # type: ignore[no-any-return]


def auth_settings(state_dir: Path, mode: str, *extra: str) -> list[str]:
    """Settings of an HS256 gateway with one client per role."""
    return ["auth.enabled=true", f"auth.jwt_secret={SECRET}", f"auth.require_auth_for={mode}",
            "auth.clients=[" + ",".join(CLIENTS) + "]", f"state_dir={state_dir}", *extra]


def bearer(token: str) -> dict[str, str]:
    """The Authorization header of an access token."""
    return {"Authorization": f"Bearer {token}"}


def mint(key: Any, role: str, *, exp_in_s: int = 600, algorithm: str = "HS256",
         issuer: str = "diag-gateway", typ: str = "at+jwt") -> str:
    """An access token made by hand, shaped like the gateway's own."""
    now = int(time.time())
    claims = {"iss": issuer, "sub": f"{role}-client", "role": role, "scope": role,
              "fam": uuid.uuid4().hex, "jti": uuid.uuid4().hex, "iat": now - 1200,
              "exp": now + exp_in_s}
    return jwt.encode(claims, key, algorithm=algorithm, headers={"typ": typ})


# --- certificates -------------------------------------------------------------------------

@dataclass
class Pki:
    """File paths of a CA, a server certificate for 127.0.0.1 and client certificates."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    rogue_cert: Path  # a client certificate from another CA
    rogue_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def _cert(subject: str, key: Any, issuer: x509.Name, issuer_key: Any, *, ca: bool = False,
          server: bool = False, client: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(
            digital_signature=True, content_commitment=False, key_encipherment=False,
            data_encipherment=False, key_agreement=False, key_cert_sign=True, crl_sign=True,
            encipher_only=False, decipher_only=False), critical=True)
        b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                            critical=False)
    else:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
            issuer_key.public_key()), critical=False)
    if server:
        b = b.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                            critical=False)
    if client:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                            critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def make_pki(d: Path) -> Pki:
    """A throw-away CA with server and client certificates, and a rogue client."""
    def pem(cert: x509.Certificate, path: Path) -> Path:
        path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return path

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("test CA", ca_key, _name("test CA"), ca_key, ca=True)
    rogue_ca_key = ec.generate_private_key(ec.SECP256R1())
    out = {}
    for label, issuer, issuer_key, kw in (
        ("server", ca.subject, ca_key, {"server": True}),
        ("client", ca.subject, ca_key, {"client": True}),
        ("rogue", _name("rogue CA"), rogue_ca_key, {"client": True}),
    ):
        key = ec.generate_private_key(ec.SECP256R1())
        _write_key(key, d / f"{label}.key")
        pem(_cert(f"{label}.test", key, issuer, issuer_key, **kw), d / f"{label}.pem")
        out[label] = (d / f"{label}.pem", d / f"{label}.key")
    return Pki(pem(ca, d / "ca.pem"), *out["server"], *out["client"], *out["rogue"])


def client_context(pki: Pki, *, cert: bool = False, rogue: bool = False,
                   max_version: ssl.TLSVersion | None = None) -> ssl.SSLContext:
    """A client context trusting the test CA, optionally presenting a client certificate."""
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    if max_version is not None:
        ctx.maximum_version = max_version
    if cert:
        ctx.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    if rogue:
        ctx.load_cert_chain(str(pki.rogue_cert), str(pki.rogue_key))
    return ctx


def write_rsa_keys(d: Path, bits: int = 2048) -> tuple[Path, Path, rsa.RSAPrivateKey]:
    """(private key file, public key file, key) of a fresh RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = d / "jwt_private.pem"
    public = d / "jwt_public.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public, key


def forge_hs256(key: bytes, role: str) -> str:
    """An HS256 token whose HMAC key is `key` (e.g. an RSA public key PEM), made by hand."""
    import hashlib
    import hmac

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "typ": "at+jwt"}).encode())
    payload = b64(json.dumps({"iss": "diag-gateway", "sub": "x", "role": role, "fam": "f",
                              "jti": "j", "iat": now, "exp": now + 600}).encode())
    signing_input = f"{header}.{payload}".encode()
    sig = b64(hmac.new(key, signing_input, hashlib.sha256).digest())
    return f"{header}.{payload}.{sig}"
