"""The stock-torch worker: runs unmarked fuzz programs in a process without dynscalar.

Torch's own disagreements are told apart by running the program with every dynscalar mark
removed under *stock* torch.  dynscalar installs itself into Dynamo when imported, so that
run happens here, in a separate process that never imports it.  Protocol: one JSON request
per stdin line (``{"program": ..., "backend": ...}``), one JSON reply per stdout line
(``{"diffs": [[difference, ...] per call], "dynscalar_imported": false}``).

    python -m tests.fuzz.stock
"""

from __future__ import annotations

import json
import sys
import warnings


def main() -> None:
    from .runner import from_json, run_stock

    out = sys.stdout
    sys.stdout = sys.stderr  # anything a program prints must not break the protocol
    for line in sys.stdin:
        request = json.loads(line)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            diffs = run_stock(from_json(request["program"]), request["backend"])
        reply = {
            "diffs": [[m.to_json() for m in call] for call in diffs],
            "dynscalar_imported": "dynscalar" in sys.modules,
        }
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
