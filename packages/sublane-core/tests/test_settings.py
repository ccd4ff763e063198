from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from sublane_core import Settings, settings_help


def _settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def test_conf_defaults_match_spec_17() -> None:
    settings = _settings()
    assert settings.data_dir == Path("./data")
    assert settings.effective_database_url == "sqlite:///data/sublane.db"
    assert (settings.host, settings.port) == ("127.0.0.1", 8080)
    assert settings.admin_username is None and settings.admin_password is None
    assert settings.workspace_capacity == 128
    assert settings.member_concurrency_default == 10
    assert (settings.wait_timeout_s, settings.wait_queue_max) == (30, 100)
    assert settings.cooldown_fallback_s == 5
    assert (
        settings.model_failure_threshold,
        settings.model_failure_window_s,
        settings.model_cooldown_initial_s,
        settings.model_cooldown_max_s,
    ) == (3, 120, 10, 300)
    assert settings.sse_heartbeat_s == 10
    assert settings.stream_idle_timeout_s == 0
    assert (settings.header_timeout_s, settings.metadata_timeout_s, settings.request_timeout_s) == (
        300,
        30,
        1800,
    )
    assert settings.gateway_quota_weighted is False
    assert (settings.history_max_records, settings.history_days) == (5000, 7)


def test_conf_reads_sublane_environment_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SUBLANE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SUBLANE_WORKSPACE_CAPACITY", "7")
    monkeypatch.setenv("SUBLANE_MODEL_FAILURE_WINDOW_S", "60")
    monkeypatch.setenv("SUBLANE_GATEWAY_QUOTA_WEIGHTED", "true")
    monkeypatch.setenv("SUBLANE_ADMIN_PASSWORD", "hunter2hunter2")
    settings = _settings()
    assert settings.data_dir == tmp_path
    assert settings.effective_database_url == f"sqlite:///{tmp_path.as_posix()}/sublane.db"
    assert settings.credentials_key_path == tmp_path / "credentials.key"
    assert settings.workspace_capacity == 7
    assert settings.model_failure_window_s == 60
    assert settings.gateway_quota_weighted is True
    assert settings.admin_password is not None and "hunter2" not in repr(settings)


def test_conf_reads_dotenv_file(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("SUBLANE_PORT=9999\nSUBLANE_DATABASE_URL=sqlite:////tmp/x.db\n")
    settings = Settings(_env_file=env_file)  # type: ignore[call-arg]
    assert settings.port == 9999
    assert settings.effective_database_url == "sqlite:////tmp/x.db"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("workspace_capacity", 0),
        ("member_concurrency_default", 1001),
        ("port", 70000),
        ("sse_heartbeat_s", 0),
    ],
)
def test_conf_rejects_out_of_range_values(name: str, value: int) -> None:
    with pytest.raises(ValidationError):
        _settings(**{name: value})


def test_conf_help_lists_every_variable() -> None:
    variables = {row[0] for row in settings_help()}
    for name in (
        "SUBLANE_DATA_DIR",
        "SUBLANE_WAIT_QUEUE_MAX",
        "SUBLANE_HISTORY_DAYS",
    ):
        assert name in variables
    assert len(variables) == len(Settings.model_fields)
