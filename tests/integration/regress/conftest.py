"""The regression runner's fixture: a throwaway git repository with a fake benchmark and a fake session."""

from tests.fixtures.regress import regress_repo  # noqa: F401
