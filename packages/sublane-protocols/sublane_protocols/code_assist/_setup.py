"""The answers of Code Assist's set-up and read methods, from what the gateway knows.

A SubLane key stands for a Google account with a current tier and a project: the clients read
``currentTier`` and ``cloudaicompanionProject`` from ``:loadCodeAssist`` and go on, so
``:onboardUser`` is never needed (it answers a finished operation anyway). The project id is the
gateway's own stable name for the key; generation calls may send any project, and none is checked.
The quota reads (the Gemini CLI's ``:retrieveUserQuota`` buckets, Antigravity's
``:fetchAvailableModels`` models) describe the key's pool; the other reads answer "nothing set"
(no experiments, no admin controls, no data-collection opt-in) and metrics are accepted and dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

#: The tier every key has: the Gemini CLI's "standard" tier id (its free tier shows a privacy
#: notice and its legacy tier asks for a Google Cloud project).
TIER_ID = "standard-tier"
TIER = {
    "id": TIER_ID,
    "name": "SubLane",
    "description": "Models served by the SubLane pool of your key's group.",
    "userDefinedCloudaicompanionProject": False,
    "hasOnboardedPreviously": True,
}
#: The operation name ``:onboardUser`` answers (already done).
ONBOARD_OPERATION = "operations/sublane-onboarded"


def key_project(key_id: int) -> str:
    """The stable project id of a SubLane key (a string id, as the clients require)."""
    return f"sublane-key-{key_id}"


def load_code_assist_answer(project: str) -> dict[str, Any]:
    return {
        "currentTier": dict(TIER),
        "allowedTiers": [dict(TIER, isDefault=True)],
        "cloudaicompanionProject": project,
        "gcpManaged": False,
    }


def onboard_answer(project: str) -> dict[str, Any]:
    """A finished long-running operation holding the project."""
    return {
        "name": ONBOARD_OPERATION,
        "done": True,
        "response": {"cloudaicompanionProject": {"id": project, "name": project}},
    }


@dataclass(frozen=True, slots=True)
class ModelRoom:
    """What is left of a model's pool: the fraction (0–1, ``None`` unknown) and the soonest reset."""

    remaining_fraction: float | None
    reset_at: float | None


def _time(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quota(room: ModelRoom) -> dict[str, Any]:
    quota: dict[str, Any] = {}
    if room.remaining_fraction is not None:
        quota["remainingFraction"] = round(room.remaining_fraction, 4)
    if room.reset_at is not None:
        quota["resetTime"] = _time(room.reset_at)
    return quota


def user_quota_answer(models: Mapping[str, ModelRoom]) -> dict[str, Any]:
    """``:retrieveUserQuota``: one request bucket per model (the Gemini CLI skips a bucket without
    ``remainingFraction``, so an unknown room is left out of the bucket, not guessed)."""
    return {
        "buckets": [
            {"modelId": model, "tokenType": "REQUESTS", **_quota(room)} for model, room in models.items()
        ]
    }


def available_models_answer(models: Mapping[str, ModelRoom]) -> dict[str, Any]:
    """``:fetchAvailableModels``: the models keyed by id, each with its ``quotaInfo``."""
    return {
        "models": {model: {"displayName": model, "quotaInfo": _quota(room)} for model, room in models.items()}
    }


#: The answers of the reads that describe nothing SubLane has.
EMPTY_ANSWERS: Mapping[str, Mapping[str, Any]] = {
    "listExperiments": {"experimentIds": [], "flags": []},
    "fetchAdminControls": {"adminControlsApplicable": False},
    "getCodeAssistGlobalUserSetting": {"freeTierDataCollectionOptin": False},
    "setCodeAssistGlobalUserSetting": {"freeTierDataCollectionOptin": False},
    "recordCodeAssistMetrics": {},
    "recordClientEvent": {},
}
