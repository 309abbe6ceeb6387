"""The compaction item `POST /v1/responses/compact` answers with, and how a later request's
compaction item reaches the model. OpenAI's holds the conversation's state encrypted, for
its own servers to read; the proxy's holds the summary the upstream model wrote of the
conversation, behind a marker that tells it from OpenAI's (whose state no other server can
read). Clients keep `encrypted_content` as it came and send it back; nothing in it is secret
from the client whose conversation it summarises."""

from __future__ import annotations

from typing import Any

from ..exchange import invalid
from .events import new_id
from .store import Item

COMPACTION = "compaction"
MARKER = "toolcall-proxy summary v1\n"
# What the model reads in the summary's place: a user message, as chat templates have no
# role for it and the model wrote it for itself to go on from.
SUMMARY_LEAD = "A summary of the conversation before this point, which was compacted:\n\n"


def compaction_item(summary: str) -> Item:
    return {"id": new_id("cmp"), "type": COMPACTION, "encrypted_content": MARKER + summary}


def checked_compaction(item: Item, param: str) -> None:
    """A 400 unless `item` is a compaction item the proxy made."""
    content = item.get("encrypted_content")
    if not isinstance(content, str) or not content.startswith(MARKER):
        raise invalid(
            "a compaction item must be one this proxy's POST /v1/responses/compact made: "
            "another server's holds state only that server can read",
            f"{param}.encrypted_content",
        )


def summary_message(item: Item) -> dict[str, Any]:
    """A checked compaction item as the chat message the model reads."""
    summary = item["encrypted_content"][len(MARKER) :]
    return {"role": "user", "content": SUMMARY_LEAD + summary}
