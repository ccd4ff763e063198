from __future__ import annotations

import pytest

from sublane_core import ERROR_CATALOGUE, SubLaneError

SPEC_CODES = {
    "workspace_busy": 429,
    "member_busy": 429,
    "member_rate_limited": 429,
    "account_queue_full": 429,
    "account_wait_timeout": 429,
    "account_cooling": 429,
    "model_cooling": 429,
    "model_rate_limited": 429,
    "quota_exhausted": 403,
    "account_refresh_failed": 503,
    "upstream_forbidden": 403,
    "invalid_api_key": 401,
    "invalid_credentials": 401,
    "token_budget_exceeded": 429,
    "metered_budget_exhausted": 429,  # PAID-3
    "unpriced_model": 400,  # PAID-3
}


def test_catalogue_holds_every_code_the_spec_names_with_its_status() -> None:
    for code, status in SPEC_CODES.items():
        assert ERROR_CATALOGUE[code].status == status, code


def test_error_renders_the_management_shape() -> None:
    error = SubLaneError("account_cooling", retry_after=4.2)
    assert error.status == 429
    assert error.retry_after == 4.2
    assert error.body() == {
        "error": {"code": "account_cooling", "message": ERROR_CATALOGUE["account_cooling"].message}
    }


def test_unknown_codes_are_refused() -> None:
    with pytest.raises(KeyError):
        SubLaneError("made_up_code")


def test_team_4_an_error_carries_extra_headers_with_lower_case_names() -> None:
    error = SubLaneError("token_budget_exceeded", retry_after=30, headers={"X-Token-Budget-Id": "7"})
    assert error.headers == {"x-token-budget-id": "7"}
    assert SubLaneError("member_busy").headers == {}
