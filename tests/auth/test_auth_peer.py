"""Peer credentials and peer URL checks (gateway/federation/peer_auth.py)."""

from __future__ import annotations

import pytest

from gateway.federation.peer_auth import (
    PeerAuth,
    check_peer_urls,
    check_settings,
    discovered_peer_allowed,
    url_allowed,
)
from gateway.settings import config
from gateway.settings.config import ConfigError

CALLER = "Bearer caller-token"
OWN = "Bearer gateway-token"


@pytest.mark.parametrize(("forward", "own", "caller", "discovered", "sent"), [
    # The gateway's own calls (health check, entity fetch, relay): its credential...
    (False, OWN, None, False, OWN),
    (True, OWN, None, False, OWN),
    # ...never to a peer found through mDNS.
    (False, OWN, None, True, None),
    (True, OWN, None, True, None),
    # forward_auth: the caller's token goes, and wins over the gateway's own.
    (True, OWN, CALLER, False, CALLER),
    (True, "", CALLER, True, CALLER),
    # Without forward_auth the caller's token stays here; the forward carries no caller
    # credential, so the gateway's own goes (configured peers only).
    (False, OWN, CALLER, False, OWN),
    (False, OWN, CALLER, True, None),
    (False, "", CALLER, False, None),
    (False, "", None, False, None),
])
def test_which_authorization_goes_to_a_peer(forward: bool, own: str, caller: str | None,
                                            discovered: bool, sent: str | None) -> None:
    auth = PeerAuth(forward_auth=forward, peer_auth_header=own)
    assert auth.authorization(caller=caller, discovered=discovered) == sent


def test_from_settings() -> None:
    s = config.load(None, ["aggregation.forward_auth=true",
                           "aggregation.peer_auth_header=Bearer abc"])
    assert PeerAuth.from_settings(s) == PeerAuth(True, "Bearer abc", False)
    assert s.as_dict()["aggregation.peer_auth_header"] == "***"


def test_require_tls() -> None:
    assert url_allowed("http://a:8080", False) and url_allowed("https://a", True)
    assert not url_allowed("http://a:8080", True)
    check_peer_urls(["https://a", "", "http://b"], require_tls=False)
    with pytest.raises(ConfigError, match="'aggregation.require_tls'.*http://b"):
        check_peer_urls(["https://a", "http://b"], require_tls=True)
    with pytest.raises(ConfigError, match="'aggregation.peer_urls'"):
        check_peer_urls(["ftp://a"], require_tls=False)
    assert not discovered_peer_allowed("http://10.0.0.2:8080", True)
    assert discovered_peer_allowed("https://10.0.0.2:8443", True)


def test_startup_check_of_settings() -> None:
    check_settings(config.load())
    check_settings(config.load(None, ["aggregation.require_tls=true",
                                      "aggregation.peer_urls=[https://a:8443]"]))
    with pytest.raises(ConfigError, match="'aggregation.require_tls'"):
        check_settings(config.load(None, ["aggregation.require_tls=true",
                                          "aggregation.peer_urls=http://a:8080"]))
    with pytest.raises(ConfigError, match="peer_scheme"):
        check_settings(config.load(None, ["aggregation.require_tls=true",
                                          "aggregation.discover=true"]))
    check_settings(config.load(None, ["aggregation.require_tls=true", "aggregation.discover=true",
                                      "aggregation.peer_scheme=https"]))
