"""FAIL-2: the attempts of a request that failed over, as stored and as each view shows them."""

from __future__ import annotations

from sublane_history import personal_routing, routing_explanation


def test_fail_2_attempts_are_stored_as_ids_codes_and_outcomes_only() -> None:
    stored = routing_explanation(
        {
            "rule": "uniform_rotation",
            "attempts": [
                {"account_id": 3, "outcome": "error", "error_code": "rate_limit_exceeded", "token": "sk-x"},
                {"account_id": "4", "outcome": "maybe", "error_code": "not a code!"},
                "junk",
                {"account_id": 5, "outcome": "success", "error_code": None},
            ],
        }
    )
    assert stored == {
        "rule": "uniform_rotation",
        "attempts": [
            {"account_id": 3, "outcome": "error", "error_code": "rate_limit_exceeded"},
            {"account_id": None, "outcome": "error", "error_code": "unknown_error"},
            {"account_id": 5, "outcome": "success", "error_code": None},
        ],
    }


def test_fail_2_attempts_are_bounded() -> None:
    many = [{"account_id": n, "outcome": "error", "error_code": "upstream_error"} for n in range(100)]
    stored = routing_explanation({"attempts": many})
    assert stored is not None and len(stored["attempts"]) == 17


def test_fail_2_members_see_attempts_without_account_ids() -> None:
    shown = personal_routing(
        {"rule": "uniform_rotation", "attempts": [{"account_id": 3, "outcome": "error", "error_code": "x"}]}
    )
    assert shown == {"rule": "uniform_rotation", "attempts": [{"outcome": "error", "error_code": "x"}]}
