"""writer calibrate: fit the judge's step weights for the model configured here.

The work is :mod:`mnemo.distill.calibrate`'s; this says what it will do, measures the first pairs
to say how long the rest will take, asks before going on (``--yes`` does not), shows progress, and
stores the weights where the daemon looks first (:func:`mnemo.distill.weights.weights_for`). It
talks to the model directly, not through the daemon, and needs no store: a running daemon can
keep its own. Ctrl-C stops it with nothing stored.
"""

from __future__ import annotations

import argparse
import sys

from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context
from mnemo.cli.progress import ProgressBar
from mnemo.cli.render import write
from mnemo.distill.calibrate import QUESTIONS_PER_PAIR, Calibrated, Calibration, Progress
from mnemo.distill.fitting import FOLDS
from mnemo.distill.pairs import shipped_pairs, spread
from mnemo.distill.weights import calibrated_dir, calibrated_path, store_calibrated
from mnemo.embed import load_embedder
from mnemo.errors import ConfigError, InputError

WARM_UP_PAIRS = 3  # asked before the estimate of the whole is given


def cmd_writer_calibrate(args: argparse.Namespace, context: Context) -> int:
    if args.limit is not None and args.limit < FOLDS:
        raise InputError(f"limit: at least {FOLDS} pairs (the fit is scored on {FOLDS} folds)")
    if not args.yes and not sys.stdin.isatty():
        raise InputError("calibration asks before it runs for long; give --yes to run it without asking")
    settings = context.settings()
    directory = calibrated_dir(settings)
    if directory is None:
        raise ConfigError("these settings name no data directory to keep calibrated weights in")
    embedder = load_embedder(settings)
    pairs = spread(shipped_pairs(), args.limit or 0)
    with Calibration(settings, pairs, embedder) as run:
        total = run.total
        write(f"calibrating how the judge reads {run.model} at {run.endpoint}:")
        write(
            f"  {total:,} labelled pairs, {total * QUESTIONS_PER_PAIR:,} questions ({QUESTIONS_PER_PAIR} a "
            f"pair), with the embedder {embedder.model_id if embedder is not None else 'none'}"
        )
        write(f"  the weights will be stored in {calibrated_path(directory, run.model)}")
        run.check_logprobs()
        bar = ProgressBar(sys.stderr, "calibrating")

        def show(progress: Progress) -> None:
            left = progress.left_s
            detail = f"{progress.done:,}/{progress.total:,} pairs"
            bar.show(
                progress.done, progress.total, detail + ("" if left is None else f"  ~{_span(left)} left")
            )

        try:
            run.ask(show, until=WARM_UP_PAIRS)
            bar.close()
            asked = min(WARM_UP_PAIRS, total)
            if asked < total:
                pace_s = run.seconds_asking / asked
                write(
                    f"  about {_span(pace_s * (total - asked))} for the {total - asked:,} pairs left "
                    f"({pace_s:.1f} s a pair on the first {asked})"
                )
                if not args.yes and not _confirmed():
                    write("stopped: nothing stored")
                    return EXIT_ERROR
                run.ask(show)
                bar.close()
            calibrated = run.fit()
        except KeyboardInterrupt:
            bar.close()
            write("calibration stopped: nothing stored", sys.stderr)
            raise
    path = store_calibrated(calibrated.weights, directory)
    _report(calibrated)
    write(f"stored in {path}; the daemon judges by them from its next start (mnemo daemon stop)")
    return EXIT_OK


def _confirmed() -> bool:
    try:
        return input("  go on? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _report(calibrated: Calibrated) -> None:
    write(
        f"asked {calibrated.pairs:,} pairs in {_span(calibrated.seconds)} "
        f"({calibrated.calls:,} calls, {calibrated.tokens:,} tokens)"
    )
    write(
        f"  relation accuracy of the fitted steps, {FOLDS}-fold held out: "
        f"{calibrated.held_out_accuracy:.3f} (temperature {calibrated.temperature:.2f})"
    )
    write(f"  the model's own four-way answer, by word, uncalibrated: {calibrated.answered_accuracy:.3f}")
    if calibrated.unread_answers:
        write(
            f"  {calibrated.unread_answers:,} answers named no option among the model's likeliest tokens: "
            "read from the word it wrote, as the judge would"
        )


def _span(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 90 else f"{minutes // 60} h {minutes % 60:02d} min"
