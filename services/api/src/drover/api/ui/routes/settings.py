"""/ui/theme: light, dark or the system's, kept in a cookie (the page's toggle sets it from
script; this form is the same without script)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from drover.api.ui.csrf import CsrfChecked
from drover.api.ui.forms import fields
from drover.api.ui.render import THEME_COOKIE, THEMES, back_to

router = APIRouter()


@router.post("/ui/theme", include_in_schema=False)
async def theme(request: Request, _c: CsrfChecked) -> RedirectResponse:
    theme = (await fields(request)).get("theme", "")
    response = RedirectResponse(back_to(request, "/ui/", "/ui/"), status_code=303)
    if theme in THEMES:
        response.set_cookie(THEME_COOKIE, theme, samesite="lax", path="/", max_age=365 * 86400)
    else:
        response.delete_cookie(THEME_COOKIE, path="/")
    return response
