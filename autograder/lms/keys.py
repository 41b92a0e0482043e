"""`lms keys`: the tool's RSA key pair for LTI 1.3, and what the LMS administrator registers: the public key set
(JWKS), its key id, and the services the tool asks for."""
from __future__ import annotations

import json
import os
from pathlib import Path

from jwcrypto.jwk import JWK

from autograder.lms.lti_config import TEMPLATE, read_config

SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly")


def public_key_set(private_pem: bytes) -> dict:
    """The JWKS of the private key's public half, with its key id (the RFC 7638 thumbprint pylti1p3 signs with)."""
    public = json.loads(JWK.from_pem(private_pem).export_public())
    public.update(alg="RS256", use="sig")
    return {"keys": [public]}


def make_keys(config_path: Path, force: bool = False) -> str:
    """Write the key (and a config to fill in, when there is none); return what to give the LMS administrator."""
    if not config_path.exists():
        config_path.parent.mkdir(parents=True, exist_ok=True)
        config_path.write_text(TEMPLATE)
    config = read_config(config_path, need_platform=False)
    key_file = config.key_file
    if key_file.exists() and not force:
        made = "kept the existing key"
    else:
        key = JWK.generate(kty="RSA", size=2048)
        key_file.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(key.export_to_pem(private_key=True, password=None))
        made = "wrote a new key" + (" (the LMS must get the new key set below)" if force else "")
    key_set = public_key_set(key_file.read_bytes())
    key_set_file = key_file.with_name("lti-keyset.json")
    key_set_file.write_text(json.dumps(key_set, indent=2) + "\n")
    return "\n".join([
        f"{made}: {key_file} (private: it signs the tool's token requests; never share it)",
        f"The public key set, for the LMS administrator ({key_set_file}):",
        json.dumps(key_set, indent=2),
        "",
        "Ask the LMS administrator to register an LTI 1.3 tool with:",
        "  public key: the key set above (Canvas: Developer Keys > + LTI Key > Public JWK; Moodle: Manage tools >",
        "    configure a tool manually > Public key type: Keyset, or RSA key with the PEM of the key)",
        "  services (scopes): " + ", ".join(SCOPES),
        "  (the tool is never launched: any https address of the course page serves as its redirect and login URL)",
        "and to give you back the client id, the deployment id, the token URL, and the course's line items and",
        f"memberships URLs; write them into {config_path}, then: python -m autograder lms push --assignment <name>",
        "--dry-run",
    ])
