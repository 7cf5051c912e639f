"""Flask extensions, created unbound so the application factory can attach them."""

from flask_babel import Babel
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect

from survey.domain.base import Base

#: Flask-SQLAlchemy over the domain's own declarative base: one metadata, one registry of models.
db = SQLAlchemy(model_class=Base)
login_manager = LoginManager()
csrf = CSRFProtect()
#: Translations (gettext): every sentence is English for now; messages.pot is what a translation
#: starts from (`make messages`).
babel = Babel()
#: The schema is created and changed only by the migrations in survey/migrations (Alembic).
migrate = Migrate()
