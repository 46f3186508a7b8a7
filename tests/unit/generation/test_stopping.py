"""Stop strings across token boundaries, stop tokens, max_tokens."""

from __future__ import annotations

from mcp2026ai.generation.stopping import StopStrings, TokenStop
from mcp2026ai.generation.types import SamplingParams


def feed_all(stops: StopStrings, pieces: list[str]) -> tuple[str, bool]:
    out = ""
    for piece in pieces:
        text, stopped = stops.feed(piece)
        out += text
        if stopped:
            return out, True
    return out + stops.flush(), False


def test_a_stop_string_split_over_pieces_ends_the_text_before_it() -> None:
    assert feed_all(StopStrings(["END"]), ["Hello E", "N", "D and more"]) == ("Hello ", True)


def test_text_that_only_starts_a_stop_string_is_emitted_in_the_end() -> None:
    assert feed_all(StopStrings(["END"]), ["Hello E", "N", "ough"]) == ("Hello ENough", False)


def test_nothing_of_a_stop_string_is_ever_emitted_early() -> None:
    stops = StopStrings(["\n\n", "###"])
    assert stops.feed("a#") == ("", False)  # "#" may begin "###": held with the char before it
    assert stops.feed("#") == ("a", False)
    assert stops.feed("#") == ("", True)


def test_the_earliest_of_several_stop_strings_wins() -> None:
    assert feed_all(StopStrings(["cd", "b"]), ["abcdef"]) == ("a", True)


def test_token_stops_and_limit() -> None:
    stop = TokenStop(SamplingParams(stop_token_ids=(7,)), eos_token_ids=[2], max_tokens=3)
    assert stop.is_stop_token(7) and stop.is_stop_token(2) and not stop.is_stop_token(5)
    assert not stop.reached_limit(2) and stop.reached_limit(3)
    assert not TokenStop(SamplingParams(ignore_eos=True), [2], 3).is_stop_token(2)
