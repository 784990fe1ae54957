"""IPv4 addresses are told apart without the ``ipaddress`` classes, with the same answers.

A pasted server log holds an address on nearly every line, and ``IPv4Address(text)`` with
``.is_global`` (which walks the list of non-global networks) cost a third of the CPU of an
ingest of such sessions. :func:`ipv4_value` parses a dotted quad, and :func:`_v4_global`
looks the address up in a table of ranges. The definition they are held to is the running
Python's own ``ipaddress``: which networks ``is_global`` excludes changes between patch
releases (python/cpython#113171, backported to 3.11 in python/cpython#118227; whether
100.64.0.0/10 is private is still open in python/cpython#119812), so the table is built from
that module's constants and asks it for each range, never a copy of its lists.
"""

from __future__ import annotations

import ipaddress
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.config import RedactionConfig
from kbtools.redact import checks
from kbtools.redact.checks import find_private_ipv4, find_public_ipv4, ipv4_value

CONFIG = RedactionConfig()


def parsed(text: str) -> int | None:
    try:
        return int(ipaddress.IPv4Address(text))
    except ValueError:
        return None


def constant_networks() -> list[ipaddress.IPv4Network]:
    found = []
    for value in vars(ipaddress.IPv4Address._constants).values():  # type: ignore[attr-defined]
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ipaddress.IPv4Network):
                found.append(item)
    return found


def test_every_octet_spelling_is_taken_or_refused_as_ipaddress_does() -> None:
    spellings = [str(n) for n in range(1000)] + ["00", "01", "007", "0000", "1234", "", "٣", "1٣", "+1", " 1", "1 "]
    for octet in spellings:
        for at in range(4):
            parts = ["10", "20", "30", "40"]
            parts[at] = octet
            text = ".".join(parts)
            assert ipv4_value(text) == parsed(text), text


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="0123456789.٣１ \n-:/ax%", max_size=18))
def test_any_text_is_taken_or_refused_as_ipaddress_does(text: str) -> None:
    assert ipv4_value(text) == parsed(text)


def test_is_global_at_every_edge_of_every_network_python_names() -> None:
    is_global = checks._v4_global()
    networks = constant_networks()
    assert networks  # the table is in use on this Python, not the fallback
    edges = {0, (1 << 32) - 1}
    for network in networks:
        first, last = int(network.network_address), int(network.broadcast_address)
        edges |= {first - 1, first, first + 1, last - 1, last, last + 1}
    for value in sorted(v for v in edges if 0 <= v < 1 << 32):
        assert is_global(value) == ipaddress.IPv4Address(value).is_global, ipaddress.IPv4Address(value)


def test_is_global_of_random_addresses() -> None:
    is_global = checks._v4_global()
    rng = random.Random(113171)
    for value in [rng.getrandbits(32) for _ in range(100_000)] + [rng.getrandbits(16) << 16 for _ in range(2_000)]:
        assert is_global(value) == ipaddress.IPv4Address(value).is_global, ipaddress.IPv4Address(value)


def test_without_the_constants_every_address_is_asked_of_ipaddress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(ipaddress.IPv4Address, "_constants")
    asked = checks._v4_global.__wrapped__()  # type: ignore[attr-defined]
    monkeypatch.undo()
    for text in ("8.8.8.8", "10.1.2.3", "100.64.0.1", "192.0.2.7", "203.0.113.9", "93.184.216.34"):
        assert asked(int(ipaddress.IPv4Address(text))) == ipaddress.IPv4Address(text).is_global


# --------------------------------------------------------------------------- the two rules


def old_private(text: str) -> list[tuple[int, int]]:
    """find_private_ipv4 as it was written with the ipaddress classes."""
    networks = [ipaddress.ip_network(n) for n in checks._PRIVATE_V4]
    return [(s, e) for s, e, a in _old_quads(text) if any(a in net for net in networks)]


def old_public(text: str) -> list[tuple[int, int]]:
    return [
        (s, e)
        for s, e, a in _old_quads(text)
        if a.is_global and str(a) not in checks._WELL_KNOWN_ADDRESSES and not checks._version_suffix(text, e)
    ]


def _old_quads(text: str) -> list[tuple[int, int, ipaddress.IPv4Address]]:
    found = []
    for match in checks._IPV4_TAIL.finditer(text):
        start, lead = match.start(), 0
        while start > 0 and lead < 4 and text[start - 1] in "0123456789":
            start, lead = start - 1, lead + 1
        if not 1 <= lead <= 3 or not checks._token_start(text, start):
            continue
        try:
            found.append((start, match.end(), ipaddress.IPv4Address(text[start : match.end()])))
        except ValueError:
            continue
    return found


def _address(rng: random.Random, networks: list[ipaddress.IPv4Network]) -> str:
    roll = rng.random()
    if roll < 0.4:  # inside or at the edge of a network Python names, or of the private ones
        net = rng.choice(networks)
        value = int(net.network_address) + rng.choice([0, 1, net.num_addresses - 1, net.num_addresses])
        value = min(max(value, 0), (1 << 32) - 1)
        return str(ipaddress.IPv4Address(value))
    if roll < 0.55:
        return rng.choice(sorted(checks._WELL_KNOWN_ADDRESSES))
    if roll < 0.7:  # what is refused: a leading zero, an octet over 255, five parts
        return rng.choice(["010.1.2.3", "1.2.3.256", "300.1.1.1", "1.2.3.4.5", "1.02.3.4", "٣.1.1.1"])
    return str(ipaddress.IPv4Address(rng.getrandbits(32)))


def test_both_rules_find_what_they_found_with_the_ipaddress_classes() -> None:
    rng = random.Random(7)
    networks = constant_networks() + [ipaddress.ip_network(n) for n in checks._PRIVATE_V4]
    before = ["", " ", "client=", "x", "1", "\\n", "host ", "v", "[", "0."]
    after = ["", " ", ":8080", "/24", "rc1", "-beta", "-1", ".5", "0", ",", "\n", "+build"]
    for _ in range(3_000):
        line = " ".join(
            f"{rng.choice(before)}{_address(rng, networks)}{rng.choice(after)}" for _ in range(rng.randint(1, 6))
        )
        text = f"2026-06-08T23:46:08Z INFO {line} status=200"
        assert list(find_private_ipv4(text, CONFIG)) == old_private(text), text
        assert list(find_public_ipv4(text, CONFIG)) == old_public(text), text


def test_the_quads_of_one_text_are_not_given_for_another() -> None:
    first, second = "from 10.0.0.1 to 8.8.4.4", "from 93.184.216.34 to 10.9.9.9"
    assert list(find_private_ipv4(first, CONFIG)) == [(5, 13)]
    assert list(find_public_ipv4(first, CONFIG)) == []  # a well-known resolver
    assert list(find_public_ipv4(second, CONFIG)) == [(5, 18)]
    assert list(find_private_ipv4(second, CONFIG)) == [(22, 30)]
    # An equal text that is another object is scanned again, and gives the same.
    copy = "".join(["from 10.0.0.1 ", "to 8.8.4.4"])
    assert copy == first and copy is not first
    assert list(find_private_ipv4(copy, CONFIG)) == [(5, 13)]
