"""The auth matrix: every kind of token against every endpoint; tokens stored only as hashes."""

from __future__ import annotations

import base64
import json
import sqlite3

import pytest

from pqforge.client import Client
from pqforge.mayo import MAYO2

from .conftest import Server, bearer, cli, httpx


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def setup(server):
    with Client(server.url, server.admin) as c:
        key = c.create_key("MAYO-2")
        other = c.create_key("MAYO-2")
        kem = c.create_key("Classic-McEliece-348864")
        ciphertext, _ = c.encapsulate(kem["id"])
        signature = c.sign(key["id"], b"m")
    revoked = server.token("admin")
    done = cli("tokens", "revoke", "--store", server.store, revoked.split("_")[1])
    assert done.returncode == 0, done.stderr
    toks = {scope: server.token(scope) for scope in ("verify", "kem", "sign:*")}
    toks["sign:key"] = server.token(f"sign:{key['id']}")
    toks["sign:other"] = server.token(f"sign:{other['id']}")
    toks["admin"] = server.admin
    toks["revoked"] = revoked
    toks["none"] = None
    toks["malformed"] = "not-a-token"
    toks["unknown"] = "pqf_0123456789abcdef_" + "A" * 43
    toks["wrong secret"] = server.admin[:-4] + "AAAA"
    return {"key": key, "kem": kem, "ciphertext": ciphertext, "signature": signature, "tokens": toks}


def _endpoints(server, s):
    kid, kem = s["key"]["id"], s["kem"]["id"]

    def admin_only_fresh(path_fn, method):
        def call(h):
            with Client(server.url, server.admin) as c:
                fresh = c.create_key("MAYO-2")["id"]
            return h.request(method, path_fn(fresh))
        return call

    verify_body = {"key_id": kid, "message": b64(b"m"), "signature": b64(s["signature"])}
    return {
        "create key": (lambda h: h.post("/v1/keys", json={"alg": "MAYO-2"}), {"admin"}),
        "list keys": (lambda h: h.get("/v1/keys"), {"admin"}),
        "get key": (lambda h: h.get(f"/v1/keys/{kid}"), "any"),
        "disable key": (admin_only_fresh(lambda k: f"/v1/keys/{k}/disable", "POST"), {"admin"}),
        "destroy key": (admin_only_fresh(lambda k: f"/v1/keys/{k}", "DELETE"), {"admin"}),
        "sign": (lambda h: h.post(f"/v1/keys/{kid}/sign", json={"message": b64(b"x")}),
                 {"admin", "sign:*", "sign:key"}),
        "sign many": (lambda h: h.post(f"/v1/keys/{kid}/sign-many", json={"messages": [b64(b"x")]}),
                      {"admin", "sign:*", "sign:key"}),
        "verify": (lambda h: h.post("/v1/verify", json=verify_body), {"admin", "verify"}),
        "verify many": (lambda h: h.post("/v1/verify-many", json={
            "key_id": kid, "messages": [b64(b"m")], "signatures": [b64(s["signature"])]}), {"admin", "verify"}),
        "encapsulate": (lambda h: h.post(f"/v1/keys/{kem}/encapsulate"), {"admin", "kem"}),
        "decapsulate": (lambda h: h.post(f"/v1/keys/{kem}/decapsulate",
                                         json={"ciphertext": b64(s["ciphertext"])}), {"admin", "kem"}),
    }


INVALID = {"revoked", "none", "malformed", "unknown", "wrong secret"}


def test_auth_matrix(server, setup):
    failures = []
    for name, (call, allowed) in _endpoints(server, setup).items():
        for who, token in setup["tokens"].items():
            with httpx.Client(base_url=server.url, headers=bearer(token), timeout=60) as h:
                response = call(h)
            if who in INVALID:
                expected = 401
            elif allowed == "any" or who in allowed:
                expected = 200 if name != "create key" else 201
            else:
                expected = 403
            if response.status_code != expected:
                failures.append(f"{name} with {who}: {response.status_code}, expected {expected}")
            elif expected >= 400:
                error = response.json()["error"]
                assert error["kind"] in ("unauthenticated", "forbidden") and error["message"]
                if expected == 401:
                    assert response.headers["WWW-Authenticate"] == "Bearer"
    assert not failures, "\n".join(failures)


def test_tokens_are_stored_only_as_hashes(server, setup):
    db = sqlite3.connect(server.store[len("sqlite:///"):])
    stored = db.execute("SELECT id, secret_hash FROM tokens").fetchall()
    raw = (server.workdir / "pqforge.db").read_bytes()
    for token in setup["tokens"].values():
        if token and token.startswith("pqf_"):
            secret = token.split("_", 2)[2]
            assert secret.encode() not in raw and all(secret not in h for _, h in stored)
    listed = cli("tokens", "list", "--store", server.store)
    assert listed.returncode == 0
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert any(r["revoked"] for r in rows) and all(set(r) == {"id", "name", "scopes", "revoked", "created"}
                                                   for r in rows)
    for token in setup["tokens"].values():
        if token and token.startswith("pqf_"):
            assert token.split("_", 2)[2] not in listed.stdout


def test_bad_scope_is_refused_by_the_command(server):
    done = cli("tokens", "create", "--store", server.store, "--scope", "sign")
    assert done.returncode == 2 and "sign:<key id>" in done.stderr


def test_public_verification_when_configured(tmp_path):
    srv = Server(tmp_path, settings={"public_verify": True})
    token = srv.token("sign:*")
    srv.start()
    try:
        sk = MAYO2.generate_private_key()
        body = {"alg": "MAYO-2", "public_key": b64(sk.public_key().public_bytes_raw()), "message": b64(b"p"),
                "signature": b64(sk.sign(b"p"))}
        assert httpx.post(srv.url + "/v1/verify", json=body).json() == {"valid": True}
        # signing still needs its token
        assert httpx.post(srv.url + "/v1/keys", json={"alg": "MAYO-2"}).status_code == 401
        assert httpx.post(srv.url + "/v1/keys", json={"alg": "MAYO-2"}, headers=bearer(token)).status_code == 403
        # the API description says so: a token, or none, for verification only
        paths = httpx.get(srv.url + "/openapi.json").json()["paths"]
        assert paths["/v1/verify"]["post"]["security"] == [{"bearer": []}, {}]
        assert paths["/v1/verify-many"]["post"]["security"] == [{"bearer": []}, {}]
        assert paths["/v1/keys"]["post"]["security"] == [{"bearer": []}]
    finally:
        srv.stop()
