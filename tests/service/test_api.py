"""Keys, signatures, verification and KEM over real HTTP, checked against the library; bad input."""

from __future__ import annotations

import base64
import json
import hashlib
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from pqforge.client import Client, ServiceError
from pqforge.errors import InvalidSignature
from pqforge.mayo import MAYO2
from pqforge.mceliece import McEliece348864

from .conftest import Server, bearer, httpx, wait_until


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture(scope="module")
def client(server):
    with Client(server.url, server.admin) as c:
        yield c


@pytest.fixture(scope="module")
def mayo_key(client):
    return client.create_key("mayo-2", label="test")


@pytest.fixture(scope="module")
def kem_key(client):
    return client.create_key("Classic-McEliece-348864")


def test_create_get_and_list_paginated(client, mayo_key):
    assert mayo_key["alg"] == "MAYO-2" and mayo_key["kind"] == "signature" and mayo_key["state"] == "enabled"
    assert len(mayo_key["public_key"]) == MAYO2.public_key_size
    assert client.get_key(mayo_key["id"]) == mayo_key
    made = {mayo_key["id"]} | {client.create_key("MAYO-2")["id"] for _ in range(4)}
    seen, after = [], None
    while True:
        page = client.list_keys(limit=2, after=after)
        assert len(page["keys"]) <= 2
        seen += [k["id"] for k in page["keys"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert made <= set(seen) and len(seen) == len(set(seen))


def test_sign_one_and_many_verify_with_the_library(client, mayo_key, server):
    pk = MAYO2.public_key_from_bytes(mayo_key["public_key"])
    signature = client.sign(mayo_key["id"], b"one message")
    pk.verify(signature, b"one message")
    messages = [bytes([i]) * i for i in range(20)]
    signatures = client.sign_many(mayo_key["id"], messages)
    assert list(pk.verify_many(messages, signatures)) == [True] * 20
    # the audit table holds one row per signed message: token, key, digest
    rows = sqlite3.connect(server.store[len("sqlite:///"):]).execute(
        "SELECT token_id, operation, message_sha256 FROM audit WHERE key_id = ?", (mayo_key["id"],)).fetchall()
    digests = {hashlib.sha256(m).hexdigest() for m in messages + [b"one message"]}
    assert {r[2] for r in rows} == digests
    assert {r[1] for r in rows} == {"sign"} and {r[0] for r in rows} == {server.admin.split("_")[1]}


def test_verify_by_key_id_and_by_public_key(client, mayo_key):
    sk = MAYO2.generate_private_key()
    local_sig = sk.sign(b"local")
    client.verify(local_sig, b"local", public_key=sk.public_key())
    with pytest.raises(InvalidSignature):
        client.verify(local_sig, b"other", public_key=sk.public_key())
    signature = client.sign(mayo_key["id"], b"stored")
    client.verify(signature, b"stored", key_id=mayo_key["id"])
    with pytest.raises(InvalidSignature):
        client.verify(local_sig, b"local", key_id=mayo_key["id"])
    verdicts = client.verify_many([b"stored", b"x", b"stored"], [signature, signature, local_sig],
                                  public_key=mayo_key["public_key"], alg="MAYO-2")
    assert verdicts == [True, False, False]


def test_kem_round_trip_against_the_library(client, kem_key, server):
    pk = McEliece348864.public_key_from_bytes(kem_key["public_key"])
    ciphertext, shared = client.encapsulate(kem_key["id"])
    assert client.decapsulate(kem_key["id"], ciphertext) == shared
    local_ct, local_shared = pk.encapsulate()      # encapsulated here, decapsulated by the service
    assert client.decapsulate(kem_key["id"], local_ct) == local_shared
    rows = sqlite3.connect(server.store[len("sqlite:///"):]).execute(
        "SELECT operation FROM audit WHERE key_id = ?", (kem_key["id"],)).fetchall()
    assert rows == [("decapsulate",), ("decapsulate",)]


def test_disable_and_destroy(client, server):
    key = client.create_key("MAYO-2")
    client.sign(key["id"], b"before")
    assert client.disable_key(key["id"])["state"] == "disabled"
    with pytest.raises(ServiceError) as err:
        client.sign(key["id"], b"after")
    assert err.value.status == 409 and err.value.field == "key_id"
    db_path = server.store[len("sqlite:///"):]
    sealed = sqlite3.connect(db_path).execute("SELECT sealed_secret FROM keys WHERE id = ?", (key["id"],)).fetchone()[0]
    assert client.destroy_key(key["id"])["state"] == "destroyed"
    for path in (db_path, db_path + "-wal"):       # neither the database nor its log keeps the old secret
        if os.path.exists(path):
            assert sealed[12:40] not in open(path, "rb").read()
    assert client.get_key(key["id"])["state"] == "destroyed"
    row = sqlite3.connect(server.store[len("sqlite:///"):]).execute(
        "SELECT sealed_secret FROM keys WHERE id = ?", (key["id"],)).fetchone()
    assert row == (None,)
    with pytest.raises(ServiceError) as err:
        client.sign(key["id"], b"after")
    assert err.value.status == 409


def test_health_metrics_and_openapi(server, client, mayo_key):
    assert httpx.get(server.url + "/healthz").json() == {"status": "ok"}
    ready = httpx.get(server.url + "/readyz")
    assert ready.status_code == 200 and ready.json()["warmed_up"] is True
    client.sign(mayo_key["id"], b"metered")
    text = httpx.get(server.url + "/metrics").text
    for name in ("pqforge_requests_total", "pqforge_request_seconds_bucket", "pqforge_batch_size_bucket",
                 "pqforge_queue_depth", 'operation="sign"', 'backend="cpu"'):
        assert name in text
    paths = httpx.get(server.url + "/openapi.json").json()["paths"]
    assert {"/v1/keys", "/v1/keys/{key_id}/sign", "/v1/verify", "/v1/keys/{key_id}/decapsulate"} <= set(paths)


def test_openapi_declares_bearer_tokens(server):
    document = httpx.get(server.url + "/openapi.json").json()
    scheme = document["components"]["securitySchemes"]["bearer"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    assert "pqforge tokens create" in scheme["description"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            needs_token = path.startswith("/v1/")
            assert (operation.get("security") == [{"bearer": []}]) == needs_token, (method, path, operation)


def test_single_message_hot_path_answers_like_the_rest(server, mayo_key):
    """Single-message sign and verify bypass FastAPI's routing; their answers, errors and metrics
    are the same as elsewhere, and other methods or longer paths still reach FastAPI."""
    kid = mayo_key["id"]
    signed = _post(server, f"/v1/keys/{kid}/sign", {"message": b64(b"hot path")})
    assert signed.status_code == 200 and signed.headers["content-type"] == "application/json"
    assert int(signed.headers["content-length"]) == len(signed.content)
    signature = base64.b64decode(signed.json()["signature"])
    MAYO2.public_key_from_bytes(mayo_key["public_key"]).verify(signature, b"hot path")
    verdict = _post(server, "/v1/verify", {"key_id": kid, "message": b64(b"hot path"), "signature": b64(signature)})
    assert verdict.status_code == 200 and verdict.json() == {"valid": True}
    verdict = _post(server, "/v1/verify", {"key_id": kid, "message": b64(b"other"), "signature": b64(signature)})
    assert verdict.json() == {"valid": False}
    refused = httpx.post(server.url + f"/v1/keys/{kid}/sign", json={"message": ""})
    assert refused.status_code == 401 and refused.headers["WWW-Authenticate"] == "Bearer"
    assert refused.json()["error"]["field"] == "Authorization"
    assert _error(_post(server, "/v1/verify", content=b"[1, 2]"), 400, "body")
    wrong_method = httpx.get(server.url + f"/v1/keys/{kid}/sign", headers=bearer(server.admin))
    assert wrong_method.status_code == 405 and wrong_method.headers["Allow"] == "POST"
    assert wrong_method.json()["error"]["message"] == f"/v1/keys/{kid}/sign does not take GET; " \
                                                      "the routes are listed at /docs"
    no_route = _post(server, f"/v1/keys/{kid}/sign/more", {"message": ""})
    assert no_route.status_code == 404 and no_route.json()["error"] == {
        "kind": "not_found", "message": f"no route POST /v1/keys/{kid}/sign/more; the routes are listed at /docs",
        "field": None}
    text = httpx.get(server.url + "/metrics").text
    assert 'pqforge_requests_total{operation="verify",status="200"}' in text
    assert 'pqforge_requests_total{operation="sign",status="401"}' in text

def _post(server, path, body=None, content=None, token="admin", headers=None):
    token = server.admin if token == "admin" else token
    return httpx.post(server.url + path, json=body, content=content,
                      headers={**bearer(token), "Content-Type": "application/json", **(headers or {})})


def _error(response, status, field):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["field"] == field, error
    assert error["message"]
    return error["message"]


def test_bad_input_names_the_field(server, mayo_key, kem_key):
    kid = mayo_key["id"]
    assert "JSON" in _error(_post(server, f"/v1/keys/{kid}/sign", content=b'{"message": '), 400, "body")
    assert "base64" in _error(_post(server, f"/v1/keys/{kid}/sign", {"message": "not base64!"}), 422, "message")
    assert "missing" in _error(_post(server, f"/v1/keys/{kid}/sign", {}), 422, "message")
    assert "unexpected" in _error(_post(server, f"/v1/keys/{kid}/sign", {"message": "", "x": 1}), 422, "x")
    assert "MAYO-2" in _error(_post(server, "/v1/keys", {"alg": "MAYO-9"}), 422, "alg")
    _error(_post(server, "/v1/keys/k_0000000000000000/sign", {"message": ""}), 404, "key_id")
    _error(_post(server, f"/v1/keys/{kem_key['id']}/sign", {"message": ""}), 422, "key_id")
    assert "base64" in _error(_post(server, "/v1/verify", {"key_id": kid, "message": "", "signature": "x!"}),
                              422, "signature")
    msg = _error(_post(server, "/v1/verify", {"alg": "MAYO-2", "public_key": b64(b"x"), "message": "",
                                              "signature": b64(b"x")}), 422, "public_key")
    assert str(MAYO2.public_key_size) in msg
    _error(_post(server, "/v1/verify", {"message": "", "signature": ""}), 422, "key_id")
    _error(_post(server, "/v1/verify-many", {"key_id": kid, "messages": [""], "signatures": []}), 422, "signatures")
    _error(_post(server, f"/v1/keys/{kid}/sign-many", {"messages": [""] * 65}), 422, "messages")
    msg = _error(_post(server, f"/v1/keys/{kid}/sign-many", {"messages": ["", "AA==", "no!", 7]}), 422, "messages")
    assert "messages: index 2: expected base64" in msg        # the array index, counted from 0 as in JSON
    assert "list" in _error(_post(server, f"/v1/keys/{kid}/sign-many", {"messages": "AA=="}), 422, "messages")
    assert "signatures: index 0:" in _error(_post(server, "/v1/verify-many", {"key_id": kid, "messages": [""],
                                                                 "signatures": [None]}), 422, "signatures")
    msg = _error(_post(server, f"/v1/keys/{kem_key['id']}/decapsulate", {"ciphertext": b64(b"c" * 5)}),
                 422, "ciphertext")
    assert str(McEliece348864.ciphertext_size) in msg
    big = _post(server, f"/v1/keys/{kid}/sign", {"message": b64(b"m" * (1 << 20))})
    _error(big, 413, "body")
    # the service still answers normally afterwards
    assert _post(server, f"/v1/keys/{kid}/sign", {"message": b64(b"fine")}).status_code == 200


def test_a_signature_of_the_wrong_length_is_not_valid(server, mayo_key):
    # as in the library (verify_many answers False): a malformed signature is simply not valid
    kid, pk = mayo_key["id"], mayo_key["public_key"]
    good = base64.b64decode(_post(server, f"/v1/keys/{kid}/sign", {"message": b64(b"m")}).json()["signature"])
    by_id, by_key = {"key_id": kid}, {"alg": "MAYO-2", "public_key": b64(pk)}
    for key in (by_id, by_key):
        for signature in (b"", good[:-1], good + b"\0", b"x" * 10):
            answer = _post(server, "/v1/verify", {**key, "message": b64(b"m"), "signature": b64(signature)})
            assert answer.status_code == 200 and answer.json() == {"valid": False}, answer.text
        answer = _post(server, "/v1/verify-many", {**key, "messages": [b64(b"m")] * 3,
                                                   "signatures": [b64(good), b64(good[:10]), b64(good)]})
        assert answer.status_code == 200 and answer.json() == {"valid": [True, False, True]}, answer.text
    with pytest.raises(InvalidSignature):
        MAYO2.public_key_from_bytes(pk).verify(good[:-1], b"m")      # the library's own answer
    # a public key of the wrong length is still refused, naming the field and the size expected
    short = {"alg": "MAYO-2", "public_key": b64(pk[:-1]), "message": b64(b"m"), "signature": b64(good)}
    assert str(MAYO2.public_key_size) in _error(_post(server, "/v1/verify", short), 422, "public_key")


def test_an_unauthenticated_request_gets_401_whatever_its_body(server, mayo_key):
    # the token is checked before the body is read, on the hot path and on FastAPI's routes alike
    kid = mayo_key["id"]
    for path in (f"/v1/keys/{kid}/sign", f"/v1/keys/{kid}/sign-many", "/v1/keys", "/v1/verify",
                 f"/v1/keys/{kid}/decapsulate"):
        for token in (None, "pqf_0123456789abcdef_" + "A" * 43):
            for content in (b'{"message": ', b"[1, 2]", b'{"unexpected": 1}'):
                answer = _post(server, path, content=content, token=token)
                assert _error(answer, 401, "Authorization"), (path, token, content)
                assert answer.headers["WWW-Authenticate"] == "Bearer"


def test_a_body_declared_too_large_gets_413_before_the_token_is_checked(server, mayo_key):
    # the documented order: the declared size (from the header alone), then the token
    kid = mayo_key["id"]
    for path in (f"/v1/keys/{kid}/sign", f"/v1/keys/{kid}/decapsulate", "/v1/keys"):
        for token in (None, "pqf_0123456789abcdef_" + "A" * 43):
            _error(_post(server, path, content=b"x" * ((1 << 20) + 1), token=token), 413, "body")


def test_an_unknown_field_is_refused_on_every_route(server, client, mayo_key, kem_key):
    kid, kem, spare = mayo_key["id"], kem_key["id"], client.create_key("MAYO-2")["id"]
    m = b64(b"m")
    cases = [("POST", "/v1/keys", {"alg": "MAYO-2"}),
             ("POST", f"/v1/keys/{kid}/sign", {"message": m}),
             ("POST", f"/v1/keys/{kid}/sign-many", {"messages": [m]}),
             ("POST", "/v1/verify", {"key_id": kid, "message": m, "signature": m}),
             ("POST", "/v1/verify-many", {"key_id": kid, "messages": [m], "signatures": [m]}),
             ("POST", f"/v1/keys/{kem}/encapsulate", {}),
             ("POST", f"/v1/keys/{kem}/decapsulate", {"ciphertext": b64(bytes(McEliece348864.ciphertext_size))}),
             ("POST", f"/v1/keys/{spare}/disable", {}),
             ("DELETE", f"/v1/keys/{spare}", {})]
    for method, path, body in cases:
        answer = httpx.request(method, server.url + path, json={**body, "unexpected": 1},
                               headers=bearer(server.admin))
        assert _error(answer, 422, "unexpected") == "unexpected: unexpected field", (method, path)
    assert client.get_key(spare)["state"] == "enabled"          # refused before anything was done
    # the routes without fields still take no body, or an empty object
    assert httpx.post(server.url + f"/v1/keys/{kem}/encapsulate", headers=bearer(server.admin)).status_code == 200
    assert _post(server, f"/v1/keys/{kem}/encapsulate", {}).status_code == 200
    assert client.disable_key(spare)["state"] == "disabled"


def test_a_body_declared_other_than_json_is_refused_on_every_route(server, mayo_key):
    # as FastAPI does on its routes: the hot path does not parse a text/plain body as JSON
    kid = mayo_key["id"]
    body = json.dumps({"message": b64(b"m")}).encode()
    for path in (f"/v1/keys/{kid}/sign", f"/v1/keys/{kid}/sign-many", "/v1/verify"):
        for kind in ("text/plain", "application/x-www-form-urlencoded"):   # curl -d sends the second
            refused = _post(server, path, content=body, headers={"Content-Type": kind})
            message = _error(refused, 400, "body")
            assert "JSON" in message and "Content-Type must be application/json" in message, message
            assert repr(kind) in message, message
    # a JSON Content-Type with a body that is not JSON: the message is about the body
    message = _error(_post(server, f"/v1/keys/{kid}/sign", content=b"{"), 400, "body")
    assert "expected a JSON object" in message
    for kind in ("application/json; charset=utf-8", "application/vnd.pqforge+json"):
        signed = _post(server, f"/v1/keys/{kid}/sign", content=body, headers={"Content-Type": kind})
        assert signed.status_code == 200, signed.text


def test_body_limit_applies_to_chunked_bodies(server, mayo_key):
    def chunks():
        yield b'{"message": "'
        for _ in range(200):
            yield b"A" * 8192
        yield b'"}'
    response = httpx.post(server.url + f"/v1/keys/{mayo_key['id']}/sign", content=chunks(),
                          headers={**bearer(server.admin), "Content-Type": "application/json"})
    _error(response, 413, "body")


def test_no_secret_material_in_responses_or_logs(server, client):
    key = client.create_key("MAYO-2")
    kem = client.create_key("Classic-McEliece-348864")
    client.sign(key["id"], b"x")
    ct, _ = client.encapsulate(kem["id"])
    client.decapsulate(kem["id"], ct)
    # open the sealed secrets with the master key, the way only the service can
    from pqforge.service.sealing import Sealer, load_master_key
    master, _ = load_master_key(server.workdir / "pqforge-master.key", create=False)
    db = sqlite3.connect(server.store[len("sqlite:///"):])
    secrets = [master]
    for kid, alg in ((key["id"], "MAYO-2"), (kem["id"], "Classic-McEliece-348864")):
        sealed = db.execute("SELECT sealed_secret FROM keys WHERE id = ?", (kid,)).fetchone()[0]
        secret = Sealer(master).open(kid, alg, sealed)
        assert secret not in sealed
        secrets.append(secret)
    answers = [httpx.get(server.url + p, headers=bearer(server.admin)).text
               for p in ("/v1/keys?limit=1000", f"/v1/keys/{key['id']}", f"/v1/keys/{kem['id']}", "/metrics")]
    texts = answers + [server.log(), (server.workdir / "pqforge.db").read_bytes().decode("latin-1")]
    for secret in secrets:
        forms = (secret.hex(), base64.b64encode(secret).decode(), secret[:16].hex(),
                 base64.b64encode(secret[:24]).decode()[:24])
        for text in texts:
            for form in forms:
                assert form not in text
    # the master key file is private to its owner
    assert (server.workdir / "pqforge-master.key").stat().st_mode & 0o077 == 0


def test_tls_with_a_certificate_and_key(tmp_path):
    import datetime
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    srv = Server(tmp_path / "srv", settings={"ssl_certfile": str(cert_path), "ssl_keyfile": str(key_path)})
    token = srv.token("admin")
    srv.start()
    try:
        assert srv.url.startswith("https://")
        with Client(srv.url, token, verify=ssl.create_default_context(cafile=str(cert_path))) as c:
            key_info = c.create_key("MAYO-2")
            MAYO2.public_key_from_bytes(key_info["public_key"]).verify(c.sign(key_info["id"], b"tls"), b"tls")
        with pytest.raises(httpx.HTTPError):       # plain HTTP to the TLS port is refused
            httpx.get(srv.url.replace("https://", "http://") + "/healthz")
    finally:
        srv.stop()


def test_ready_once_the_served_paths_compile_and_the_rest_compiles_in_a_background_process(tmp_path):
    srv = Server(tmp_path / "rest", settings={"compile_rest": True}).start(timeout=600)
    try:
        body = httpx.get(srv.url + "/readyz", timeout=60).json()
        assert body["ready"] is True and body["warmed_up"] is True and isinstance(body["compiling"], bool)
        pid = int(re.search(r"compiling the other paths of MAYO-2 in the background \(pid (\d+)\)", srv.log()).group(1))
        deadline = time.monotonic() + 600
        while httpx.get(srv.url + "/readyz", timeout=60).json()["compiling"]:      # pqforge precompile, at low priority
            assert time.monotonic() < deadline, srv.log()
            time.sleep(0.5)
        wait_until(lambda: not Path(f"/proc/{pid}").exists(), 60, f"{pid} not reaped")     # ended and reaped
    finally:
        srv.stop()
