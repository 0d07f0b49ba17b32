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
