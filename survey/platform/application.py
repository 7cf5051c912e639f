"""The Flask class the app is made of: Flask, with the question "is this function a coroutine?"
answered once per function instead of on every request.

Flask asks :meth:`~flask.Flask.ensure_sync` of every hook and the view on every request (twelve
calls of ``inspect.iscoroutinefunction`` for a respondent's submission, each unwrapping partials and
reading code flags): 3.5% of the app's CPU for a submission in a profile of the app called directly
(cProfile, CPU time). The answer cannot change for a function Flask holds, so it is kept; Flask's
documentation names this method as the one to override.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from flask import Flask

#: Functions whose answer is kept, at most: the app's hooks, views and error handlers are a few
#: hundred; anything past this (a function made anew per call) is asked each time, as Flask does.
KEPT = 4096


class SurveyFlask(Flask):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._synchronous: dict[Callable[..., Any], Callable[..., Any]] = {}

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        found = self._synchronous.get(func) if isinstance(func, types.FunctionType) else None
        if found is not None:
            return found
        made = super().ensure_sync(func)
        if isinstance(func, types.FunctionType) and len(self._synchronous) < KEPT:
            self._synchronous[func] = made  # threads may both add it: the same value, harmless
        return made
