"""Every test class of sqlalchemy.testing.suite; requirements.py decides which apply to sqlkv."""

from sqlalchemy.testing.suite import *  # noqa: F401,F403
