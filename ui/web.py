"""The dashboard's own HTTP endpoints, served next to Streamlit's by ``ui/server.py``.

Streamlit scripts cannot set cookies, let alone HTTP-only ones, so signing in and out are
plain HTTP: ``GET /_ergon/sign-in`` is a small self-contained form (no outside assets), its
``POST`` checks the name and password (:func:`flows.people.authenticate`), sets the session
cookie (:mod:`ui.session`) and sends the browser back where it was (``next``, a path on this
site only); ``POST /_ergon/sign-out`` revokes the sign-in and clears the cookie. A post from
another site is refused (its ``Origin`` must be this one).

Everything a request carries is hostile until checked, and a bad request is answered with a
status and a sentence, never a server error:

* a body over :data:`MAX_BODY` bytes is refused with 413 before it is read — on its declared
  ``Content-Length``, and while it streams when it declares none (chunked); a malformed
  ``Content-Length`` or form is a 400;
* a sign-in without a name or a password, or with a name holding control characters, is a 400
  and checks no password;
* too many failed sign-ins for a name or from an address (``ui/throttle.py``) are answered 429
  with ``Retry-After``, before the password is checked;
* a cookie that is not a token of ours is no sign-in (``ui/session.py``); an ``Origin`` that is
  not a URL is another site.
"""

from __future__ import annotations

import html
import unicodedata
from urllib.parse import parse_qs, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ui import session, throttle

SIGN_IN = "/_ergon/sign-in"
SIGN_OUT = "/_ergon/sign-out"
#: the largest body a sign-in or sign-out form may have: a name, a password and a path fit in a
#: few hundred bytes
MAX_BODY = 64 * 1024
_MAX_FIELDS = 16

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
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:  # "http://[": not a URL, so not this site
        return False
    return netloc == request.headers.get("host")


def _secure(request: Request) -> bool:
    # the scope's scheme, not request.url: building the URL parses the Host header, which may be anything
    return request.scope.get("scheme") == "https" or request.headers.get("x-forwarded-proto") == "https"


def _address(request: Request) -> str:
    """The client's address as the server determined it (see ``ui/throttle.py`` on proxies)."""
    return request.client.host if request.client and request.client.host else "unknown"


def _page(next_path: str, *, name: str = "", error: str = "", status: int = 200,
          headers: dict[str, str] | None = None) -> HTMLResponse:
    box = f'<div class="error" role="alert">{html.escape(error)}</div>' if error else ""
    return HTMLResponse(_PAGE.format(action=SIGN_IN, error=box, name=html.escape(name), next=html.escape(next_path),
                                     back=html.escape(next_path)), status_code=status,
                        headers={"Cache-Control": "no-store", "X-Frame-Options": "DENY", **(headers or {})})


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _body(request: Request) -> bytes:
    """The body, refused (413) as soon as it is known to be longer than :data:`MAX_BODY`."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not (declared.isascii() and declared.isdigit()):
            raise _BadRequest(400, "malformed Content-Length")
        if int(declared) > MAX_BODY:
            raise _BadRequest(413, f"request body too large (at most {MAX_BODY} bytes)")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():  # chunked bodies declare no length: count as they come
            size += len(chunk)
            if size > MAX_BODY:
                raise _BadRequest(413, f"request body too large (at most {MAX_BODY} bytes)")
            chunks.append(chunk)
    except ClientDisconnect:
        raise _BadRequest(400, "the request body ended early") from None
    return b"".join(chunks)


async def _form(request: Request) -> dict[str, str]:
    body = (await _body(request)).decode("utf-8", "replace")
    try:
        fields = parse_qs(body, keep_blank_values=True, max_num_fields=_MAX_FIELDS)
    except ValueError:
        raise _BadRequest(400, f"malformed form (at most {_MAX_FIELDS} fields)") from None
    return {k: v[0] for k, v in fields.items()}


def _refused(error: _BadRequest) -> Response:
    return Response(f"{error}\n", status_code=error.status, media_type="text/plain", headers={"Cache-Control": "no-store"})


async def sign_in(request: Request) -> Response:
    if request.method == "GET":
        return _page(safe_next(request.query_params.get("next")))
    if not _same_origin(request):
        return Response("sign-in refused: the form was posted from another site", status_code=403)
    try:
        form = await _form(request)
    except _BadRequest as e:
        return _refused(e)
    name, password, next_path = form.get("name", "").strip(), form.get("password", ""), safe_next(form.get("next"))
    if not name or not password:
        return _page(next_path, name=name, status=400, error="Enter a name and a password.")
    if any(unicodedata.category(c) == "Cc" for c in name):
        return _page(next_path, status=400, error="A name has no control characters.")
    address = _address(request)

    def check() -> tuple[str, int] | throttle.Refusal | None:
        from flows import people

        refusal = throttle.admit(name, address)  # before scrypt: a refused guess costs no CPU
        if refusal is not None:
            return refusal
        user = people.authenticate(name, password)  # scrypt: off the event loop
        if user is None:
            return None
        throttle.succeeded(name, address)
        return session.issue(user.name)

    issued = await run_in_threadpool(check)
    if isinstance(issued, throttle.Refusal):
        return _page(next_path, name=name, status=429, error=issued.message,
                     headers={"Retry-After": str(issued.retry_after)})
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
    try:
        form = await _form(request)
    except _BadRequest as e:
        return _refused(e)
    await run_in_threadpool(session.revoke, request.cookies.get(session.COOKIE))
    response = RedirectResponse(safe_next(form.get("next")), status_code=303)
    response.delete_cookie(session.COOKIE, path="/", httponly=True, samesite="lax", secure=_secure(request))
    return response


def routes() -> list[Route]:
    return [Route(SIGN_IN, sign_in, methods=["GET", "POST"]), Route(SIGN_OUT, sign_out, methods=["POST"])]
