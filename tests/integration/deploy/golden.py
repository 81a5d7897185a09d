"""The chart's golden renders: `helm template` of charts/trainop with each values file of VALUES, as
committed under golden/. ``python tests/integration/deploy/golden.py --write`` (make chart-golden)
re-renders them; test_chart.py compares."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from trainop.testing.deploy import CHART, find_helm

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
RELEASE, NAMESPACE = "trainop", "kubeflow"
# golden file stem -> values file (None: the chart's defaults)
VALUES: dict[str, Path | None] = {
    "default": None,
    "everything": HERE / "values-everything.yaml",
    "cert-manager": HERE / "values-cert-manager.yaml",
}


def render(values: Path | None = None, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(find_helm()), "template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    if values is not None:
        cmd += ["--values", str(values)]
    return subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=120)


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: golden.py --write", file=sys.stderr)
        return 2
    for stem, values in VALUES.items():
        got = render(values)
        if got.returncode != 0:
            print(got.stderr, file=sys.stderr)
            return 1
        (GOLDEN / f"{stem}.yaml").write_text(got.stdout)
        print(f"wrote {GOLDEN / f'{stem}.yaml'} ({got.stdout.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
