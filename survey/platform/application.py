"""The Flask class the app is made of: Flask, with the question "is this function a coroutine?"
answered once per function instead of on every request.

Flask asks :meth:`~flask.Flask.ensure_sync` of every hook and the view on every request (twelve
calls of ``inspect.iscoroutinefunction`` for a respondent's submission, each unwrapping partials and
reading code flags): 3.5% of the app's CPU for a submission in a profile of the app called directly
(cProfile, CPU time). The answer cannot change for a function Flask holds, so it is kept; Flask's
documentation names this method as the one to override. Kept weakly: a function made for one
request (``after_this_request``) goes with its request instead of staying for the process's life.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Callable
from typing import Any

from flask import Flask


class SurveyFlask(Flask):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The plain functions found not to be coroutines (a set of weak references: the value must not
        #: hold the function, or it would never go).
        self._synchronous: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        if func in self._synchronous:
            return func
        made = super().ensure_sync(func)
        if made is func and isinstance(func, types.FunctionType):  # not a bound method, made anew each time
            self._synchronous.add(func)
        return made
