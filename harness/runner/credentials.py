"""Whether Modal's client will find credentials, decided the way the pinned client decides (modal/config.py
and modal/client.py of locks/modal.txt's release), without importing it and without the network.

The client reads each setting from the environment variable MODAL_<KEY> when it is set (even to ""), else
from the active profile of its config file (MODAL_CONFIG_PATH, default ~/.modal.toml). The active profile
is MODAL_PROFILE, else the one marked `active = true`, else "default"; with several profiles and none
marked active (and no MODAL_PROFILE) the client refuses to start. It then takes one of two kinds:
    a token       token_id and token_secret (`modal token new` writes them)
    OAuth         oauth_refresh_token, oauth_client_id and exactly one of oauth_client_secret or
                  oauth_jwt_key (what third-party integrations inject)
never both. Whether the credentials are still valid shows only on the first call (AuthError).
tests/test_runner_modal_client.py checks this against the installed client on every case below.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

TOKEN = ("token_id", "token_secret")
OAUTH = ("oauth_refresh_token", "oauth_client_id", "oauth_client_secret", "oauth_jwt_key")
TOKEN_HINT = ("not authenticated with Modal: run `modal token new` (or set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, "
              "or an integration's MODAL_OAUTH_* credentials)")


def config_path(env: dict) -> Path:
    return Path(env.get("MODAL_CONFIG_PATH") or Path.home() / ".modal.toml")


def read_config(path: Path) -> tuple[dict, str | None]:
    """(the profiles, a problem): a missing file is no profiles; one the client cannot read is a problem."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}, None
    except OSError as e:
        return {}, f"cannot read Modal's config file {path}: {e.strerror}"
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return {}, f"Modal's config file {path} is not valid TOML: {e}"
    if not all(isinstance(v, dict) for v in config.values()):
        return {}, f"Modal's config file {path}: every entry must be a [profile] section"
    return config, None


def active_profile(config: dict, env: dict, path: Path) -> tuple[str, str | None]:
    """(the profile the client reads, a problem)."""
    active = [name for name, values in config.items() if values.get("active", False) is True]
    if len(active) > 1:
        return active[0], (f"more than one Modal profile is active in {path} ({', '.join(active)}): "
                           "run `modal profile activate NAME`")
    profile = env.get("MODAL_PROFILE") or (active[0] if active else "default")
    if len(config) > 1 and not active and profile == "default":
        return profile, (f"no Modal profile is active in {path} (profiles: {', '.join(config)}): run "
                         "`modal profile activate NAME` or set MODAL_PROFILE")
    return profile, None


def problem(env: dict | None = None) -> str | None:
    """None when the client will find a complete set of credentials; else one line saying what to do."""
    env = os.environ if env is None else env
    path = config_path(env)
    config, trouble = read_config(path)
    if trouble:
        return trouble
    profile, trouble = active_profile(config, env, path)
    if trouble:
        return trouble
    section = config.get(profile, {})

    def setting(key: str):
        name = f"MODAL_{key.upper()}"
        return env[name] if name in env else section.get(key)

    token = {k: setting(k) for k in TOKEN}
    oauth = {k: setting(k) for k in OAUTH}
    if any(token.values()) and any(oauth.values()):
        return (f"both a Modal token and OAuth credentials are configured (profile {profile!r} or MODAL_* "
                "variables): Modal's client accepts one kind; remove the other")
    if any(oauth.values()):
        missing = [f"MODAL_{k.upper()}" for k in OAUTH[:2] if not oauth[k]]
        if bool(oauth["oauth_client_secret"]) == bool(oauth["oauth_jwt_key"]):
            missing.append("exactly one of MODAL_OAUTH_CLIENT_SECRET or MODAL_OAUTH_JWT_KEY")
        return f"incomplete Modal OAuth credentials: need {' and '.join(missing)}" if missing else None
    if all(token.values()):
        return None
    if env.get("MODAL_PROFILE") and profile not in config:
        return f"Modal profile {profile!r} (MODAL_PROFILE) is not in {path}: run `modal token new --profile {profile}`"
    return TOKEN_HINT
