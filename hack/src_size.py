#!/usr/bin/env python3
"""How big ``src/`` is against a base commit, with new features' code counted apart (issue 22).

Issue 22 asks that ``src/`` be smaller than at 132cbfd "for the same features". Code written since
then for a feature the base did not have cannot count against that, and code written to simplify or
fix must. Every commit since the base names its issue in its subject (``(issue 23)``,
``(issues 27, 23)``); this script adds up, per issue, the lines each commit added and removed in
``src/**/*.py`` (``git log --numstat``), and prints:

- ``wc -l`` of ``src/**/*.py`` at the base and now;
- the net lines of the commits for each feature issue, and of everything else (issue 22's own
  commits and any commit that names no feature: counted against the goal, so an untagged fix to a
  feature counts as growth);
- the size "for the same features": the base plus the net of everything that is not a feature;
- as a cross-check that does not split shared files by commit subject, the size less only the
  files that feature commits created (as they are now): a feature's code inside older files counts
  against the goal there.

Usage: ``hack/src_size.py [BASE]`` (default 132cbfd). Read-only; needs git.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

BASE = "132cbfd"
# The wave-3 features the base did not have (their issues' titles, shortened).
FEATURES = {
    21: "fine-tuning: train(), trainer and initializer programs",
    23: "Trainer v2: TrainJob, runtimes, convert",
    24: "trainop run: torchrun parity",
    25: "schedulers: Kueue, YuniKorn, queues",
    26: "deployment: image, Helm chart, cert-manager",
    27: "web view and training progress",
}
ISSUES_RE = re.compile(r"\(issues? ([0-9][0-9, ]*)\)|\bissues? ([0-9]+)\b")


def git(*args: str) -> str:
    return subprocess.run(("git", *args), check=True, capture_output=True, text=True).stdout


def issues_named(subject: str) -> set[int]:
    """The issue numbers a commit subject names: ``(issue 23)``, ``(issues 27, 23)``, ``issue 24:``."""
    found: set[int] = set()
    for group in ISSUES_RE.findall(subject):
        for part in ",".join(group).split(","):
            if part.strip().isdigit():
                found.add(int(part))
    return found


def feature_of(subject: str) -> int | None:
    """The feature a commit served, or None (a refactor, a fix, or issue 22's own work).

    A commit that names issue 22 beside a feature is issue 22's: its lines count against the goal.
    """
    named = issues_named(subject)
    if 22 in named:
        return None
    features = sorted(named & FEATURES.keys())
    return features[0] if features else None


def lines_at(rev: str) -> int:
    names = [n for n in git("ls-tree", "-r", "--name-only", rev, "src").splitlines() if n.endswith(".py")]
    return sum(git("show", f"{rev}:{name}").count("\n") for name in names)


def net_by_feature(base: str) -> tuple[dict[int | None, list[int]], dict[str, int | None], int]:
    """Per feature (None: not a feature), [added, removed] in src/**/*.py; each new file's creator; and
    the features' net lines in files that were there at the base."""
    log = git(
        "log", "--reverse", "--format=@%H %s", "--numstat", "--no-renames", f"{base}..HEAD", "--", "src"
    )
    totals: dict[int | None, list[int]] = defaultdict(lambda: [0, 0])
    created: dict[str, int | None] = {}
    feature: int | None = None
    in_old_files = 0
    at_base = set(git("ls-tree", "-r", "--name-only", base, "src").splitlines())
    for line in log.splitlines():
        if line.startswith("@"):
            feature = feature_of(line.split(" ", 1)[1] if " " in line else "")
            continue
        parts = line.split("\t")
        if len(parts) != 3 or not parts[2].endswith(".py") or not parts[0].isdigit():
            continue
        added, removed, path = int(parts[0]), int(parts[1]), parts[2]
        totals[feature][0] += added
        totals[feature][1] += removed
        if path not in created and removed == 0 and added > 0 and path not in at_base:
            created[path] = feature
        if feature is not None and path in at_base:
            in_old_files += added - removed
    return totals, created, in_old_files


def main(argv: list[str]) -> int:
    base = argv[1] if len(argv) > 1 else BASE
    before, now = lines_at(base), lines_at("HEAD")
    totals, created, in_old_files = net_by_feature(base)
    print(f"src/**/*.py at {base}: {before:,} lines; at HEAD: {now:,} lines ({now - before:+,})")
    print("\nnet lines since the base, by what the commits served (git log --numstat):")
    feature_net = 0
    for number, title in FEATURES.items():
        added, removed = totals.get(number, [0, 0])
        feature_net += added - removed
        print(f"  issue {number} {title:<52} +{added:>6,} -{removed:>6,} = {added - removed:+7,}")
    added, removed = totals.get(None, [0, 0])
    rest = added - removed
    print(f"  {'not a feature (issue 22, fixes, untagged)':<61} +{added:>6,} -{removed:>6,} = {rest:+7,}")
    same = before + rest
    verdict = "smaller" if same < before else "NOT smaller"
    print(f"\nfor the same features: {before:,} + ({rest:+,}) = {same:,} lines: {verdict} than at {base}")
    print(f"(HEAD {now:,} = that {same:,} + the features' net {feature_net:+,})")
    features_files = sorted(p for p, f in created.items() if f is not None and Path(p).exists())
    in_files = sum(Path(p).read_text().count("\n") for p in features_files)
    print(
        f"\ncross-check by files: HEAD less the {len(features_files)} files feature commits created "
        f"({in_files:,} lines now) = {now - in_files:,};\nless also the features' net lines in files that "
        f"were there at {base} ({in_old_files:+,}) = {now - in_files - in_old_files:,}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
