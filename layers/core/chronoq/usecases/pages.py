"""Listings page by page: the API's ``limit`` and ``next_token``, over the stores' pages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from chronoq.domain import pages
from chronoq.domain.errors import InvalidRequest
from chronoq.usecases.ports import Page, Position

T = TypeVar("T")


@dataclass(frozen=True)
class Listing(Generic[T]):
    """One page as the API answers it: the items, and the token of the next page (None:
    nothing more)."""

    items: list[T]
    next_token: str | None = None


@dataclass
class PageTokens:
    """Seals a store's position into a ``next_token`` for one owner and one listing (see
    chronoq.domain.pages), and opens it again."""

    #: The deployment's master secret (read on first use).
    master_secret: Callable[[], str]

    def open(self, owner: str, listing: str, token: str | None) -> Position | None:
        if token is None:
            return None
        try:
            return pages.open_token(self.master_secret(), owner, listing, token)
        except pages.BadToken:
            raise InvalidRequest(
                "next_token",
                "is not a token this listing gave you (altered, or from another list)",
            ) from None

    def listing(self, owner: str, listing: str, page: Page[T]) -> Listing[T]:
        if page.after is None:
            return Listing(page.items)
        return Listing(page.items, pages.seal(self.master_secret(), owner, listing, page.after))
