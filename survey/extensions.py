"""Flask extensions, created unbound so the application factory can attach them."""

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)
login_manager = LoginManager()
csrf = CSRFProtect()

#: Counters live in this process's memory only ("memory://"): an address is held for the length of
#: a rate-limit window and never written to disk or to the database.
limiter = Limiter(key_func=get_remote_address, storage_uri="memory://", headers_enabled=False)
