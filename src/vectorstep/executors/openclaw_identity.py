"""An OpenClaw device identity: the Ed25519 key pair of `device.json` and the token of `device-auth.json`.

An OpenClaw gateway grants scopes only to a device that signs its connect request: the signed text
is the v3 payload, its fields joined by `|` — `v3`, the device id, the client id, the client mode,
the role, the scopes (joined by `,`), the signing time in milliseconds, the token, the gateway's
nonce and the platform. The public key and the signature travel base64url-encoded without padding;
the device id is the SHA-256 of the raw public key, in hex.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from vectorstep.errors import ExecutorError

DEVICE_FILE = "device.json"
AUTH_FILE = "device-auth.json"


@dataclass(frozen=True)
class SignedConnect:
    client_id: str
    client_mode: str
    role: str
    scopes: Sequence[str]
    signed_at_ms: int
    token: str
    nonce: str
    platform: str

    def payload(self, device_id: str) -> str:
        fields = ("v3", device_id, self.client_id, self.client_mode, self.role, ",".join(self.scopes))
        return "|".join((*fields, str(self.signed_at_ms), self.token, self.nonce, self.platform))


@dataclass(frozen=True)
class DeviceIdentity:
    device_id: str
    private_key: Ed25519PrivateKey
    token: str | None  # the operator token of `device-auth.json`, when it has one

    @property
    def public_key(self) -> str:
        raw = self.private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return b64url(raw)

    def sign(self, connect: SignedConnect) -> str:
        return b64url(self.private_key.sign(connect.payload(self.device_id).encode("utf-8")))


def load_identity(folder: Path, role: str = "operator") -> DeviceIdentity:
    """The identity in `folder`; a missing or unreadable file is an ExecutorError naming it."""
    device = _read(folder / DEVICE_FILE)
    pem = device.get("privateKeyPem")
    if not isinstance(pem, str):
        raise ExecutorError(f"{folder / DEVICE_FILE} has no privateKeyPem")
    try:
        key = serialization.load_pem_private_key(pem.encode("utf-8"), password=None)
    except (ValueError, TypeError) as error:
        raise ExecutorError(f"{folder / DEVICE_FILE}: privateKeyPem is not a readable key ({error})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ExecutorError(f"{folder / DEVICE_FILE}: privateKeyPem is not an Ed25519 key")
    device_id = device.get("deviceId")
    if not isinstance(device_id, str) or not device_id:
        raise ExecutorError(f"{folder / DEVICE_FILE} has no deviceId")
    token = None
    auth_path = folder / AUTH_FILE
    if auth_path.exists():
        tokens = _read(auth_path).get("tokens")
        entry = tokens.get(role) if isinstance(tokens, dict) else None
        token = entry.get("token") if isinstance(entry, dict) and isinstance(entry.get("token"), str) else None
    return DeviceIdentity(device_id, key, token)


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExecutorError(f"the OpenClaw identity file {path} does not exist") from None
    except (OSError, ValueError) as error:
        raise ExecutorError(f"the OpenClaw identity file {path} cannot be read: {error}") from None
    if not isinstance(data, dict):
        raise ExecutorError(f"the OpenClaw identity file {path} does not hold a JSON object")
    return data


def device_id_of(public_key: str) -> str:
    return hashlib.sha256(b64url_decode(public_key)).hexdigest()


def verify(public_key: str, signature: str, payload: str) -> bool:
    """True when `signature` is the key's signature of `payload` (what a gateway checks)."""
    try:
        Ed25519PublicKey.from_public_bytes(b64url_decode(public_key)).verify(
            b64url_decode(signature), payload.encode("utf-8")
        )
    except (InvalidSignature, ValueError):
        return False
    return True


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
