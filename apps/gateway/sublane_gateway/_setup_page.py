"""The one page that must exist before any web view: creating the first admin.

It reads the one-time token from the URL fragment (never sent to the server in a request line, so
it stays out of access logs) and posts it with the chosen name and password to ``/api/auth/setup``.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter(include_in_schema=False)

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>SubLane set-up</title>
<style>body{font:16px system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem}
label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.5rem;box-sizing:border-box}
button{margin-top:1rem;padding:.6rem 1.2rem}#msg{margin-top:1rem}</style></head>
<body><main><h1>Create the first admin</h1>
<form id="f"><label for="u">Username</label><input id="u" autocomplete="username" required>
<label for="p">Password (8 characters or more)</label>
<input id="p" type="password" autocomplete="new-password" minlength="8" required>
<button type="submit">Create admin</button></form><p id="msg" role="status"></p>
<p id="terms"><small>Using consumer subscriptions through a shared gateway may be against a
provider's terms: you, the operator, decide whether to do it. Metered (API-key) accounts are the
way to stay within them: SubLane pools API keys too, alone or as overflow behind the
subscriptions.</small></p></main>
<script>
const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  const r = await fetch("/api/auth/setup", {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({token, username: document.getElementById("u").value,
                          password: document.getElementById("p").value})});
  const body = await r.json().catch(() => ({}));
  document.getElementById("msg").textContent = r.ok
    ? "Admin created and signed in." : (body.error && body.error.message) || "Set-up failed.";
});
</script></body></html>"""


@router.get("/setup", response_class=HTMLResponse)
def setup_page() -> str:
    """The first-admin form."""
    return _PAGE
