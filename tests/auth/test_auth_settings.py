"""Security settings: defaults, lists, redaction, TLS context, and refusals naming the setting."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from gateway.app import make_app
from gateway.http.tls import server_context
from gateway.settings import config
from gateway.settings.config import ConfigError

SECRET = "s" * 40


def test_defaults_match_the_facts() -> None:
    s = config.load()
    assert s["auth.enabled"] is False and s["auth.require_auth_for"] == "write"
    assert s["auth.token_expiry_seconds"] == 3600
    assert s["auth.refresh_token_expiry_seconds"] == 86400
    assert s["auth.jwt_algorithm"] == "HS256" and s["auth.clients"] == ()
    assert s["rate_limiting.enabled"] is False
    assert s["rate_limiting.global_requests_per_minute"] == 600
    assert s["rate_limiting.client_requests_per_minute"] == 60
    assert s["cors.allowed_origins"] == () and s["server.tls.min_version"] == "1.2"
    assert s["aggregation.forward_auth"] is False and s["aggregation.peer_scheme"] == "http"


def test_lists_from_yaml_or_comma_separated(tmp_path: Path) -> None:
    f = tmp_path / "gw.yaml"
    f.write_text("auth:\n  clients:\n    - 'a:b:viewer'\n    - 'c:d:admin'\n")
    assert config.load(f)["auth.clients"] == ("a:b:viewer", "c:d:admin")
    s = config.load(None, ["cors.allowed_origins=http://a, http://b"])
    assert s["cors.allowed_origins"] == ("http://a", "http://b")
    with pytest.raises(ConfigError, match="'auth.clients'"):
        config.load(None, ["auth.clients={a: 1}"])
    with pytest.raises(ConfigError, match="'auth.require_auth_for'"):
        config.load(None, ["auth.require_auth_for=everything"])


def test_secrets_are_redacted() -> None:
    s = config.load(None, [f"auth.jwt_secret={SECRET}", "auth.clients=[a:pw:viewer]",
                           "aggregation.peer_auth_header=Bearer t"])
    shown = s.as_dict()
    assert shown["auth.jwt_secret"] == shown["auth.clients"] == "***"
    assert shown["aggregation.peer_auth_header"] == "***"
    assert SECRET not in repr(shown) and "pw" not in repr(shown)
    assert s.as_dict(redact=False)["auth.jwt_secret"] == SECRET


@pytest.mark.parametrize(("overrides", "named", "hidden"), [
    (["auth.enabled=true"], "auth.jwt_secret", None),
    (["auth.enabled=true", "auth.jwt_secret=too-short-secret"], "auth.jwt_secret",
     "too-short-secret"),
    ([f"auth.jwt_secret={SECRET}", "auth.clients=[a:pa55word:superuser]"], "auth.clients",
     "pa55word"),
    (["auth.enabled=true", "auth.jwt_algorithm=RS256", "auth.jwt_secret=/no/such.pem"],
     "auth.jwt_secret", None),
    (["auth.enabled=true", "auth.jwt_algorithm=RS256"], "auth.jwt_secret", None),
    (["aggregation.require_tls=true", "aggregation.peer_urls=[http://10.1.1.1:8080]"],
     "aggregation.require_tls", None),
    (["cors.allowed_origins=['*']", "cors.allow_credentials=true"], "cors.allow_credentials",
     None),
    (["rate_limiting.enabled=true", "rate_limiting.endpoint_limits=[/apps]"],
     "rate_limiting.endpoint_limits", None),
])
def test_bad_settings_refuse_the_app(tmp_path: Path, overrides: list[str], named: str,
                                     hidden: str | None) -> None:
    with pytest.raises(ConfigError) as exc:
        make_app(config.load(None, [f"state_dir={tmp_path}", *overrides]))
    assert f"'{named}'" in str(exc.value)
    if hidden:
        assert hidden not in str(exc.value)


def test_unwritable_state_dir_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ConfigError, match="'state_dir'"):
        make_app(config.load(None, ["auth.enabled=true", f"auth.jwt_secret={SECRET}",
                                    f"state_dir={blocker}"]))


def test_features_follow_the_settings(tmp_path: Path) -> None:
    from gateway.auth.enforce import AUTH
    from gateway.http.state import STATE

    plain = make_app(config.load(None, [f"state_dir={tmp_path}"]))[STATE]
    assert "auth" not in plain.features and "tls" not in plain.features
    on = make_app(config.load(None, ["auth.enabled=true", f"auth.jwt_secret={SECRET}",
                                     f"state_dir={tmp_path}"]))
    assert "auth" in on[STATE].features
    assert on[AUTH].enabled
    on[AUTH].grants.store.close()


# --- TLS context ----------------------------------------------------------------------------

def test_tls_off_gives_no_context() -> None:
    assert server_context(config.load()) is None


@pytest.mark.parametrize(("overrides", "named"), [
    (["server.tls.enabled=true"], "server.tls.cert_file"),
    (["server.tls.enabled=true", "server.tls.cert_file=/no/cert.pem"], "server.tls.cert_file"),
])
def test_tls_refusals(overrides: list[str], named: str) -> None:
    with pytest.raises(ConfigError, match=f"'{named}'"):
        server_context(config.load(None, overrides))


def test_tls_context_versions_and_client_ca(tmp_path: Path) -> None:
    from tests.integration.test_security_helpers import make_pki

    pki = make_pki(tmp_path)
    base = ["server.tls.enabled=true", f"server.tls.cert_file={pki.server_cert}",
            f"server.tls.key_file={pki.server_key}"]
    ctx = server_context(config.load(None, base))
    assert ctx is not None
    assert ctx.minimum_version == ssl.TLSVersion.TLSv1_2
    assert ctx.maximum_version == ssl.TLSVersion.TLSv1_3
    assert ctx.verify_mode == ssl.CERT_NONE
    strict = server_context(config.load(None, [*base, "server.tls.min_version=1.3",
                                               f"server.tls.client_ca_file={pki.ca}"]))
    assert strict is not None and strict.minimum_version == ssl.TLSVersion.TLSv1_3
    assert strict.verify_mode == ssl.CERT_REQUIRED
    optional = server_context(config.load(None, [*base, f"server.tls.client_ca_file={pki.ca}",
                                                 "server.tls.client_auth=optional"]))
    assert optional is not None and optional.verify_mode == ssl.CERT_OPTIONAL
    with pytest.raises(ConfigError, match="'server.tls.key_file'"):
        server_context(config.load(None, [*base[:2], f"server.tls.key_file={pki.client_key}"]))
