"""Bearer-token check for every write endpoint (token from settings `api_token`)."""
from __future__ import annotations

import secrets

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(auto_error=False, description="the API token (VERIRL_API_TOKEN)")


def require_token(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> None:
    expected = request.app.state.settings.api_token
    if credentials is None:
        raise HTTPException(401, "missing bearer token: send the header 'Authorization: Bearer <token>'",
                            headers={"WWW-Authenticate": "Bearer"})
    if not secrets.compare_digest(credentials.credentials.encode(), expected.encode()):
        raise HTTPException(401, "invalid bearer token", headers={"WWW-Authenticate": "Bearer"})


Writer = Depends(require_token)
