"""``trainop operator``: forwards its arguments to ``python -m trainop.operator`` (flags of §6.4).

Registered from cli/main.py with one line: ``register(app)``. The operator parses its own Go-style
flags, so typer only passes them through.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command(
        "operator",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
        help="Run the Kubernetes operator (a drop-in for the Kubeflow Training Operator); --help lists "
        "its flags.",
    )
    def operator(ctx: typer.Context) -> None:
        import gc

        from trainop.operator.__main__ import main

        gc.enable()  # paused during start-up (trainop/cli/__init__.py); the operator runs for long
        raise typer.Exit(main(list(ctx.args)))
