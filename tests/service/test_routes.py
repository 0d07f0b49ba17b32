"""The route table that the metrics and the fast path share (``service.middleware.route``)."""

import pytest

pytest.importorskip("fastapi")

from pqforge.service.middleware import route  # noqa: E402


@pytest.mark.parametrize("method, path, expected", [
    ("POST", "/v1/keys/k1/sign", ("sign", "k1")),
    ("POST", "/v1/keys/k1/sign-many", ("sign-many", "k1")),
    ("POST", "/v1/verify", ("verify", None)),
    ("POST", "/v1/verify-many", ("verify-many", None)),
    ("POST", "/v1/keys/k1/decapsulate", ("decapsulate", "k1")),
    ("GET", "/v1/keys", ("list-keys", None)),
    ("POST", "/v1/keys", ("create-key", None)),
    ("GET", "/v1/keys/k1", ("get-key", "k1")),
    ("DELETE", "/v1/keys/k1", ("destroy-key", "k1")),
    ("GET", "/healthz", ("healthz", None)),
])
def test_each_route_is_named_with_its_key(method, path, expected):
    assert route(method, path) == expected


@pytest.mark.parametrize("path", ["/v1/keys/k1/sign/more", "/v1/keys//sign", "/v1/keys/k1/steal", "/v2/verify", "/"])
def test_anything_else_is_other_and_never_a_label_from_the_path(path):
    operation, _ = route("POST", path)
    assert operation == "other"


def test_base64_fields_accept_exactly_what_the_standard_library_validates():
    """The models' decoder (one C call on Python 3.11+) against ``base64.b64decode(validate=True)``,
    the documented rule, on every string of up to five characters over an alphabet of edge cases."""
    import base64
    import binascii
    import itertools

    from pydantic import ValidationError

    from pqforge.service import models

    def reference(text):
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None

    def ours(text):
        try:
            return models.Sign.model_validate({"message": text}).message
        except ValidationError:
            return None

    tried = 0
    for n in range(6):
        for chars in itertools.product("AQ+/=\n -é", repeat=n):
            text = "".join(chars)
            assert ours(text) == reference(text), repr(text)
            tried += 1
    assert tried > 60000 and ours("AA==") == b"\0" and ours("AA=") is None


@pytest.fixture
def in_process(tmp_path, monkeypatch):
    """post(content_type, {path: body}) -> [(status, answer)]: requests to the service's ASGI app in
    this process, with an admin token; and the app's stored MAYO-2 and McEliece keys."""
    import asyncio
    import base64
    import os

    import httpx

    from pqforge.service import Settings, app as service_app, tokens
    monkeypatch.setenv("PQFORGE_MASTER_KEY", base64.b64encode(os.urandom(32)).decode())
    monkeypatch.setenv("PQFORGE_MALLOC_TUNING", "0")                # leave this process's allocator alone
    app = service_app.create_app(Settings(store=f"sqlite:///{tmp_path / 'pqforge.db'}", warm_up=[]))
    service = app.state.service
    kem, signing = service.keys.create("Classic-McEliece-348864"), service.keys.create("MAYO-2")
    _, token = tokens.create(service.store, ["admin"])

    async def requests(content_type, bodies):
        headers = {"Authorization": f"Bearer {token}",
                   **({"Content-Type": content_type} if content_type is not None else {})}
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://pqforge") as client:
            return [await client.post(path, content=body, headers=headers) for path, body in bodies.items()]

    def post(content_type, bodies):
        return [(r.status_code, r.json()) for r in asyncio.run(requests(content_type, bodies))]
    return post, signing, kem


def test_a_json_body_without_content_type_is_taken_on_every_route(in_process):
    """As documented and as the fast path reads it: a body with no Content-Type is JSON, on the
    FastAPI routes too (found by fuzz/fuzz_service.py: decapsulate answered 400 where sign
    answered 200, and with an empty Content-Type the other way round); another media type is a
    400 on both."""
    import base64
    post, signing, kem = in_process
    bodies = {f"/v1/keys/{kem.id}/decapsulate": b'{"ciphertext":"%s"}' % base64.b64encode(bytes(96)),
              f"/v1/keys/{signing.id}/sign": b'{"message":"aGVsbG8="}'}
    assert [status for status, _ in post(None, bodies)] == [200, 200]
    assert [status for status, _ in post("", bodies)] == [200, 200]     # an empty header: as absent on both
    assert [status for status, _ in post("application/json", bodies)] == [200, 200]
    assert [status for status, _ in post("text/plain", bodies)] == [400, 400]


def test_a_body_that_is_not_utf8_is_bad_json_on_every_route(in_process):
    # found by fuzz/fuzz_service.py: FastAPI's routes answered "bad_request", the fast path "bad_json"
    post, signing, kem = in_process
    body = b'{"message":"aGV\xc0bG8="}'
    answers = post("application/json", {f"/v1/keys/{kem.id}/decapsulate": body, f"/v1/keys/{signing.id}/sign": body})
    assert [(status, answer["error"]["kind"]) for status, answer in answers] == [(400, "bad_json")] * 2


def test_an_empty_body_is_bad_json_on_every_route(in_process):
    # found by fuzz/fuzz_service.py: FastAPI's routes answered 422 "required field is missing",
    # the fast path 400 bad_json
    post, signing, kem = in_process
    answers = post(None, {f"/v1/keys/{kem.id}/decapsulate": b"", f"/v1/keys/{signing.id}/sign": b""})
    assert [(status, answer["error"]["kind"]) for status, answer in answers] == [(400, "bad_json")] * 2
