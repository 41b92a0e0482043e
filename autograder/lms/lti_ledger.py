"""What `lms push` has sent: per line item and LMS user, the score the platform took. Written after each score the
platform accepts (a new file moved into place), so a run cut off halfway loses nothing, and the next run sends only
what is not there yet or has changed."""
from __future__ import annotations

import json
import os
from pathlib import Path

KEPT = ("scoreGiven", "scoreMaximum", "activityProgress", "gradingProgress", "comment")


def _same(score: dict) -> dict:
    return {k: score.get(k) for k in KEPT}


class Ledger:
    def __init__(self, path: Path):
        self.path = path
        try:
            self.sent = json.loads(path.read_text()) if path.exists() else {}
        except json.JSONDecodeError:
            raise SystemExit(f"{path} is not the JSON `lms push` writes: move it aside (the next push then sends "
                             "every score again, which the LMS takes as the same scores) and run again.") from None

    def already(self, line_item: str, score: dict) -> bool:
        return _same(self.sent.get(line_item, {}).get(score["userId"], {})) == _same(score)

    def record(self, line_item: str, score: dict) -> None:
        self.sent.setdefault(line_item, {})[score["userId"]] = score
        self._save()

    def forget(self, line_item: str, user_ids: list[str]) -> None:
        """Count these users' scores as not sent (the LMS does not hold them as sent): the next run sends them."""
        for user_id in user_ids:
            self.sent.get(line_item, {}).pop(user_id, None)
        self._save()

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = self.path.with_name(self.path.name + ".new")
        fresh.write_text(json.dumps(self.sent, indent=1, sort_keys=True))
        os.replace(fresh, self.path)
