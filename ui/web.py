"""The dashboard's own HTTP endpoints, served next to Streamlit's by ``ui/server.py``.

Streamlit scripts cannot set cookies, let alone HTTP-only ones, so signing in and out are
plain HTTP: ``GET /_ergon/sign-in`` is a small self-contained form (no outside assets), its
``POST`` checks the name and password (:func:`flows.people.authenticate`), sets the session
cookie (:mod:`ui.session`) and sends the browser back where it was (``next``, a path on this
site only); ``POST /_ergon/sign-out`` revokes the sign-in and clears the cookie. A post from
another site is refused (its ``Origin`` must be this one).
"""

from __future__ import annotations

import html
from urllib.parse import parse_qs, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ui import session

SIGN_IN = "/_ergon/sign-in"
SIGN_OUT = "/_ergon/sign-out"

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · Ergon</title>
<style>
 body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #f6f7f9; color: #1f2328;
        display: flex; min-height: 100vh; align-items: center; justify-content: center; margin: 0; }}
 form {{ background: #fff; padding: 2rem 2.25rem; border-radius: 10px; box-shadow: 0 1px 4px rgba(0,0,0,.12);
        width: 20rem; }}
 h1 {{ font-size: 1.35rem; margin: 0 0 .25rem; }} p {{ margin: 0 0 1.25rem; color: #59636e; font-size: .9rem; }}
 label {{ display: block; font-size: .85rem; margin: .75rem 0 .25rem; }}
 input {{ width: 100%; box-sizing: border-box; padding: .5rem .6rem; border: 1px solid #c9ced6; border-radius: 6px;
         font-size: 1rem; }}
 button {{ margin-top: 1.25rem; width: 100%; padding: .55rem; border: 0; border-radius: 6px; background: #1f6feb;
          color: #fff; font-size: 1rem; cursor: pointer; }}
 .error {{ color: #b42318; background: #fef3f2; padding: .5rem .6rem; border-radius: 6px; font-size: .85rem; }}
 a {{ color: #1f6feb; font-size: .85rem; }}
</style></head>
<body><form method="post" action="{action}">
 <h1>Sign in to Ergon</h1><p>Approvers and operators: the people of <code>ergon users</code>.</p>
 {error}
 <label for="name">Name</label><input id="name" name="name" autocomplete="username" value="{name}" required autofocus>
 <label for="password">Password</label>
 <input id="password" name="password" type="password" autocomplete="current-password" required>
 <input type="hidden" name="next" value="{next}">
 <button type="submit">Sign in</button>
 <p style="margin-top:1rem"><a href="{back}">Back to the dashboard</a></p>
</form></body></html>
"""


def safe_next(value: str | None) -> str:
    """A path on this site to go back to (never another site: ``//host``, ``/\\host``, schemes)."""
    value = (value or "").strip()
    if not value.startswith("/") or value.startswith(("//", "/\\")) or urlsplit(value).netloc:
        return "/"
    return value


def _same_origin(request: Request) -> bool:
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None  # a form posted from a sandboxed frame or a file says "null"
    return urlsplit(origin).netloc == request.headers.get("host")


def _secure(request: Request) -> bool:
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"


def _page(next_path: str, *, name: str = "", error: str = "", status: int = 200) -> HTMLResponse:
    box = f'<div class="error" role="alert">{html.escape(error)}</div>' if error else ""
    return HTMLResponse(_PAGE.format(action=SIGN_IN, error=box, name=html.escape(name), next=html.escape(next_path),
                                     back=html.escape(next_path)), status_code=status,
                        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY"})


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}


async def sign_in(request: Request) -> Response:
    if request.method == "GET":
        return _page(safe_next(request.query_params.get("next")))
    if not _same_origin(request):
        return Response("sign-in refused: the form was posted from another site", status_code=403)
    form = await _form(request)
    name, password, next_path = form.get("name", "").strip(), form.get("password", ""), safe_next(form.get("next"))

    def check() -> tuple[str, int] | None:
        from flows import people

        user = people.authenticate(name, password)  # scrypt: off the event loop
        return session.issue(user.name) if user is not None else None

    issued = await run_in_threadpool(check)
    if issued is None:
        return _page(next_path, name=name, status=401,
                     error="Wrong name or password (an admin sets one with `ergon users add NAME --password-stdin`).")
    token, max_age = issued
    response = RedirectResponse(next_path, status_code=303)
    response.set_cookie(session.COOKIE, token, max_age=max_age, path="/", httponly=True, samesite="lax",
                        secure=_secure(request))
    return response


async def sign_out(request: Request) -> Response:
    if not _same_origin(request):
        return Response("sign-out refused: the form was posted from another site", status_code=403)
    form = await _form(request)
    await run_in_threadpool(session.revoke, request.cookies.get(session.COOKIE))
    response = RedirectResponse(safe_next(form.get("next")), status_code=303)
    response.delete_cookie(session.COOKIE, path="/", httponly=True, samesite="lax", secure=_secure(request))
    return response


def routes() -> list[Route]:
    return [Route(SIGN_IN, sign_in, methods=["GET", "POST"]), Route(SIGN_OUT, sign_out, methods=["POST"])]
